// The 9x9 board of ultimate tic-tac-toe: renders a view (board, boards, targets, line, legal) into
// nine small boards of nine cells; clicks, taps and keys -> onPlay(cell). Without onPlay it is a
// board to look at (the replay page). It works out no rule: who won a small board and where the
// mover may play come in the view (`boards`, `targets`, `legal`).
import { arrowTo, modified, typing } from "./board.js";
import {
  BOARD_NAMES, boardWords, CELL_NAMES, estimateWords, placeWords, t, ultimateParts,
} from "./squares.js";
import { build } from "./ultimate-grid.js";

const STATES = { X: t("won by X"), O: t("won by O"), "-": t("full, nobody won it") };

/** "Centre board" and what the view says of it, for people. */
function smallBoardWords(b, state) {
  const name = BOARD_NAMES[b].charAt(0).toUpperCase() + BOARD_NAMES[b].slice(1);
  // Translators: {board} a small board ("the centre board"); {state} a board's state ("won by X")
  return STATES[state] ? t("{board}, {state}", { board: name, state: STATES[state] }) : name;
}

/** The small boards to light up: the view's `targets` (PROTOCOL v4), as the server sent them. */
function targets(game) {
  return new Set(game.targets ?? []);
}

/**
 * Wire the ultimate board in `grid` (an empty element; the squares are built here) and the
 * `strike` over the winning line of small boards. `onPlay(cell)`: a square was chosen.
 */
export function createUltimateBoard(grid, strike, { onPlay } = {}) {
  const readOnly = !onPlay;
  const wrap = grid.closest(".uboard-wrap");
  let parts = null; // built the first time a game is shown: a classic player never pays for it
  let shown = null; // {boards, playable, legal, lit} of the view on screen
  // A phone: the board the mover must play in, enlarged (its squares >= 44 px); the whole
  // board a tap outside it away, and the board back a tap inside it. `wide`: the player asked
  // for the whole board this turn.
  let wide = false;
  let zoomFor = null; // the turn (moves played) the choice above belongs to

  function built() {
    if (!parts) parts = build(grid, readOnly);
    return parts;
  }

  /** Where the view says the mover must play, for a label: "you must play in the top board". */
  function where() {
    if (!shown?.playable) return "";
    // Translators: {board} a small board ("the centre board")
    return shown.lit.size === 1 ? t("you must play in {board}", { board: boardWords(only()) })
      : t("you may play in any open board");
  }

  /** The one small board the mover may play in, as the view's `targets` say, or null. */
  function only() {
    return shown?.lit.size === 1 ? [...shown.lit][0] : null;
  }

  function label(cell) {
    const index = Number(cell.dataset.ucell);
    const { board: b } = ultimateParts(index);
    const words = [placeWords(index, "ultimate"), cell.dataset.mark || t("empty")];
    const state = shown?.boards[b];
    // Translators: {state} a board's state ("won by X")
    if (STATES[state]) words.push(t("board {state}", { state: STATES[state] }));
    if (cell.dataset.score) words.push(estimateWords(Number(cell.dataset.score) / 100).long);
    else if (cell.dataset.estimate) words.push(estimateWords(null).long);
    if (cell.classList.contains("is-suggested")) words.push(t("suggested move"));
    if (cell.classList.contains("is-last")) words.push(t("last move"));
    const text = words.join(t(", "));
    const must = cell.dataset.mark ? "" : where();
    return must ? `${text}; ${must}` : text;
  }

  /** Roving tabindex: exactly one square is in the tab order, the one last focused. */
  function focusCell(cell) {
    for (const other of built().cells) other.tabIndex = -1;
    cell.tabIndex = 0;
    cell.focus();
  }

  /** Every press is sent: the server judges it (a square outside `legal` is refused there). */
  function choose(cell) {
    focusCell(cell);
    onPlay(Number(cell.dataset.ucell));
  }

  /** The small board shown enlarged, or null: one board to play in, squares under 44 px. */
  function zoomable() {
    const b = only();
    if (readOnly || !shown?.playable || b === null) return null;
    const width = grid.getBoundingClientRect().width / (wrap.dataset.zoom ? 2 : 1);
    return width > 0 && width < 9 * 44 + 40 ? b : null;
  }

  /** Show the enlarged board (or the whole one) as `zoomable` and the player's choice say. */
  function zoom() {
    const b = zoomable();
    if (b === null || wide) delete wrap.dataset.zoom;
    else wrap.dataset.zoom = String(b);
    wrap.dataset.zoomable = b === null ? "" : "true";
  }

  if (!readOnly) {
    grid.addEventListener("click", (event) => {
      const cell = event.target.closest("[data-ucell]");
      if (!cell || !grid.contains(cell)) return;
      const b = zoomable();
      // A tap (not a key) on a phone switches between the board to play in and the whole one.
      if (b !== null && event.detail > 0) {
        const inside = ultimateParts(Number(cell.dataset.ucell)).board === b;
        if (wide === inside) {
          wide = !inside;
          zoom();
          return;
        }
      }
      choose(cell);
    });
    // The keyboard may go anywhere: the whole board is shown when it leaves the enlarged one.
    grid.addEventListener("focusin", (event) => {
      const cell = event.target.closest("[data-ucell]");
      const b = zoomable();
      if (cell && b !== null && !wide && ultimateParts(Number(cell.dataset.ucell)).board !== b
          && event.target.matches(":focus-visible")) {
        wide = true;
        zoom();
      }
    });

    // Arrow keys move across the whole 9x9 grid, from one small board into the next; Home and
    // End go to the ends of the row. Enter and Space press the square (it is a button).
    grid.addEventListener("keydown", (event) => {
      const cell = event.target.closest("[data-ucell]");
      if (!cell || modified(event)) return;
      const to = arrowTo(event.key, Number(cell.dataset.row), Number(cell.dataset.column), 8);
      if (!to) return;
      event.preventDefault();
      focusCell(parts.at(...to));
    });

    // Digits 1-9 play that square of the board the mover must play in; with any board open,
    // they go to that board (its centre) and Enter plays.
    document.addEventListener("keydown", (event) => {
      if (wrap.hidden || !shown || modified(event) || event.repeat) return;
      if (!/^[1-9]$/.test(event.key) || typing(event.target)) return;
      event.preventDefault();
      const digit = Number(event.key) - 1;
      const { smalls } = built();
      if (only() === null) {
        focusCell(smalls[digit].querySelectorAll(".ucell")[4]);
        return;
      }
      choose(smalls[only()].querySelectorAll(".ucell")[digit]);
    });
  }

  /**
   * Show `game` (or a position shaped like it: board, boards, next, moves, line, status,
   * winner, turn). `playable`: the viewer may move now. `fresh`: the square whose mark just
   * appeared (animated), null for none, undefined to leave as is.
   */
  function render(game, { playable = false, fresh } = {}) {
    const { smalls, cells } = built();
    const boards = game.boards ?? ".........";
    const legal = new Set(readOnly || !playable ? [] : game.legal ?? []);
    shown = {
      boards, playable: !readOnly && playable, legal,
      lit: targets(game),
    };
    const last = game.moves.length ? game.moves[game.moves.length - 1] : null;
    const line = game.line ?? [];
    smalls.forEach((small, b) => {
      small.dataset.state = boards[b];
      small.classList.toggle("is-target", shown.lit.has(b));
      small.classList.toggle("is-line", line.includes(b));
      const big = small.querySelector(".ubig");
      big.dataset.mark = boards[b] === "X" || boards[b] === "O" ? boards[b] : "";
    });
    for (const cell of cells) {
      const index = Number(cell.dataset.ucell);
      const mark = game.board[index] === "." ? "" : game.board[index];
      cell.dataset.mark = mark;
      if (!readOnly) cell.setAttribute("aria-disabled", String(!legal.has(index)));
      cell.classList.toggle("is-last", index === last);
      if (fresh !== undefined) cell.classList.toggle("is-new", index === fresh);
      clear(cell);
    }
    grid.dataset.status = game.status;
    grid.dataset.turn = game.status === "playing" && game.turn ? game.turn : "";
    grid.dataset.playable = String(shown.playable);
    strike.dataset.line = line.join("");
    strike.dataset.winner = game.winner ?? "";
    wrap.dataset.winner = game.winner ?? "";
    labelAll();
    if (!readOnly && !grid.contains(document.activeElement)) rove();
    if (zoomFor !== game.moves.length) {
      zoomFor = game.moves.length;
      wide = false; // each turn starts enlarged where the mover must play
    }
    if (!readOnly) zoom();
  }

  /** Labels from what is on screen: the squares', and each small board's. */
  function labelAll() {
    const { smalls, cells } = parts;
    smalls.forEach((small, b) => {
      const state = shown.boards[b];
      let words = smallBoardWords(b, state);
      if (readOnly) {
        const marks = ["X", "O"].map((side) => {
          const taken = Array.from(small.querySelectorAll(".ucell"))
            .filter((cell) => cell.dataset.mark === side)
            .map((cell) => CELL_NAMES[ultimateParts(Number(cell.dataset.ucell)).square]);
          // Translators: {side} X or O; {cells} squares ("the top left or the centre")
          return taken.length ? t("{side} on {cells}", { side, cells: taken.join(t(", ")) }) : "";
        }).filter(Boolean);
        words = [words, marks.join("; ") || t("empty")].join(": ");
      } else if (shown.lit.has(b)) {
        const where = shown.playable ? t("play here") : t("to be played in");
        words = `${words}${t(", ")}${where}`;
      }
      small.setAttribute("aria-label", words);
    });
    if (!readOnly) for (const cell of cells) cell.setAttribute("aria-label", label(cell));
  }

  /**
   * Keep the one tab stop where play goes on: where it is if that square may be played, else
   * a free square of a board to play in (the middle board first, each board's centre first).
   */
  function rove() {
    const { cells } = parts;
    const free = (cell) => cell.getAttribute("aria-disabled") === "false";
    if (cells.some((cell) => cell.tabIndex === 0 && free(cell))) return;
    const open = cells.filter(free);
    if (!open.length) return;
    const rank = (cell) => {
      const { board: b, square: c } = ultimateParts(Number(cell.dataset.ucell));
      return (b === 4 ? 0 : 2) + (c === 4 ? 0 : 1);
    };
    const chosen = open.reduce((best, cell) => (rank(cell) < rank(best) ? cell : best));
    for (const cell of cells) cell.tabIndex = cell === chosen ? 0 : -1;
  }

  function clear(cell) {
    delete cell.dataset.score;
    delete cell.dataset.estimate;
    cell.classList.remove("is-suggested");
    cell.querySelector(".ueval").textContent = "";
  }

  /** Write on the squares the estimated chance after each move (the `moves` of analyze). */
  function evaluate(moves) {
    if (!parts) return;
    const byCell = new Map((moves ?? []).map((move) => [move.cell, move]));
    for (const cell of parts.cells) {
      const move = byCell.get(Number(cell.dataset.ucell));
      const text = cell.querySelector(".ueval");
      if (move && cell.dataset.mark === "") {
        const words = estimateWords(move.score); // a null score: "not evaluated"
        if (typeof move.score === "number") cell.dataset.score = String(Math.round(move.score * 100));
        else delete cell.dataset.score;
        cell.dataset.estimate = words.tone;
        text.textContent = words.short;
      } else {
        delete cell.dataset.score;
        delete cell.dataset.estimate;
        text.textContent = "";
      }
    }
    if (shown) labelAll();
  }

  /** Ring the squares a hint suggests ([] for none). */
  function suggest(suggested) {
    if (!parts) return;
    for (const cell of parts.cells) {
      cell.classList.toggle("is-suggested", suggested.includes(Number(cell.dataset.ucell)));
    }
    if (shown) labelAll();
  }

  /** Mistakes are not judged in ultimate (the game is not solved): nothing to flag. */
  function flag() {}

  /** Say that the board shows a past position (true) or the game as it is (false). */
  function replaying(on) {
    wrap.classList.toggle("is-replay", on);
  }

  /** Put the keyboard on the board, on the square last focused. */
  function focus() {
    const { cells, centre } = built();
    (cells.find((cell) => cell.tabIndex === 0) ?? centre).focus();
  }

  return { render, evaluate, suggest, flag, replaying, focus };
}
