// The coach's sentences that teach, in the page's language: a hint's advice and each side's
// first mistake, from the server's verdicts (cells, results). Loaded when first needed (a hint
// or a review), not with the page.
import { CELL_NAMES, number, placeWords, t } from "./squares.js";

const CORNERS = [0, 2, 6, 8];
const EDGES = [1, 3, 5, 7];

/**
 * Classic squares in few words, as the server's analysis groups them: "the centre", "any
 * corner", "any edge but the top", "the top left or the bottom right".
 */
export function cellGroupWords(cells) {
  const rest = new Set(cells);
  const parts = [];
  if (rest.has(4)) parts.push(placeWords(4, "classic"));
  for (const [group, all, allBut] of [
    // Translators: {place} a square in a sentence ("the top left")
    [CORNERS, t("any corner"), (cell) => t("any corner but {place}", { place: placeWords(cell) })],
    // Translators: {place} a square in a sentence ("the top left")
    [EDGES, t("any edge"), (cell) => t("any edge but {place}", { place: placeWords(cell) })],
  ]) {
    const chosen = group.filter((cell) => rest.has(cell));
    const missing = group.filter((cell) => !rest.has(cell));
    if (chosen.length === 4) parts.push(all);
    else if (chosen.length === 3) parts.push(allBut(missing[0]));
    else parts.push(...chosen.map((cell) => placeWords(cell, "classic")));
  }
  if (parts.length <= 2) return parts.join(t(" or "));
  return `${parts.slice(0, -1).join(t(", "))}${t(" or ")}${parts[parts.length - 1]}`;
}

/** The hint's sentence that teaches, from the `analyze` answer ({moves, best}); "" for none. */
export function adviceWords(answer) {
  const moves = answer?.moves ?? [];
  const best = answer?.best ?? [];
  if (!moves.length || !best.length) return answer?.advice ?? "";
  const losing = moves.filter((move) => move.result === "loss").map((move) => move.cell);
  if (best.length === moves.length) return t("Every square is as good as the others here.");
  if (best.length <= 2 || best.length <= losing.length) {
    // Translators: {cells} squares ("the top left or the centre")
    if (!losing.length) return t("Play {cells}.", { cells: cellGroupWords(best) });
    return t("Play {cells} ({losing} would lose).",
      // Translators: {cells} squares ("the top left or the centre"); {losing} the squares that lose
      { cells: cellGroupWords(best), losing: cellGroupWords(losing) });
  }
  if (!losing.length) {
    // Translators: {cells} squares ("the top left or the centre")
    return t("Play {cells}: the other squares only draw.", { cells: cellGroupWords(best) });
  }
  return t("Most squares are fine; avoid {cells}: that would lose.",
    // Translators: {cells} squares ("the top left or the centre")
    { cells: cellGroupWords(losing) });
}

/** A side's first mistake in one sentence ("Move 3, X top, turned a draw into a loss; …"). */
export function mistakeWords(mistake) {
  if (!mistake || mistake.cell === undefined || !mistake.best) return mistake?.text ?? "";
  const results = { win: t("a win"), draw: t("a draw"), loss: t("a loss") };
  // Translators: {side} X or O; {square} "top left"; {before}, {after}: "a win", "a draw"…
  return t("Move {number}, {side} {square}, turned {before} into {after}; better was {better}.", {
    number: number(mistake.ply + 1),
    side: mistake.side,
    square: CELL_NAMES[mistake.cell],
    before: results[mistake.before] ?? mistake.before,
    after: results[mistake.after] ?? mistake.after,
    // Translators: {number} a move's number; {side} X or O; {square} a square ("top left"); {befor…
    better: cellGroupWords(mistake.best),
  });
}
