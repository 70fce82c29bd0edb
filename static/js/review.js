// The review card of a finished game (and of the replay page): the result, step buttons and
// keys, the moves, each side's first mistake, and a link to the replay.
import { modified, onPage, typing } from "./board.js";
import { moveWords, number as formatted, squareWords, t } from "./squares.js";

/** Copy a read-only field's text; without a clipboard (plain http), select it. True if copied. */
export async function copyField(input) {
  try {
    await navigator.clipboard.writeText(input.value);
    return true;
  } catch {
    input.focus();
    input.select();
    return false;
  }
}

const KEYS = { ArrowLeft: "back", ArrowRight: "forward", Home: "first", End: "last" };
// Right to left, "previous" is the button on the right (its icon flipped, rtl.css): the arrow
// keys follow the buttons.
const RTL_KEYS = { ...KEYS, ArrowLeft: "forward", ArrowRight: "back" };

/**
 * Where the replay stands, in words: "Move 3 of 7: X top left". `sides`: who made each move.
 */
export function captionWords(ply, moves, sides, variant) {
  const total = moves.length;
  // Translators: {total} a number
  if (ply === 0) return t("Start · move 0 of {total}", { total: formatted(total) });
  if (ply === total) {
    return t("Final position · move {number} of {total}",
      // Translators: {number} a move's number; {total} a number
      { number: formatted(total), total: formatted(total) });
  }
  return t("Move {number} of {total}: {move}", { number: formatted(ply), total: formatted(total),
    // Translators: {number} a move's number; {total} a number; {move} a move ("X top left")
    move: moveWords(sides[ply - 1], moves[ply - 1], variant) });
}

function moveItem(ply, cell, side, variant) {
  const item = document.createElement("li");
  item.className = "move";
  item.dataset.ply = String(ply + 1);
  item.dataset.side = side;
  const number = document.createElement("span");
  number.className = "move-number";
  number.textContent = `${formatted(ply + 1)}.`;
  const mark = document.createElement("span");
  mark.className = "move-side";
  mark.textContent = side;
  const numbered = document.createElement("span");
  numbered.className = "move-cell"; // shown with "Show cell numbers" (replays)
  numbered.textContent = ` · ${formatted(cell)}`;
  item.append(number, " ", mark, ` ${squareWords(cell, variant)}`, numbered);
  return item;
}

function flagItem(item) {
  if (item.classList.contains("is-mistake")) return;
  item.classList.add("is-mistake");
  const flag = document.createElement("span");
  flag.className = "move-flag";
  flag.textContent = t("mistake");
  item.append(" ", flag);
}

/**
 * Whether a key pressed on `target` belongs to the control that has it rather than to the
 * review: a text field or a select (typing), the tabs (arrows go along them), a dialog.
 */
function keptBy(target) {
  return typing(target) || Boolean(target?.closest?.("[role=tablist], dialog"));
}

/**
 * Wire the card in `root`. `onStep(to)`: "first", "back", "forward", "last". `onShow(side)`:
 * show that side's mistake on the board. `onTry(side)`: play on from before it. While the card
 * is on screen, ← → Home End step through the moves wherever the focus is, as the card says.
 */
export function createReview(root, { onStep, onShow, onTry }) {
  const part = (name) => root.querySelector(`[data-review="${name}"]`);
  const summary = part("summary");
  const caption = part("caption");
  const list = part("moves");
  const link = part("link");
  const feedback = part("feedback");
  const steps = Array.from(root.querySelectorAll("[data-step]"));
  const blocks = Object.fromEntries(
    Array.from(root.querySelectorAll(".mistake")).map((block) => [block.dataset.side, block]));

  for (const button of steps) {
    button.addEventListener("click", () => {
      if (button.getAttribute("aria-disabled") !== "true") onStep(button.dataset.step);
    });
  }

  for (const [side, block] of Object.entries(blocks)) {
    block.querySelector('[data-review="show"]')?.addEventListener("click", () => onShow(side));
    block.querySelector('[data-review="try"]')?.addEventListener("click", () => onTry(side));
  }

  part("copy").addEventListener("click", async () => {
    feedback.textContent = await copyField(link)
      ? t("Link copied")
      : t("Link selected — copy it with Ctrl+C, or long-press on a phone");
  });
  link.addEventListener("focus", () => link.select());

  // Captured before the board's own arrow keys: once a game is over there is nothing to play,
  // and ← on a square steps back through the game, as the card says.
  document.addEventListener("keydown", (event) => {
    if (root.closest("[hidden]") || modified(event) || keptBy(event.target)) return;
    if (event.key === "Escape" && (root.contains(event.target) || onPage(event.target))) {
      onStep("last"); // leave the replay: back to how the game ended
      return;
    }
    const to = (document.documentElement.dir === "rtl" ? RTL_KEYS : KEYS)[event.key];
    if (!to) return;
    event.preventDefault();
    event.stopPropagation();
    onStep(to);
  }, { capture: true });

  let sides = []; // who made each move of the game on the card
  let variant = "classic"; // of the game on the card: how its cells are named

  let lessons = null; // lessons.js (the mistakes in words): asked for once a review opens

  function setMistake(side, mistake, who, mistakeWords = null) {
    const block = blocks[side];
    block.querySelector('[data-review="who"]').textContent = who ? `${side} · ${who}` : side;
    block.querySelector('[data-review="text"]').textContent = mistake ? mistakeWords(mistake)
      : t("No mistakes");
    block.querySelector(".mistake-actions").hidden = !mistake;
  }

  return {
    /**
     * Show the card for a finished game: `moves` and the side that made each (`sides`, as the
     * final board shows them), the `summary` line, names of the sides, the link to its replay.
     * The list is built again only for another game than the one shown.
     */
    open({ moves, sides: movers, summary: line, names = {}, href, variant: kind = "classic" }) {
      const key = moves.join(".");
      const fresh = root.dataset.key !== key;
      lessons ??= import("./lessons.js");
      root.dataset.key = key;
      sides = movers;
      variant = kind;
      root.dataset.variant = kind;
      // Ultimate is not solved: nobody can say which move was a mistake.
      for (const name of ["mistakes-title", "mistakes"]) part(name).hidden = kind === "ultimate";
      part("unjudged").hidden = kind !== "ultimate";
      summary.textContent = line;
      link.value = href;
      part("share").hidden = !href; // a game won by a claim before any move has nothing to show
      if (fresh) {
        list.replaceChildren(...moves.map((cell, ply) => moveItem(ply, cell, sides[ply], variant)));
        for (const side of ["X", "O"]) {
          setMistake(side, null, names[side]);
          blocks[side].querySelector('[data-review="text"]').textContent = t("Looking for mistakes…");
        }
        feedback.textContent = "";
        caption.textContent = captionWords(moves.length, moves, sides, variant);
      }
      root.hidden = false;
    },

    /** Mark each side's first mistake (the `review` of the analyze answer). */
    fill(review, names = {}) {
      const key = root.dataset.key;
      lessons ??= import("./lessons.js");
      lessons.then(({ mistakeWords }) => {
        if (root.dataset.key !== key) return; // another game's card by now
        for (const side of ["X", "O"]) {
          const mistake = review[side];
          setMistake(side, mistake, names[side], mistakeWords);
          if (mistake) flagItem(list.querySelector(`[data-ply="${mistake.ply + 1}"]`));
        }
      });
    },

    /** Say the review could not be loaded (it is asked again on the next change). */
    failed() {
      for (const side of ["X", "O"]) {
        blocks[side].querySelector('[data-review="text"]').textContent = t("Could not load the review");
      }
    },

    /** The board shows the position after `ply` of `moves`; `ready`: positions are known. */
    at(ply, moves, ready = true) {
      const total = moves.length;
      const words = captionWords(ply, moves, sides, variant);
      if (caption.textContent !== words) caption.textContent = words; // a live region: say it once
      for (const item of list.children) {
        if (Number(item.dataset.ply) === ply) item.setAttribute("aria-current", "step");
        else item.removeAttribute("aria-current");
      }
      for (const button of steps) {
        const back = button.dataset.step === "first" || button.dataset.step === "back";
        const stuck = !ready || (back ? ply === 0 : ply === total);
        button.setAttribute("aria-disabled", String(stuck));
      }
      root.classList.toggle("is-replaying", ply !== total);
    },

    close() {
      root.hidden = true;
      root.classList.remove("is-replaying");
    },
  };
}
