// The board: renders a server snapshot into the nine cells; clicks, taps and keys -> onPlay(cell).
// Without onPlay it is a board to look at (the replay page): no input, no aria-disabled.
import { evaluationWords, number, t } from "./squares.js";

/** Whether keys typed now go into a text field rather than to the page. */
export function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["radio", "checkbox", "button", "submit", "reset", "range", "color"].includes(target.type);
  }
  return false;
}

/** Whether the keyboard is in no control at all (the page itself has the keys). */
export function onPage(target) {
  return target === document.body || target === document.documentElement || target === null;
}

/** A key press with a modifier that belongs to the browser or the system. */
export function modified(event) {
  return event.altKey || event.ctrlKey || event.metaKey;
}

const ARROWS = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
const FLAGS = { mistake: t("the mistake"), better: t("a better move") };

/** A cell's accessible name, from what is on it: its mark, evaluation, hint or flag. */
function label(cell) {
  const index = Number(cell.dataset.cell);
  const parts = [t("row {row}, column {column}",
    // Translators: {row} 1 to 3; {column} 1 to 3
    { row: number(Math.floor(index / 3) + 1), column: number((index % 3) + 1) }),
  cell.dataset.mark || t("empty")];
  if (cell.dataset.result) {
    // The words on the cell first, so that voice control can say what it sees.
    const words = evaluationWords({ result: cell.dataset.result, plies: Number(cell.dataset.plies) });
    parts.push(`${words.short}: ${words.long}`);
  }
  if (cell.classList.contains("is-suggested")) parts.push(t("suggested move"));
  if (cell.dataset.flag) parts.push(FLAGS[cell.dataset.flag]);
  return parts.join(t(", "));
}

/**
 * Where an arrow key, Home or End goes from `row`, `column` on a square grid whose last row and
 * column are `last`: [row, column], or null for any other key.
 */
export function arrowTo(key, row, column, last) {
  if (key in ARROWS) {
    const [down, right] = ARROWS[key];
    return [Math.min(last, Math.max(0, row + down)), Math.min(last, Math.max(0, column + right))];
  }
  if (key === "Home") return [row, 0];
  if (key === "End") return [row, last];
  return null;
}

/** Wire the board in `grid` (nine [data-cell] elements) and the winning-line `strike`. */
export function createBoard(grid, strike, { onPlay } = {}) {
  const cells = Array.from(grid.querySelectorAll("[data-cell]"));
  const readOnly = !onPlay;

  /** Roving tabindex: exactly one cell is in the tab order, the one last focused. */
  function focusCell(index) {
    for (const cell of cells) cell.tabIndex = -1;
    cells[index].tabIndex = 0;
    cells[index].focus();
  }

  if (!readOnly) {
    grid.addEventListener("click", (event) => {
      const cell = event.target.closest("[data-cell]");
      if (!cell || !grid.contains(cell)) return;
      const index = Number(cell.dataset.cell);
      focusCell(index);
      // aria-disabled cells still send: the server's refusal explains why.
      onPlay(index);
    });

    grid.addEventListener("keydown", (event) => {
      const cell = event.target.closest("[data-cell]");
      if (!cell || modified(event)) return;
      const index = Number(cell.dataset.cell);
      const to = arrowTo(event.key, Math.floor(index / 3), index % 3, 2);
      if (!to) return;
      event.preventDefault();
      focusCell(to[0] * 3 + to[1]);
    });

    // Digits 1-9 play cells 0-8 from anywhere on the page, unless a text field has the keys.
    document.addEventListener("keydown", (event) => {
      if (modified(event) || event.repeat) return;
      if (!/^[1-9]$/.test(event.key) || typing(event.target)) return;
      event.preventDefault();
      const index = Number(event.key) - 1;
      focusCell(index);
      onPlay(index);
    });
  }

  /**
   * Show `game` (or a position shaped like it: board, moves, line, status, winner, turn).
   * `playable`: the viewer may move now, on the cells of the view's `legal`. `fresh`: the cell
   * whose mark just appeared (animated), null for none, undefined to leave as is. Evaluations, hints and flags go.
   */
  function render(game, { playable = false, fresh } = {}) {
    const legal = new Set(readOnly || !playable ? [] : game.legal ?? []);
    const last = game.moves.length ? game.moves[game.moves.length - 1] : null;
    const line = game.line ?? [];
    for (const cell of cells) {
      const index = Number(cell.dataset.cell);
      const mark = game.board[index] === "." ? "" : game.board[index];
      cell.dataset.mark = mark;
      if (!readOnly) cell.setAttribute("aria-disabled", String(!legal.has(index)));
      cell.classList.toggle("is-last", index === last);
      cell.classList.toggle("is-win", line.includes(index));
      if (fresh !== undefined) cell.classList.toggle("is-new", index === fresh);
      clear(cell);
      cell.setAttribute("aria-label", label(cell));
    }
    grid.dataset.status = game.status;
    grid.dataset.turn = playable ? game.turn : "";
    strike.dataset.line = line.join("");
    strike.dataset.winner = game.winner ?? "";
    grid.parentElement.dataset.winner = game.winner ?? "";
  }

  function clear(cell) {
    delete cell.dataset.result;
    delete cell.dataset.plies;
    delete cell.dataset.flag;
    cell.classList.remove("is-suggested");
    const text = cell.querySelector(".eval");
    if (text) text.textContent = "";
  }

  /** Write on the empty cells what each move leads to (the `moves` of analyze); null: nothing. */
  function evaluate(moves) {
    const byCell = new Map((moves ?? []).map((move) => [move.cell, move]));
    for (const cell of cells) {
      const move = byCell.get(Number(cell.dataset.cell));
      const text = cell.querySelector(".eval");
      if (move && cell.dataset.mark === "") {
        cell.dataset.result = move.result;
        cell.dataset.plies = String(move.plies);
        if (text) text.textContent = evaluationWords(move).short;
      } else {
        delete cell.dataset.result;
        delete cell.dataset.plies;
        if (text) text.textContent = "";
      }
      cell.setAttribute("aria-label", label(cell));
    }
  }

  /** Highlight the cells a hint suggests ([] for none). */
  function suggest(suggested) {
    for (const cell of cells) {
      cell.classList.toggle("is-suggested", suggested.includes(Number(cell.dataset.cell)));
      cell.setAttribute("aria-label", label(cell));
    }
  }

  /** Mark a mistake on the board and the moves that would have been better. */
  function flag({ mistake = null, better = [] } = {}) {
    for (const cell of cells) {
      const index = Number(cell.dataset.cell);
      if (index === mistake) cell.dataset.flag = "mistake";
      else if (better.includes(index) && cell.dataset.mark === "") cell.dataset.flag = "better";
      else delete cell.dataset.flag;
      cell.setAttribute("aria-label", label(cell));
    }
  }

  /** Say that the board shows a past position (true) or the game as it is (false). */
  function replaying(on) {
    grid.parentElement.classList.toggle("is-replay", on);
  }

  /** Put the keyboard on the board, on the cell last focused. */
  function focus() {
    (cells.find((cell) => cell.tabIndex === 0) ?? cells[0]).focus();
  }

  return { render, evaluate, suggest, flag, replaying, focus };
}

/**
 * One board for the page, whichever game is on it: the classic and the ultimate board, each
 * made by `make(onPlay)` (the ultimate one may be a promise: its module is loaded the first time
 * an ultimate game is shown, so a classic player never downloads it), shown by the `variant` of
 * what is rendered. `app` carries data-variant, for the words and hints around the board.
 */
export function createBoards({ classic, ultimate }, { onPlay, app }) {
  let variant = "classic";
  const made = { classic: classic.make((cell) => { if (variant === "classic") onPlay(cell); }) };
  let waiting = null; // calls to the ultimate board made while its module loads, in order
  app.dataset.variant = variant;

  /** The ultimate board, made on first use; calls to it wait until it is there. */
  function loadUltimate() {
    waiting = [];
    Promise.resolve(ultimate.make((cell) => { if (variant === "ultimate") onPlay(cell); }))
      .then((board) => {
        made.ultimate = board;
        const calls = waiting;
        waiting = null;
        for (const [name, args] of calls) board[name](...args);
      });
  }

  /** Call `name` on the board on screen (the ultimate one as soon as it is made). */
  function active(name, ...args) {
    if (variant === "classic" || made.ultimate) {
      made[variant][name](...args);
      return;
    }
    if (!waiting) loadUltimate();
    waiting.push([name, args]);
  }

  function show(next) {
    if (next === variant) return;
    variant = next;
    classic.wrap.hidden = variant !== "classic";
    ultimate.wrap.hidden = variant !== "ultimate";
    app.dataset.variant = variant;
  }

  /** Take every pending mark off (a view is about to be drawn, or the move was refused). */
  function unpend() {
    for (const wrap of [classic.wrap, ultimate.wrap]) {
      for (const cell of wrap.querySelectorAll("[data-pending]")) delete cell.dataset.pending;
    }
  }

  return {
    render(game, options) {
      unpend();
      show(game.variant === "ultimate" ? "ultimate" : "classic");
      active("render", game, options);
    },
    /**
     * Draw `mark` on the empty `cell` of the board on screen as pending: dimmed, not counted,
     * until the server's answer draws the view (or the refusal takes it off). False when the
     * cell is not there or not empty.
     */
    pending(cell, mark) {
      const wrap = variant === "classic" ? classic.wrap : ultimate.wrap;
      const square = wrap.querySelector(`[data-cell="${Number(cell)}"]`);
      if (!square || square.dataset.mark !== "" || (mark !== "X" && mark !== "O")) return false;
      square.dataset.pending = mark;
      return true;
    },
    unpend,
    evaluate: (moves) => active("evaluate", moves),
    suggest: (cells) => active("suggest", cells),
    flag: (marks) => active("flag", marks),
    replaying: (on) => active("replaying", on),
    focus: () => active("focus"),
  };
}
