// The words for a game as one receiver sees it: names, whose turn, endings, news of the seats,
// offers, reactions, the score, the review's summary. Pure functions of the view.
import { CELL_NAMES, placeWords } from "./squares.js";

/** Where the side on move may play in an ultimate game, as the view's `targets` (PROTOCOL v4)
 * say, or "": "bottom right board" (short: it follows "Your turn · " on a 320 px phone). */
export function playWhere(game) {
  if (game.variant !== "ultimate" || game.status !== "playing") return "";
  const targets = game.targets ?? [];
  if (targets.length === 1) return `${CELL_NAMES[targets[0]]} board`;
  const open = [...(game.boards ?? "")].filter((state) => state === ".").length;
  if (!targets.length || targets.length === open) return "any open board";
  return `${targets.map((b) => CELL_NAMES[b]).join(" or ")} board`;
}

function whereWords(game) {
  const where = playWhere(game);
  return where ? ` · ${where}` : "";
}

/** The seat across the board from `you`, or null for local players and spectators. */
export function opponentOf(you) {
  if (you === "X") return "O";
  if (you === "O") return "X";
  return null;
}

function capitalize(word) {
  return word ? word[0].toUpperCase() + word.slice(1) : "";
}

/**
 * The name of the person (or bot) at `side` for a sentence, or null when they have none. A
 * version 3 view may name a bot as {name, bot: true}; a version 2 one sends a plain string.
 */
export function nameAt(game, side) {
  if (game.mode === "local") return null;
  const name = game.names?.[side];
  return (typeof name === "object" && name !== null ? name.name : name) || null;
}

/** Whether the seat at `side` is a bot's (PROTOCOL v3 "Bots"). */
export function isBot(game, side) {
  const name = game.names?.[side];
  return typeof name === "object" && name !== null && name.bot === true;
}

/**
 * The opponent of `you` in a sentence: their name, or "your friend" ("Your friend" when it
 * starts the sentence).
 */
export function friendName(game, you, { start = false } = {}) {
  const name = nameAt(game, opponentOf(you));
  if (name) return name;
  return start ? "Your friend" : "your friend";
}

/** The side or person at `side` for a spectator or pass-and-play: "Ana", or "X". */
export function sideName(game, side) {
  return nameAt(game, side) ?? side;
}

/** How a won game was won, told without a point of view: ", X resigned", " on time". */
function how(game) {
  const loser = opponentOf(game.winner);
  if (game.reason === "resign") return `, ${sideName(game, loser)} resigned`;
  if (game.reason === "claim") return `, ${sideName(game, loser)} left`;
  if (game.reason === "time") return " on time";
  return "";
}

/** A game told without a point of view: "X to move", "O wins", "Draw". */
function neutral(game) {
  if (game.status === "aborted") return "Game cancelled";
  if (game.status === "draw") return "Draw";
  if (game.status === "won") return `${sideName(game, game.winner)} wins${how(game)}`;
  return `${sideName(game, game.turn)} to move${whereWords(game)}`;
}

/** The end of a game as `you` (a seat) saw it: "You win — Ben resigned", "You resigned". */
function ending(game, you) {
  if (game.status === "aborted") return "Game cancelled";
  if (game.status === "draw") return "Draw";
  const friend = friendName(game, you);
  const Friend = friendName(game, you, { start: true });
  if (game.winner === you) {
    if (game.reason === "claim") return `You win — ${friend} left`;
    if (game.reason === "resign") return game.mode === "ai" ? "You win — the AI resigned" : `You win — ${friend} resigned`;
    if (game.reason === "time") return "You win on time";
    return "You win!";
  }
  if (game.reason === "resign") return "You resigned";
  if (game.mode === "ai") return "The AI wins";
  if (game.reason === "time") return `Out of time — ${friend} wins`;
  if (game.reason === "claim") return `${Friend} claimed the win`;
  return `${Friend} wins`;
}

/** The status line for `game` as seen by `you` (a Role). */
export function describe(game, you) {
  if (you === "spectator") return `You are watching — ${neutral(game)}`;
  const other = opponentOf(you);
  if (!other) return neutral(game);
  if (game.status !== "playing") return ending(game, you);
  const Friend = friendName(game, you, { start: true });
  if (game.mode === "friend") {
    if (game.seats[other] === "open") return "Waiting for your friend to join";
    // A friend not here yet for a game with no moves (a rematch their page is opening) is
    // waited for. One who went away mid-game changes nothing here: the turn stays the main
    // status (the player on move must move, or lose on time) and the absence is the second
    // line (absence.js).
    if (!game.online[other] && game.moves.length <= (game.start ?? 0)) {
      return `Waiting for ${friendName(game, you)}`;
    }
  }
  if (game.turn === you) return `Your turn${whereWords(game)}`;
  if (game.mode !== "ai") return `${Friend}'s turn`;
  // A crowd shortens every search (the view's `budget` under its level's `budget_full`).
  const hurried = game.budget && game.budget_full && game.budget < game.budget_full;
  return hurried ? "AI is playing faster than usual…" : "AI is thinking…";
}

/**
 * A timed game's fair start said, or "": how soon the side on move must make its first move
 * (the view's `first_move` window, which its clock counts down) and what missing it does. Short
 * enough for the news line of a 320 px phone.
 */
export function describeFirstMove(game, you) {
  if (!game.first_move || game.status !== "playing" || !game.turn) return "";
  if (game.turn === you) return `Move within ${game.first_move} s, or it's cancelled`;
  return `No move in ${game.first_move} s cancels the game`;
}

/** Who made the last move and where: "AI played the centre". The board says whose mark. */
export function describeLastMove(game, you) {
  if (!game.moves.length) return "";
  const cell = game.moves[game.moves.length - 1];
  const mark = game.board[cell];
  let who = sideName(game, mark);
  if (mark === you) who = "You";
  else if (game.seats[mark] === "ai") who = "AI";
  else if (opponentOf(you)) who = friendName(game, you, { start: true });
  return `${who} played ${placeWords(cell, game.variant)}`;
}

/** A line to open a game with no moves yet. */
export function describeStart(game, you) {
  if (game.start > 0) return `Practice from move ${game.start + 1} · not counted`;
  const ultimate = game.variant === "ultimate" ? "Ultimate · " : "";
  if (game.mode === "ai") return `${ultimate}You play ${you} against the ${game.level} AI`;
  if (game.mode === "local") return `${ultimate}Two players, one screen — X starts`;
  // The names the seats show: "Watching Ana vs Ben", "Watching Player 1 vs Player 2".
  if (you === "spectator") return `Watching ${seatName(game, "X", you)} vs ${seatName(game, "O", you)}`;
  const clock = game.clock ? ` · ${game.clock} s a move` : "";
  return `${you === "X" ? "You play X and move first" : "You play O — X moves first"}${clock}`;
}

/**
 * The name on a seat's chip: "Ana", "You", "Ben", "Friend", "AI · Hard", "Player 1". The
 * player's own seat shows their name once they have one (its pencil says whose it is).
 */
export function seatName(game, side, you) {
  if (game.seats[side] === "ai") return `AI · ${capitalize(game.level)}`;
  if (game.mode === "friend" && game.seats[side] === "open" && side !== you) return "Waiting…";
  const name = nameAt(game, side);
  if (side === you) return name ?? "You";
  if (name) return name;
  if (game.mode === "friend" && opponentOf(you)) return "Friend";
  return side === "X" ? "Player 1" : "Player 2";
}

/** The running score of a series: "Ana 2 · 1 draw · 1 Ben", or "" when none is kept. */
export function scoreWords(game, you) {
  const { score } = game;
  if (!score) return "";
  const label = (side) => {
    if (game.mode === "local") return side;
    const name = nameAt(game, side);
    if (side === you) return name ?? "You";
    return name ?? (opponentOf(you) ? "Friend" : side);
  };
  const draws = `${score.draws} ${score.draws === 1 ? "draw" : "draws"}`;
  return `${label("X")} ${score.X} · ${draws} · ${score.O} ${label("O")}`;
}

function hintCount(n) {
  if (!n) return "no hints";
  return n === 1 ? "with 1 hint" : `with ${n} hints`;
}

/** The line on top of a finished game's review: "You won — with 2 hints". */
export function summarize(game, you) {
  const other = opponentOf(you);
  const hints = game.hints ?? { X: 0, O: 0 };
  const friend = friendName(game, you);
  const Friend = friendName(game, you, { start: true });
  let result;
  if (game.status === "aborted") result = "Cancelled";
  else if (game.status === "draw") result = "Draw";
  else if (!other) result = `${sideName(game, game.winner)} won${how(game)}`;
  else if (game.winner === you) {
    result = {
      claim: `You won — ${friend} left`,
      resign: `You won — ${game.mode === "ai" ? "the AI" : friend} resigned`,
      time: "You won on time",
    }[game.reason] ?? "You won";
  } else if (game.reason === "resign") result = "You resigned";
  else if (game.mode === "ai") result = "The AI won";
  else {
    result = { claim: `${Friend} claimed the win`, time: `${Friend} won on time` }[game.reason]
      ?? `${Friend} won`;
  }
  let taken = "";
  if (game.mode === "ai" && other) taken = hintCount(hints[you]);
  else if (game.mode !== "friend") {
    const total = hints.X + hints.O;
    taken = total ? `${hintCount(total)} (X ${hints.X}, O ${hints.O})` : hintCount(0);
  }
  const plain = !game.reason || game.reason === "line";
  const practice = game.start > 0 ? "Practice · " : "";
  return `${practice}${result}${taken && plain && game.status !== "aborted" ? ` — ${taken}` : ""}`;
}

/** Phrases as one line to be read out: "AI played the centre. Your turn". */
export function sentences(parts) {
  return parts.filter(Boolean).reduce(
    (line, part) => (line ? `${line}${/[.!?…]$/.test(line) ? "" : "."} ${part}` : part), "");
}
