// The 9x9 board of ultimate tic-tac-toe: renders a view (board, boards, next, line, can) into
// nine small boards of nine cells; clicks, taps and keys -> onPlay(cell). Without onPlay it is a
// board to look at (the replay page). It works out no rule: who won a small board, which boards
// are closed and where the mover must play all come in the view (`boards`, `next`, `line`).
import { modified, typing } from "./keys.js";
import { estimateWords, placeWords } from "./status.js";

const ARROWS = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
const STATES = { X: "won by X", O: "won by O", "-": "full, nobody won it" };

/** Row and column (0..8 each) of cell `index` = 9 * board + cell on the 9x9 grid. */
function spot(index) {
  const b = Math.floor(index / 9);
  const c = index % 9;
  return [3 * Math.floor(b / 3) + Math.floor(c / 3), 3 * (b % 3) + (c % 3)];
}

/** The cell at row and column of the 9x9 grid. */
function at(row, column) {
  return 9 * (3 * Math.floor(row / 3) + Math.floor(column / 3)) + 3 * (row % 3) + (column % 3);
}

/** "Board 5" and what the view says of it, for people. */
function boardWords(b, state) {
  return STATES[state] ? `Board ${b + 1}, ${STATES[state]}` : `Board ${b + 1}`;
}

const SVG = "http://www.w3.org/2000/svg";

/**
 * An X or an O, drawn as the classic board draws it (`kind`: "x" or "o"); `big`: across most of
 * a small board (a narrower view of the same drawing, so it grows without overflowing).
 */
function markSvg(kind, big = false) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", `mark mark-${kind}`);
  svg.setAttribute("viewBox", big ? "20 20 60 60" : "0 0 100 100");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const shape = document.createElementNS(SVG, kind === "x" ? "path" : "circle");
  if (kind === "x") {
    shape.setAttribute("d", "M27 27L73 73M73 27L27 73");
  } else {
    shape.setAttribute("cx", "50");
    shape.setAttribute("cy", "50");
    shape.setAttribute("r", "26");
  }
  shape.setAttribute("pathLength", "1");
  svg.append(shape);
  return svg;
}

/** Build the nine small boards in `grid`: buttons to play on, or plain squares to look at. */
function build(grid, readOnly) {
  const smalls = [];
  const cells = [];
  for (let b = 0; b < 9; b += 1) {
    const small = document.createElement("div");
    small.className = "usmall";
    small.dataset.uboard = String(b);
    small.setAttribute("role", readOnly ? "img" : "group");
    for (let c = 0; c < 9; c += 1) {
      const cell = document.createElement(readOnly ? "span" : "button");
      cell.className = "ucell";
      cell.dataset.ucell = String(9 * b + c);
      cell.dataset.mark = "";
      if (readOnly) {
        cell.setAttribute("aria-hidden", "true");
      } else {
        cell.type = "button";
        cell.tabIndex = -1;
        cell.setAttribute("aria-disabled", "true");
      }
      const text = document.createElement("span");
      text.className = "ueval";
      text.setAttribute("aria-hidden", "true");
      cell.append(markSvg("x"), markSvg("o"), text);
      small.append(cell);
      cells.push(cell);
    }
    const big = document.createElement("span");
    big.className = "ubig";
    big.setAttribute("aria-hidden", "true");
    big.append(markSvg("x", true), markSvg("o", true));
    small.append(big);
    grid.append(small);
    smalls.push(small);
  }
  if (!readOnly) cells[40].tabIndex = 0;
  return { smalls, cells };
}

/**
 * Wire the ultimate board in `grid` (an empty element; the squares are built here) and the
 * `strike` over the winning line of small boards. `onPlay(cell)`: a square was chosen.
 * `onNotice(text)`: a square the view does not let the player have was tapped, and why.
 */
export function createUltimateBoard(grid, strike, { onPlay, onNotice } = {}) {
  const readOnly = !onPlay;
  const wrap = grid.closest(".uboard-wrap");
  let parts = null; // built the first time a game is shown: a classic player never pays for it
  let shown = null; // {next, boards, playable, turn} of the view on screen

  function built() {
    if (!parts) parts = build(grid, readOnly);
    return parts;
  }

  /**
   * Whether the view sends the mover to small board `b` (open, and `next` or any): in a game
   * being played, or a past position of one.
   */
  function target(b) {
    if (!shown || (shown.status !== "playing" && shown.status !== "replay")) return false;
    return shown.boards[b] === "." && (shown.next === null || shown.next === b);
  }

  /** Where the view says the mover must play, for a label: "you must play in board 5". */
  function where() {
    if (!shown?.playable) return "";
    return shown.next === null ? "you may play in any open board"
      : `you must play in board ${shown.next + 1}`;
  }

  function label(cell) {
    const index = Number(cell.dataset.ucell);
    const b = Math.floor(index / 9);
    const words = [placeWords(index, "ultimate"), cell.dataset.mark || "empty"];
    const state = shown?.boards[b];
    if (STATES[state]) words.push(`board ${STATES[state]}`);
    if (cell.dataset.score) words.push(estimateWords(Number(cell.dataset.score) / 100).long);
    if (cell.classList.contains("is-suggested")) words.push("suggested move");
    if (cell.classList.contains("is-last")) words.push("last move");
    const text = words.join(", ");
    const must = cell.dataset.mark ? "" : where();
    return must ? `${text}; ${must}` : text;
  }

  /** Roving tabindex: exactly one square is in the tab order, the one last focused. */
  function focusCell(index) {
    for (const cell of built().cells) cell.tabIndex = -1;
    parts.cells[index].tabIndex = 0;
    parts.cells[index].focus();
  }

  /** A square was chosen: played, unless the view puts it outside where the mover must play. */
  function choose(index) {
    const cell = built().cells[index];
    const b = Math.floor(index / 9);
    if (shown?.playable && !cell.dataset.mark && !target(b)) {
      // The view says so (`next`, `boards`): no need to ask the server to refuse it.
      const state = STATES[shown.boards[b]];
      const go = shown.next === null ? "play in any open board" : `play in board ${shown.next + 1}`;
      onNotice?.(state ? `Board ${b + 1} is ${state.split(",")[0]} — ${go}` : `You must ${go}`);
      return;
    }
    // Other disabled squares still send: the server's refusal explains why (taken, not your turn).
    onPlay(index);
  }

  if (!readOnly) {
    grid.addEventListener("click", (event) => {
      const cell = event.target.closest("[data-ucell]");
      if (!cell || !grid.contains(cell)) return;
      const index = Number(cell.dataset.ucell);
      focusCell(index);
      choose(index);
    });

    // Arrow keys move across the whole 9x9 grid, from one small board into the next; Home and
    // End go to the ends of the row. Enter and Space press the square (it is a button).
    grid.addEventListener("keydown", (event) => {
      const cell = event.target.closest("[data-ucell]");
      if (!cell || modified(event)) return;
      let [row, column] = spot(Number(cell.dataset.ucell));
      if (event.key in ARROWS) {
        const [down, right] = ARROWS[event.key];
        row = Math.min(8, Math.max(0, row + down));
        column = Math.min(8, Math.max(0, column + right));
      } else if (event.key === "Home") {
        column = 0;
      } else if (event.key === "End") {
        column = 8;
      } else {
        return;
      }
      event.preventDefault();
      focusCell(at(row, column));
    });

    // Digits 1-9 play that square of the board the mover must play in; with any board open,
    // they go to that board (its centre) and Enter plays.
    document.addEventListener("keydown", (event) => {
      if (wrap.hidden || !shown || modified(event) || event.repeat) return;
      if (!/^[1-9]$/.test(event.key) || typing(event.target)) return;
      event.preventDefault();
      const digit = Number(event.key) - 1;
      if (shown.next === null) {
        focusCell(9 * digit + 4);
        return;
      }
      const index = 9 * shown.next + digit;
      focusCell(index);
      choose(index);
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
    shown = {
      boards, next: game.next ?? null, playable: !readOnly && playable, status: game.status,
    };
    const last = game.moves.length ? game.moves[game.moves.length - 1] : null;
    const line = game.line ?? [];
    smalls.forEach((small, b) => {
      small.dataset.state = boards[b];
      small.classList.toggle("is-target", target(b));
      small.classList.toggle("is-line", line.includes(b));
      const big = small.querySelector(".ubig");
      big.dataset.mark = boards[b] === "X" || boards[b] === "O" ? boards[b] : "";
    });
    for (const cell of cells) {
      const index = Number(cell.dataset.ucell);
      const mark = game.board[index] === "." ? "" : game.board[index];
      cell.dataset.mark = mark;
      if (!readOnly) {
        cell.setAttribute("aria-disabled",
          String(!shown.playable || mark !== "" || !target(Math.floor(index / 9))));
      }
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
  }

  /** Labels from what is on screen: the squares', and each small board's. */
  function labelAll() {
    const { smalls, cells } = parts;
    smalls.forEach((small, b) => {
      const state = shown.boards[b];
      let words = boardWords(b, state);
      if (readOnly) {
        const marks = ["X", "O"].map((side) => {
          const taken = cells.slice(9 * b, 9 * b + 9).filter((cell) => cell.dataset.mark === side)
            .map((cell) => (Number(cell.dataset.ucell) % 9) + 1);
          return taken.length ? `${side} on ${taken.join(", ")}` : "";
        }).filter(Boolean);
        words = [words, marks.join("; ") || "empty"].join(": ");
      } else if (target(b)) {
        words = `${words}, ${shown.playable ? "play here" : "to be played in"}`;
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
      const index = Number(cell.dataset.ucell);
      return (Math.floor(index / 9) === 4 ? 0 : 2) + (index % 9 === 4 ? 0 : 1);
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
      if (move && typeof move.score === "number" && cell.dataset.mark === "") {
        const words = estimateWords(move.score);
        cell.dataset.score = String(Math.round(move.score * 100));
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
    const { cells } = built();
    (cells.find((cell) => cell.tabIndex === 0) ?? cells[40]).focus();
  }

  return { render, evaluate, suggest, flag, replaying, focus };
}

/**
 * One board for the page, whichever game is on it: the classic and the ultimate board, each
 * made by `make(onPlay)`, shown by the `variant` of what is rendered. `app` carries
 * data-variant, for the words and hints around the board.
 */
export function createBoards({ classic, ultimate }, { onPlay, app }) {
  let variant = "classic";
  const made = {
    classic: classic.make((cell) => { if (variant === "classic") onPlay(cell); }),
    ultimate: ultimate.make((cell) => { if (variant === "ultimate") onPlay(cell); }),
  };
  const active = () => made[variant];
  app.dataset.variant = variant;

  function show(next) {
    if (next === variant) return;
    variant = next;
    classic.wrap.hidden = variant !== "classic";
    ultimate.wrap.hidden = variant !== "ultimate";
    app.dataset.variant = variant;
  }

  return {
    render(game, options) {
      show(game.variant === "ultimate" ? "ultimate" : "classic");
      active().render(game, options);
    },
    evaluate: (moves) => active().evaluate(moves),
    suggest: (cells) => active().suggest(cells),
    flag: (marks) => active().flag(marks),
    replaying: (on) => active().replaying(on),
    focus: () => active().focus(),
  };
}
