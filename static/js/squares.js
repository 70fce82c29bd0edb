// Words for squares and moves: "the top left", "centre board, top", "X centre", "Win in 3",
// "~62%", "0:07". Pure functions of what they are given. Also the protocol's numbering of
// squares, in one place: classic cells 0..8 row by row; an ultimate cell is 9 * board + square
// (PROTOCOL "Ultimate tic-tac-toe"), each 0..8 row by row. Only names and layout use it: where
// a side may play comes in the view (`legal`, `next`).
// The page's words in the player's language (here, not in a module of their own: one answer
// fewer on a first load): `config.words`, that language's catalog from ttt/translations/
// (`make translations`), keyed by ttt.web.i18n.message_key. Marked t("…") and tn("…", "…", n)
// for pybabel: plain strings with {name} placeholders; a missing one reads as its English.
const element = document.getElementById("config");
const words = (element && JSON.parse(element.textContent).words) || {};

/** The page's language, BCP 47 ("pt-BR"). */
export const lang = words.lang || document.documentElement.lang || "en";
const messages = words.messages || {};
const plurals = words.plurals || { one: 0, other: 1 }; // CLDR category -> form index
const pluralRules = new Intl.PluralRules(lang);
const numbers = new Intl.NumberFormat(lang);
const utf8 = new TextEncoder();

/** 5 base-36 digits of the FNV-1a hash of the message's UTF-8 (as message_key). */
function key(msgid) {
  let value = 0x811c9dc5;
  for (const byte of utf8.encode(msgid)) value = Math.imul(value ^ byte, 0x01000193) >>> 0;
  let digits = "";
  for (let i = 0; i < 5; i += 1) {
    digits += (value % 36).toString(36);
    value = Math.floor(value / 36);
  }
  return digits;
}

function fill(text, params) {
  return params ? text.replace(/\{(\w+)\}/g, (all, name) => (name in params ? params[name] : all))
    : text;
}

/** A number as the language writes it ("1.234", "١٢"). */
export function number(n) {
  return numbers.format(n);
}

/** The message in the page's language, its {placeholders} filled from `params`. */
export function t(msgid, params) {
  const found = messages[key(msgid)];
  return fill(typeof found === "string" ? found : msgid, params);
}

/** The plural form for `n` ("1 draw", "2 draws"; six forms in Arabic); {n} is `n` formatted. */
export function tn(singular, plural, n, params) {
  const forms = messages[key(singular)];
  const text = Array.isArray(forms)
    ? forms[plurals[pluralRules.select(n)] ?? plurals.other] ?? forms[forms.length - 1]
    : (n === 1 ? singular : plural);
  return fill(text, { n: number(n), ...params });
}

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
  return THE_BOARD_NAMES[board];
}

export const CELL_NAMES = [
  t("top left"), t("top"), t("top right"),
  t("left"), t("centre"), t("right"),
  t("bottom left"), t("bottom"), t("bottom right"),
];

/** The small boards of an ultimate game by their place: "top left board". */
export const BOARD_NAMES = [
  t("top left board"), t("top board"), t("top right board"),
  t("left board"), t("centre board"), t("right board"),
  t("bottom left board"), t("bottom board"), t("bottom right board"),
];

// In a sentence: "play in the centre board" (each language has its own article, or none).
const THE_BOARD_NAMES = [
  t("the top left board"), t("the top board"), t("the top right board"),
  t("the left board"), t("the centre board"), t("the right board"),
  t("the bottom left board"), t("the bottom board"), t("the bottom right board"),
];

// A square in a sentence: "AI played the centre".
const THE_CELL_NAMES = [
  t("the top left"), t("the top"), t("the top right"),
  t("the left"), t("the centre"), t("the right"),
  t("the bottom left"), t("the bottom"), t("the bottom right"),
];

/** A square of a 3x3 grid in a sentence: "the top left". */
export function squareInSentence(square) {
  return THE_CELL_NAMES[square];
}

/** A cell's name: "top left"; in ultimate "centre board, top right" (the places the board
 * shows: a small board by its place in the big one, a square by its place in the small one). */
export function squareWords(cell, variant) {
  if (variant === "ultimate") {
    const { board, square } = ultimateParts(cell);
    // Translators: {board} a small board ("the centre board"); {square} a square ("top left")
    return t("{board}, {square}", { board: BOARD_NAMES[board], square: CELL_NAMES[square] });
  }
  return CELL_NAMES[cell];
}

/** Where a cell is in a sentence: "the top left", "centre board, top right". */
export function placeWords(cell, variant) {
  return variant === "ultimate" ? squareWords(cell, variant) : THE_CELL_NAMES[cell];
}

/** "0:07": seconds as minutes and seconds. */
export function clockWords(seconds) {
  const whole = Math.max(0, Math.ceil(seconds));
  const rest = number(whole % 60).padStart(2, number(0));
  return `${number(Math.floor(whole / 60))}:${rest}`;
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
  return cells.map((cell) => placeWords(cell, variant)).join(t(" or "));
}

/** "62%" as the language writes a percentage ("62 %", "٪62"). */
function percentWords(percent) {
  return new Intl.NumberFormat(lang, { style: "percent" })
    .format(percent / 100);
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
  return {
    short: `~${percentWords(percent)}`,
    // Translators: {percent} "62%"
    long: t("expected score about {percent}, estimated by search", { percent: percentWords(percent) }),
    tone,
  };
}

/**
 * One move of the `analyze` answer in words: `short` on the square ("Win in 3"), `long`
 * for its label ("this move wins in 3 moves"). `plies` counts the moves of both sides from
 * this one to the end.
 */
export function evaluationWords({ result, plies }) {
  if (result === "win") {
    return plies === 1
      ? { short: t("Win now"), long: t("this move wins at once") }
      : { short: t("Win in {n}", { n: number(plies) }),
        long: tn("this move wins in {n} move", "this move wins in {n} moves", plies) };
  }
  if (result === "loss") {
    return { short: t("Loss in {n}", { n: number(plies) }),
      long: tn("this move loses in {n} move", "this move loses in {n} moves", plies) };
  }
  return { short: t("Draw"), long: t("this move leads to a draw") };
}
