// The words for a game as one receiver sees it: names, whose turn, endings, news of the seats,
// offers, reactions, the score, the review's summary. Pure functions of the view.
import {
  BOARD_NAMES, CELL_NAMES, boardWords, number, placeWords, squareInSentence, t, tn, ultimateParts,
} from "./squares.js";

/** Where the side on move may play in an ultimate game, as the view's `targets` (PROTOCOL v4)
 * say, or "": "bottom right board" (short: it follows "Your turn · " on a 320 px phone). */
export function playWhere(game) {
  if (game.variant !== "ultimate" || game.status !== "playing") return "";
  const targets = game.targets ?? [];
  if (targets.length === 1) return BOARD_NAMES[targets[0]];
  const open = [...(game.boards ?? "")].filter((state) => state === ".").length;
  if (!targets.length || targets.length === open) return t("any open board");
  // "top or bottom left board": one noun for the places it lists.
  return t("{places} board", { places: targets.map((b) => CELL_NAMES[b]).join(t(" or ")) });
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

/** A level's name: "Easy", "Perfect". */
export function levelWords(level) {
  const names = { easy: t("Easy"), medium: t("Medium"), hard: t("Hard"), perfect: t("Perfect") };
  return names[level] ?? (level ? level[0].toUpperCase() + level.slice(1) : "");
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

// Letters of a right-to-left script (Hebrew, Arabic, Syriac, Thaana, N'Ko, their forms).
const RIGHT_TO_LEFT = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFF]/;

/**
 * A person's or a bot's name inside text: between U+2068 (first strong isolate) and U+2069
 * (pop directional isolate), so "Bob (2)!" keeps its order in an Arabic sentence, the tab title
 * and a screen reader's line. Needed where the page or the name runs right to left; a
 * left-to-right name in a left-to-right page reads right without. Never for a field's value.
 */
export function isolate(name) {
  if (!name) return name;
  const page = globalThis.document?.documentElement?.dir;
  return page === "rtl" || RIGHT_TO_LEFT.test(name) ? `\u2068${name}\u2069` : name;
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
  if (name) return isolate(name);
  return start ? t("Your friend") : t("your friend");
}

/** The side or person at `side` for a spectator or pass-and-play: "Ana", or "X". */
export function sideName(game, side) {
  return isolate(nameAt(game, side)) ?? side;
}

/** How a won game was won, told without a point of view: ", X resigned", " on time". */
export function how(game) {
  const loser = opponentOf(game.winner);
  // Translators: {name} a name (or "Your friend", X, O)
  if (game.reason === "resign") return t(", {name} resigned", { name: sideName(game, loser) });
  // Translators: {name} a name (or "Your friend", X, O)
  if (game.reason === "claim") return t(", {name} left", { name: sideName(game, loser) });
  if (game.reason === "time") return t(" on time");
  return "";
}

/** A game told without a point of view: "X to move", "O wins", "Draw". */
function neutral(game) {
  if (game.status === "aborted") return t("Game cancelled");
  if (game.status === "draw") return t("Draw");
  // Translators: {name} a name (or "Your friend", X, O)
  if (game.status === "won") return t("{name} wins", { name: sideName(game, game.winner) }) + how(game);
  // Translators: {name} a name (or "Your friend", X, O)
  return t("{name} to move", { name: sideName(game, game.turn) }) + whereWords(game);
}

/** The end of a game as `you` (a seat) saw it: "You win — Ben resigned", "You resigned". */
function ending(game, you) {
  if (game.status === "aborted") return t("Game cancelled");
  if (game.status === "draw") return t("Draw");
  const friend = friendName(game, you);
  const name = isolate(nameAt(game, opponentOf(you))); // whole sentences without it: "Your friend …"
  if (game.winner === you) {
    // Translators: {friend} their name or "your friend"
    if (game.reason === "claim") return t("You win — {friend} left", { friend });
    if (game.reason === "resign") {
      return game.mode === "ai" ? t("You win — the AI resigned")
        // Translators: {friend} their name or "your friend"
        : t("You win — {friend} resigned", { friend });
    }
    if (game.reason === "time") return t("You win on time");
    return t("You win!");
  }
  if (game.reason === "resign") return t("You resigned");
  if (game.mode === "ai") return t("The AI wins");
  // Translators: {friend} their name or "your friend"
  if (game.reason === "time") return t("Out of time — {friend} wins", { friend });
  if (game.reason === "claim") {
    // Translators: {name} a name (or "Your friend", X, O)
    return name ? t("{name} claimed the win", { name }) : t("Your friend claimed the win");
  }
  // Translators: {name} a name (or "Your friend", X, O)
  return name ? t("{name} wins", { name }) : t("Your friend wins");
}

/** The status line for `game` as seen by `you` (a Role). */
export function describe(game, you) {
  // Translators: {game} the game's status line
  if (you === "spectator") return t("You are watching — {game}", { game: neutral(game) });
  const other = opponentOf(you);
  if (!other) return neutral(game);
  if (game.status !== "playing") return ending(game, you);
  // Drawn from this device offline: no move can be made here, so nobody's turn is offered.
  if (game.offline) return t("Offline · the game as you last saw it");
  if (game.mode === "friend") {
    if (game.seats[other] === "open") return t("Waiting for your friend to join");
    // A friend not here yet for a game with no moves (a rematch their page is opening) is
    // waited for. One who went away mid-game changes nothing here: the turn stays the main
    // status (the player on move must move, or lose on time) and the absence is the second
    // line (absence.js).
    if (!game.online[other] && game.moves.length <= (game.start ?? 0)) {
      // Translators: {friend} their name or "your friend"
      return t("Waiting for {friend}", { friend: friendName(game, you) });
    }
  }
  if (game.turn === you) return t("Your turn") + whereWords(game);
  if (game.mode !== "ai") {
    const name = isolate(nameAt(game, other));
    // Translators: {name} a name (or "Your friend", X, O)
    return name ? t("{name}'s turn", { name }) : t("Your friend's turn");
  }
  // A crowd shortens every search (the view's `budget` under its level's `budget_full`).
  const hurried = game.budget && game.budget_full && game.budget < game.budget_full;
  return hurried ? t("AI is playing faster than usual…") : t("AI is thinking…");
}

/**
 * A timed game's fair start said, or "": how soon the side on move must make its first move
 * (the view's `first_move` window, which its clock counts down) and what missing it does. Short
 * enough for the news line of a 320 px phone.
 */
export function describeFirstMove(game, you) {
  if (!game.first_move || game.status !== "playing" || !game.turn) return "";
  const seconds = number(game.first_move);
  // Translators: {seconds} a number of seconds
  if (game.turn === you) return t("Move within {seconds} s, or it's cancelled", { seconds });
  // Translators: {seconds} a number of seconds
  return t("No move in {seconds} s cancels the game", { seconds });
}

/** Who made the last move and where: "AI played the centre". The board says whose mark. */
export function describeLastMove(game, you) {
  if (!game.moves.length) return "";
  const cell = game.moves[game.moves.length - 1];
  const mark = game.board[cell];
  const who = opponentOf(you) ? friendName(game, you, { start: true }) : sideName(game, mark);
  if (game.variant === "ultimate") {
    const { board, square } = ultimateParts(cell);
    const where = { square: squareInSentence(square), board: boardWords(board) };
    // Translators: {square} a square in a sentence ("the top left"), {board} "the centre board".
    if (mark === you) return t("You played {square} in {board}", where);
    // Translators: {square} a square ("top left"); {board} a small board ("the centre board")
    if (game.seats[mark] === "ai") return t("AI played {square} in {board}", where);
    // Translators: {who} a name, "Your friend", X or O; {square} a square ("top left"); {board} a …
    return t("{who} played {square} in {board}", { who, ...where });
  }
  const place = placeWords(cell, game.variant);
  // Translators: {place} a square in a sentence ("the top left")
  if (mark === you) return t("You played {place}", { place });
  // Translators: {place} a square in a sentence ("the top left")
  if (game.seats[mark] === "ai") return t("AI played {place}", { place });
  // Translators: {who} a name, "Your friend", X or O; {place} a square in a sentence ("the top lef…
  return t("{who} played {place}", { who, place });
}

/** How many moves were made while the player was away (the board marks the last one). */
export function describeAway(missed) {
  return tn("{n} move while you were away", "{n} moves while you were away", missed);
}

/** A line to open a game with no moves yet. */
export function describeStart(game, you) {
  if (game.start > 0) {
    // Translators: {number} a move's number
    return t("Practice from move {number} · not counted", { number: number(game.start + 1) });
  }
  const ultimate = game.variant === "ultimate" ? `${t("Ultimate")} · ` : "";
  // A watcher reads who plays whom, a bot's game against the AI too.
  if (you === "spectator" && game.mode === "ai") {
    return ultimate + t("Watching {x} vs {o}",
      { x: seatName(game, "X", you), o: seatName(game, "O", you) });
  }
  if (game.mode === "ai") {
    // A whole sentence per level: each language inflects the level's word as it needs.
    const against = {
      // Translators: {side} is X or O; a sentence per level, to inflect the level's word.
      easy: t("You play {side} against the easy AI", { side: you }),
      // Translators: {side} X or O
      medium: t("You play {side} against the medium AI", { side: you }),
      // Translators: {side} X or O
      hard: t("You play {side} against the hard AI", { side: you }),
      // Translators: {side} X or O
      perfect: t("You play {side} against the perfect AI", { side: you }),
    };
    // Translators: {side} X or O
    return ultimate + (against[game.level] ?? t("You play {side} against the AI", { side: you }));
  }
  if (game.mode === "local") return ultimate + t("Two players, one screen — X starts");
  // The names the seats show: "Watching Ana vs Ben", "Watching Player 1 vs Player 2".
  if (you === "spectator") {
    // Translators: {x} X's name; {o} O's name
    return t("Watching {x} vs {o}", { x: seatName(game, "X", you), o: seatName(game, "O", you) });
  }
  const lead = you === "X" ? t("You play X and move first") : t("You play O — X moves first");
  if (!game.clock) return lead;
  // Translators: {seconds} is the clock's time for each move, a number.
  const clock = t("{seconds} s a move", { seconds: number(game.clock) });
  return `${lead} · ${clock}`;
}

/**
 * The name on a seat's chip: "Ana", "You", "Ben", "Friend", "AI · Hard", "Player 1". The
 * player's own seat shows their name once they have one (its pencil says whose it is).
 */
export function seatName(game, side, you) {
  // Translators: {level} a level's name ("Easy")
  if (game.seats[side] === "ai") return t("AI · {level}", { level: levelWords(game.level) });
  if (game.mode === "friend" && game.seats[side] === "open" && side !== you) return t("Waiting…");
  const name = isolate(nameAt(game, side));
  if (side === you) return name ?? t("You");
  if (name) return name;
  if (game.mode === "friend" && opponentOf(you)) return t("Friend");
  return side === "X" ? t("Player 1") : t("Player 2");
}

/** Phrases as one line to be read out: "AI played the centre. Your turn". */
export function sentences(parts) {
  return parts.filter(Boolean).reduce(
    (line, part) => (line ? `${line}${/[.!?…。؟]$/.test(line) ? "" : "."} ${part}` : part), "");
}

