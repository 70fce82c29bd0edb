// News of a change between two views of a game, naming the person: who joined, left or came
// back, offered, declined or withdrew a rematch, reacted, or ended the game and how.
import { friendName, opponentOf, sideName } from "./words.js";
import { t } from "./squares.js";

/**
 * Who called the game off and how, from the view's `aborted` ({reason, by}, PROTOCOL v3) or,
 * from an older server, from whether this page sent the abort itself.
 */
function abortWords(previous, game, you, own, Friend) {
  const { reason, by } = game.aborted ?? {};
  if (reason === "no_start") {
    // The side on move let its first-move window pass.
    if (previous.turn === you) return t("You did not make your first move in time — nothing counts");
    const name = Friend ?? sideName(game, previous.turn);
    // Translators: {name} a name (or "Your friend", X, O)
    return t("{name} did not make a first move in time — nothing counts", { name });
  }
  const mine = by ? by === you : own === "abort";
  if (mine) return t("You cancelled the game — nothing counts");
  // Translators: {name} a name (or "Your friend", X, O)
  if (Friend) return t("{name} cancelled the game — nothing counts", { name: Friend });
  // Translators: {name} a name (or "Your friend", X, O)
  return by ? t("{name} cancelled the game — nothing counts", { name: sideName(game, by) })
    : t("The game was cancelled");
}

/**
 * How the game ended, told as news naming the person, or "" when it did not just end.
 * `own`: the event this page sent itself ("abort", "resign") if it ended the game.
 */
export function describeEnd(previous, game, you, { own = null } = {}) {
  if (previous?.status !== "playing" || game.status === "playing") return "";
  const other = opponentOf(you);
  const Friend = other ? friendName(game, you, { start: true }) : null;
  if (game.status === "aborted") return abortWords(previous, game, you, own, Friend);
  if (!Friend || game.mode !== "friend") return "";
  const loser = opponentOf(game.winner);
  // Translators: {name} a name (or "Your friend", X, O)
  if (game.reason === "resign" && loser === other) return t("{name} resigned", { name: Friend });
  if (game.reason === "time") {
    // Translators: {name} a name (or "Your friend", X, O)
    return loser === other ? t("{name} ran out of time", { name: Friend }) : t("You ran out of time");
  }
  if (game.reason === "claim") {
    // Translators: {name} a name (or "Your friend", X, O)
    return loser === other ? t("You claimed the win") : t("{name} claimed the win", { name: Friend });
  }
  return "";
}

/** News of the opponent's seat between two views of a friend game, or "". */
export function describePresence(previous, game, you) {
  if (game.mode === "friend" && you === "spectator") return watchedPresence(previous, game);
  const other = game.mode === "friend" ? opponentOf(you) : null;
  if (!other || !previous || previous.id !== game.id) return "";
  const Friend = friendName(game, you, { start: true });
  const name = Friend;
  // Translators: {name} a name (or "Your friend", X, O)
  if (previous.seats[other] === "open" && game.seats[other] === "human") return t("{name} joined", { name });
  if (game.status !== "playing") return "";
  // Translators: {name} a name (or "Your friend", X, O)
  if (previous.online[other] && !game.online[other]) return t("{name} left", { name });
  // Translators: {name} a name (or "Your friend", X, O)
  if (!previous.online[other] && game.online[other]) return t("{name} is back", { name });
  return "";
}

/**
 * What a watcher of a friend game is told of the seats: who joined, went away or came back since
 * `previous`; with no `previous` (it just came), who is away now. "Ben is away · O is back".
 */
function watchedPresence(previous, game) {
  const same = previous?.id === game.id;
  const news = ["X", "O"].map((side) => {
    const name = sideName(game, side);
    if (same && previous.seats[side] === "open" && game.seats[side] === "human") {
      // Translators: {name} a name (or "Your friend", X, O)
      return t("{name} joined", { name });
    }
    if (game.status !== "playing" || game.seats[side] !== "human") return "";
    const was = same ? previous.online[side] : true;
    // Translators: {name} a name (or "Your friend", X, O)
    if (was && !game.online[side]) return t("{name} is away", { name });
    // Translators: {name} a name (or "Your friend", X, O)
    if (same && !was && game.online[side]) return t("{name} is back", { name });
    return "";
  });
  return news.filter(Boolean).join(" · ");
}

/** The standing rematch offer of a finished game in words, or "". */
export function describeOffer(game, you) {
  const from = game.offer?.rematch;
  if (!from || game.status === "playing") return "";
  if (from === you) {
    const other = opponentOf(you);
    // An offer to somebody who has gone waits for nobody: say so (Withdraw takes it back).
    if (other && game.online?.[other] === false) {
      // Translators: {name} a name (or "Your friend", X, O)
      return t("Rematch offered — {name} has left", { name: friendName(game, you, { start: true }) });
    }
    // Translators: {name} a name (or "Your friend", X, O)
    return t("Rematch offered — waiting for {name}", { name: friendName(game, you) });
  }
  const name = opponentOf(you) ? friendName(game, you, { start: true }) : sideName(game, from);
  // Translators: {name} a name (or "Your friend", X, O)
  return t("{name} wants a rematch", { name });
}

/**
 * News of the offer between two views of the same game, or "". `withdrawn`: this page took
 * the offer back (or declined it) itself, so nothing is news.
 */
export function describeOfferChange(previous, game, you, { withdrawn = false } = {}) {
  if (!previous || previous.id !== game.id || !opponentOf(you)) return "";
  const before = previous.offer?.rematch ?? null;
  const now = game.offer?.rematch ?? null;
  if (before === now || withdrawn) return "";
  const Friend = friendName(game, you, { start: true });
  // Translators: {name} a name (or "Your friend", X, O)
  if (now && now !== you) return t("{name} wants a rematch", { name: Friend });
  if (before && !now && !game.rematch) {
    // Translators: {name} a name (or "Your friend", X, O)
    return before === you ? t("{name} declined the rematch", { name: Friend })
      // Translators: {name} a name (or "Your friend", X, O)
      : t("{name} took the offer back", { name: Friend });
  }
  return "";
}

/** A reaction said out loud: "Ben: applause" (`words`: what the reaction says). */
export function describeReaction(game, you, from, words) {
  let name = sideName(game, from);
  if (from === you) name = t("You");
  else if (opponentOf(you)) name = friendName(game, you, { start: true });
  // Translators: {name} a name (or "Your friend", X, O); {words} a reaction ("good game")
  return t("{name}: {words}", { name, words });
}
