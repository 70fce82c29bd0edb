// The words of a game's result: a series' score and the line on top of a finished game's
// review. Pure functions of the view, as words.js.
import { number, t, tn } from "./squares.js";
import { friendName, how, isolate, nameAt, opponentOf, sideName } from "./words.js";

/** The running score of a series: "Ana 2 · 1 draw · 1 Ben", or "" when none is kept. */
export function scoreWords(game, you) {
  const { score } = game;
  if (!score) return "";
  const label = (side) => {
    if (game.mode === "local") return side;
    const name = isolate(nameAt(game, side));
    if (side === you) return name ?? t("You");
    return name ?? (opponentOf(you) ? t("Friend") : side);
  };
  const draws = tn("{n} draw", "{n} draws", score.draws);
  return `${label("X")} ${number(score.X)} · ${draws} · ${number(score.O)} ${label("O")}`;
}

function hintCount(n) {
  if (!n) return t("no hints");
  return tn("with {n} hint", "with {n} hints", n);
}

/** The line on top of a finished game's review: "You won — with 2 hints". */
export function summarize(game, you) {
  const other = opponentOf(you);
  const hints = game.hints ?? { X: 0, O: 0 };
  const friend = friendName(game, you);
  const name = isolate(nameAt(game, other)); // whole sentences without it: "Your friend …"
  let result;
  if (game.status === "aborted") result = t("Cancelled");
  else if (game.status === "draw") result = t("Draw");
  // Translators: {name} a name (or "Your friend", X, O)
  else if (!other) result = t("{name} won", { name: sideName(game, game.winner) }) + how(game);
  else if (game.winner === you) {
    // Translators: {friend} their name or "your friend"
    if (game.reason === "claim") result = t("You won — {friend} left", { friend });
    else if (game.reason === "resign") {
      result = game.mode === "ai" ? t("You won — the AI resigned")
        // Translators: {friend} their name or "your friend"
        : t("You won — {friend} resigned", { friend });
    } else if (game.reason === "time") result = t("You won on time");
    else result = t("You won");
  } else if (game.reason === "resign") result = t("You resigned");
  else if (game.mode === "ai") result = t("The AI won");
  else if (game.reason === "claim") {
    // Translators: {name} a name (or "Your friend", X, O)
    result = name ? t("{name} claimed the win", { name }) : t("Your friend claimed the win");
  } else if (game.reason === "time") {
    // Translators: {name} a name (or "Your friend", X, O)
    result = name ? t("{name} won on time", { name }) : t("Your friend won on time");
  // Translators: {name} a name (or "Your friend", X, O)
  } else result = name ? t("{name} won", { name }) : t("Your friend won");
  let taken = "";
  if (game.mode === "ai" && other) taken = hintCount(hints[you]);
  else if (game.mode !== "friend") {
    const total = hints.X + hints.O;
    taken = total ? `${hintCount(total)} (X ${number(hints.X)}, O ${number(hints.O)})` : hintCount(0);
  }
  const plain = !game.reason || game.reason === "line";
  const practice = game.start > 0 ? `${t("Practice")} · ` : "";
  return `${practice}${result}${taken && plain && game.status !== "aborted" ? ` — ${taken}` : ""}`;
}
