// Words for squares and moves: "the top left", "centre board, top", "X centre", "Win in 3",
// "~62%", "0:07". Pure functions of what they are given. Also the protocol's numbering of
// squares, in one place: classic cells 0..8 row by row; an ultimate cell is 9 * board + square
// (PROTOCOL "Ultimate tic-tac-toe"), each 0..8 row by row. Only names and layout use it: where
// a side may play comes in the view (`legal`, `next`).

/** The small board and the square inside it of ultimate cell `cell`: {board, square}. */
export function ultimateParts(cell) {
  return { board: Math.floor(cell / 9), square: cell % 9 };
}

/** The ultimate cell of square `square` in small board `board`. */
export function ultimateCell(board, square) {
  return 9 * board + square;
}

/** Row and column (0..2 each) of square `square` of a 3x3 grid. */
export function rowColumn(square) {
  return [Math.floor(square / 3), square % 3];
}

/** "the centre board": a small board of an ultimate game, by its place in the big one. */
export function boardWords(board) {
  return `the ${CELL_NAMES[board]} board`;
}

export const CELL_NAMES = [
  "top left", "top", "top right",
  "left", "centre", "right",
  "bottom left", "bottom", "bottom right",
];

/** A cell's name: "top left"; in ultimate "centre board, top right" (the places the board
 * shows: a small board by its place in the big one, a square by its place in the small one). */
export function squareWords(cell, variant) {
  if (variant === "ultimate") {
    const { board, square } = ultimateParts(cell);
    return `${CELL_NAMES[board]} board, ${CELL_NAMES[square]}`;
  }
  return CELL_NAMES[cell];
}

/** Where a cell is in a sentence: "the top left", "centre board, top right". */
export function placeWords(cell, variant) {
  return variant === "ultimate" ? squareWords(cell, variant) : `the ${CELL_NAMES[cell]}`;
}

/** "0:07": seconds as minutes and seconds. */
export function clockWords(seconds) {
  const whole = Math.max(0, Math.ceil(seconds));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

/** "X top left" ("X centre board, top right" in ultimate): one move, by the side that made it. */
export function moveWords(side, cell, variant) {
  return `${side} ${squareWords(cell, variant)}`;
}

/** The side that made each move: the mark the final board shows on its cell. */
export function sidesOf(board, moves) {
  return moves.map((cell) => board[cell]);
}

/** "the centre", "the top left or the bottom right": cells in a sentence. */
export function cellsWords(cells, variant) {
  return cells.map((cell) => placeWords(cell, variant)).join(" or ");
}

/**
 * An ultimate move's `score` (the result the search expects after it, 0..1, a draw counting
 * half) in words: `short` on the square ("~62%"), `long` for its label, `tone` for its colour.
 */
export function estimateWords(score) {
  // A move the search did not visit enough has no score (PROTOCOL v4): said, never guessed.
  if (typeof score !== "number") {
    return { short: "?", long: "not evaluated: the search did not look at it enough", tone: "none" };
  }
  const percent = Math.round(score * 100);
  let tone = "even";
  if (score >= 0.6) tone = "good";
  else if (score <= 0.4) tone = "bad";
  // Not a chance to win: a draw counts half (PROTOCOL v2 `score`), so 50% is "even".
  return { short: `~${percent}%`, long: `expected score about ${percent}%, estimated by search`, tone };
}

/**
 * One move of the `analyze` answer in words: `short` on the square ("Win in 3"), `long`
 * for its label ("this move wins in 3 moves"). `plies` counts the moves of both sides from
 * this one to the end.
 */
export function evaluationWords({ result, plies }) {
  const moves = plies === 1 ? "1 move" : `${plies} moves`;
  if (result === "win") {
    return plies === 1
      ? { short: "Win now", long: "this move wins at once" }
      : { short: `Win in ${plies}`, long: `this move wins in ${moves}` };
  }
  if (result === "loss") return { short: `Loss in ${plies}`, long: `this move loses in ${moves}` };
  return { short: "Draw", long: "this move leads to a draw" };
}
