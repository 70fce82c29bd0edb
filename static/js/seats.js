// The two seats above the board (names, whose turn, who won, who is online) and the line under
// them (the running score, how many watch). The player's own name is edited on its seat.
import { scoreWords } from "./results.js";
import { isBot, isolate, nameAt, seatName } from "./words.js";
import { t, tn } from "./squares.js";

const PRESENCE_WORDS = { online: t("online"), offline: t("away"), open: t("seat open") };

/**
 * Wire the chips ({X, O}: .player elements), the series line and its two parts.
 * `onRename(name)` -> Promise<string | null>: the name the server kept, or null if refused.
 */
export function createSeats({ chips, series, score, watching }, { onRename }) {
  let shown = null; // the view on screen
  let editing = null; // the side whose name is being edited

  const part = (side, name) => chips[side].querySelector(`.player-${name}`);

  for (const [side, chip] of Object.entries(chips)) {
    const input = part(side, "input");
    part(side, "edit").addEventListener("click", () => edit(side));
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        save(side);
      } else if (event.key === "Escape") {
        event.preventDefault();
        stop(side, { focus: true });
      }
    });
    // Tapping elsewhere on a phone keeps what was typed, as a keyboard's Done would.
    input.addEventListener("blur", () => {
      if (editing === side) save(side, { focus: false });
    });
    chip.dataset.editing = "false";
  }

  /** The name the server has for `side`, for the field. */
  function ownName(side) {
    return shown ? nameAt(shown, side) ?? "" : "";
  }

  function edit(side) {
    if (!shown || editing) return;
    editing = side;
    const input = part(side, "input");
    input.value = ownName(side);
    chips[side].dataset.editing = "true";
    input.hidden = false;
    part(side, "name").hidden = true;
    part(side, "edit").hidden = true;
    input.focus();
    input.select();
  }

  function stop(side, { focus = false } = {}) {
    if (editing !== side) return;
    editing = null;
    chips[side].dataset.editing = "false";
    const input = part(side, "input");
    input.hidden = true;
    part(side, "name").hidden = false;
    if (shown) render(shown);
    if (focus && !part(side, "edit").hidden) part(side, "edit").focus();
  }

  async function save(side, { focus = true } = {}) {
    const name = part(side, "input").value.trim();
    if (!name || name === ownName(side)) {
      stop(side, { focus });
      return;
    }
    stop(side, { focus });
    const kept = await onRename(name);
    // Until the game's own push arrives, show what the server answered.
    if (kept && shown) render({ ...shown, names: { ...shown.names, [side]: kept } }, { keep: true });
  }

  /** Show the seats of `game` (a view: its `you` says which seat is this page's). */
  function render(game, { keep = false } = {}) {
    if (!keep) shown = game;
    const { you } = game;
    const friendGame = game.mode === "friend";
    for (const [side, chip] of Object.entries(chips)) {
      const name = seatName(game, side, you);
      part(side, "name").textContent = name;
      let presence = "";
      if (friendGame) {
        if (game.seats[side] === "open") presence = "open";
        else presence = game.online[side] ? "online" : "offline";
      }
      chip.dataset.presence = presence;
      // Said, not shown: whose seat this is, and who is online.
      const bot = isBot(game, side);
      chip.classList.toggle("is-bot", bot);
      const words = [side === you && nameAt(game, side) ? t("you") : "", bot ? t("bot") : "",
        presence && side !== you ? PRESENCE_WORDS[presence] : ""].filter(Boolean);
      part(side, "presence-text").textContent = words.length
        ? `${t(", ")}${words.join(t(", "))}` : "";
      chip.classList.toggle("is-turn", game.status === "playing" && game.turn === side);
      chip.classList.toggle("is-winner", game.winner === side);
      // Your own name, in a game against a friend: a tap on it edits it.
      const editable = friendGame && side === you;
      chip.classList.toggle("is-editable", editable);
      const button = part(side, "edit");
      button.hidden = !editable || editing === side;
      const own = isolate(nameAt(game, side));
      // Translators: {name} a name (or "Your friend", X, O)
      button.setAttribute("aria-label", own ? t("Your name: {name}. Change it", { name: own })
        : t("Your name: not set. Change it"));
      if (!editable && editing === side) stop(side);
    }
    const words = scoreWords(game, you);
    const count = friendGame ? game.watchers ?? 0 : 0;
    score.textContent = words;
    watching.textContent = count ? tn("{n} watching", "{n} watching", count) : "";
    watching.hidden = !count;
    // The line keeps its height all game long in the modes that have one: nothing moves
    // when the first watcher comes.
    series.hidden = game.mode === "ai";
  }

  return { render };
}
