// Words on the page: the aria-live status line, move news, refusals, the banner, players, the record.

export const CELL_NAMES = [
  "top left", "top", "top right",
  "left", "centre", "right",
  "bottom left", "bottom", "bottom right",
];

const REFUSALS = {
  occupied: "That square is taken",
  not_your_turn: "Wait for your turn",
  game_over: "The game is over — start a new one",
  spectator: "You are watching this game",
  rate_limited: "Too fast — give it a moment",
  stale: "The board had changed — here is the latest",
  not_found: "That game does not exist",
  unavailable: "That did not go through — try again",
  internal: "Something went wrong on the server — try again",
  bad_request: "The server did not understand that",
  timeout: "The server did not answer — try again",
  offline: "You are offline — reconnecting…",
  bad_answer: "The server sent something odd — try again",
};

const NOTICE_MS = 4500;

/** The seat across the board from `you`, or null for local players and spectators. */
export function opponentOf(you) {
  if (you === "X") return "O";
  if (you === "O") return "X";
  return null;
}

function capitalize(word) {
  return word ? word[0].toUpperCase() + word.slice(1) : "";
}

/** A game told without a point of view: "X to move", "O wins", "Draw". */
function neutral(game) {
  if (game.status === "draw") return "Draw";
  if (game.status === "won") return `${game.winner} wins`;
  return `${game.turn} to move`;
}

/** The status line for `game` as seen by `you` (a Role). */
export function describe(game, you) {
  if (you === "spectator") return `You are watching — ${neutral(game)}`;
  const other = opponentOf(you);
  if (!other) return neutral(game);
  const ai = game.mode === "ai";
  if (game.status === "draw") return "Draw";
  if (game.status === "won") {
    if (game.winner === you) return game.reason === "claim" ? "You win — your friend left" : "You win!";
    return ai ? "The AI wins" : "Your friend wins";
  }
  if (game.mode === "friend") {
    if (game.seats[other] === "open") return "Waiting for your friend to join";
    if (!game.online[other]) return "Your friend disconnected";
  }
  if (game.turn === you) return "Your turn";
  return ai ? "AI is thinking…" : "Your friend's turn";
}

/** Who made the last move and where: "AI played the centre". */
export function describeLastMove(game, you) {
  if (!game.moves.length) return "";
  const cell = game.moves[game.moves.length - 1];
  const mark = game.moves.length % 2 === 1 ? "X" : "O";
  let who = mark;
  if (mark === you) who = "You";
  else if (game.seats[mark] === "ai") who = "AI";
  else if (opponentOf(you)) who = "Your friend";
  return `${who} played the ${CELL_NAMES[cell]}`;
}

/** A line to open a game with no moves yet. */
export function describeStart(game, you) {
  if (game.start > 0) return `Practice from move ${game.start + 1} · not counted`;
  if (game.mode === "ai") return `You play ${you} against the ${game.level} AI`;
  if (game.mode === "local") return "Two players, one screen — X starts";
  if (you === "spectator") return "";
  return you === "X" ? "You play X and move first" : "You play O — X moves first";
}

/** "X top left": one move of a game, by its index in the move list. */
export function moveWords(ply, cell) {
  return `${ply % 2 === 0 ? "X" : "O"} ${CELL_NAMES[cell]}`;
}

/** "the centre", "the top left or the bottom right": cells in a sentence. */
export function cellsWords(cells) {
  return cells.map((cell) => `the ${CELL_NAMES[cell]}`).join(" or ");
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

function hintCount(n) {
  if (!n) return "no hints";
  return n === 1 ? "with 1 hint" : `with ${n} hints`;
}

/** The line on top of a finished game's review: "You won — with 2 hints". */
export function summarize(game, you) {
  const other = opponentOf(you);
  const hints = game.hints ?? { X: 0, O: 0 };
  let result;
  if (game.status === "draw") result = "Draw";
  else if (!other) result = `${game.winner} won`;
  else if (game.winner === you) result = game.reason === "claim" ? "You won — your friend left" : "You won";
  else result = game.mode === "ai" ? "The AI won" : "Your friend won";
  let taken = "";
  if (game.mode === "ai" && other) taken = hintCount(hints[you]);
  else if (game.mode !== "friend") {
    const total = hints.X + hints.O;
    taken = total ? `${hintCount(total)} (X ${hints.X}, O ${hints.O})` : hintCount(0);
  }
  const practice = game.start > 0 ? "Practice · " : "";
  return `${practice}${result}${taken && game.reason !== "claim" ? ` — ${taken}` : ""}`;
}

/** Phrases as one line to be read out: "AI played the centre. Your turn". */
export function sentences(parts) {
  return parts.filter(Boolean).reduce(
    (line, part) => (line ? `${line}${/[.!?…]$/.test(line) ? "" : "."} ${part}` : part), "");
}

/** The message for a refused event. */
export function refusalText(error, event) {
  const code = error?.code;
  if (event === "claim" && code === "not_allowed") {
    return "Not yet — your friend must be away for a full minute";
  }
  if (code === "not_allowed") {
    const why = error?.message ? `: ${error.message}` : "";
    return `That is not allowed right now${why}`;
  }
  return REFUSALS[code] ?? (error?.message || "Something went wrong — try again");
}

/** The names on the two player chips, and each seat's presence. */
function seatsOf(game, you) {
  const names = { X: "Player 1", O: "Player 2" };
  const presence = { X: "", O: "" };
  for (const side of ["X", "O"]) {
    if (side === you) names[side] = "You";
    else if (game.seats[side] === "ai") names[side] = `AI · ${capitalize(game.level)}`;
    else if (game.mode === "friend" && opponentOf(you)) names[side] = "Friend";
    if (game.mode === "friend") {
      if (game.seats[side] === "open") {
        presence[side] = "open";
        if (side !== you) names[side] = "Waiting…";
      } else {
        presence[side] = game.online[side] ? "online" : "offline";
      }
    }
  }
  return { names, presence };
}

/** Wire the words of the page to their elements. */
export function createStatus({
  status, detail, notice, announcer, banner, bannerText, players, record,
}) {
  let noticeTimer = 0;
  let announceFrame = 0;

  function clearNotice() {
    clearTimeout(noticeTimer);
    notice.textContent = "";
    notice.parentElement.classList.remove("has-notice");
  }

  return {
    /** Set the status line (and the tab title). */
    say(text) {
      if (status.textContent !== text) status.textContent = text;
      document.title = `${text} · Tic-tac-toe`;
    },

    /** Set the smaller line under the status: move news, presence. */
    news(text) {
      if (detail.textContent !== text) detail.textContent = text;
    },

    /**
     * Say `text` through the page's one polite live region (screen readers read it once).
     * The status and news lines are not live themselves: this says both, in order, once.
     */
    announce(text) {
      cancelAnimationFrame(announceFrame);
      if (announcer.textContent !== text) {
        announcer.textContent = text;
        return;
      }
      // Same words again (a second new game): empty first, so that they are read again.
      announcer.textContent = "";
      announceFrame = requestAnimationFrame(() => { announcer.textContent = text; });
    },

    /** Show a refusal for a while, in place of the news line. */
    notice(text) {
      clearTimeout(noticeTimer);
      // Same text twice: empty first so screen readers announce it again.
      notice.textContent = "";
      requestAnimationFrame(() => { notice.textContent = text; });
      notice.parentElement.classList.add("has-notice");
      noticeTimer = setTimeout(clearNotice, NOTICE_MS);
    },

    clearNotice,

    /** The connection banner: "up", "retrying", "trouble" (the store is down) or "down". */
    connection(state) {
      if (state === "up") {
        banner.hidden = true;
        return;
      }
      const texts = {
        retrying: "Connection lost — reconnecting…",
        trouble: "Server trouble — retrying…",
        down: "Cannot reach the server — reload the page",
      };
      bannerText.textContent = texts[state] ?? texts.down;
      banner.hidden = false;
    },

    /** The two player chips: names, whose turn, who won, who is online. */
    players(game, you) {
      const { names, presence } = seatsOf(game, you);
      for (const [side, chip] of Object.entries(players)) {
        chip.querySelector(".player-name").textContent = names[side];
        chip.dataset.presence = presence[side];
        chip.classList.toggle("is-turn", game.status === "playing" && game.turn === side);
        chip.classList.toggle("is-winner", game.winner === side);
      }
    },

    /** The record against the AI, level by level; `level` is highlighted. */
    record(stats, level) {
      for (const row of record.querySelectorAll("tr[data-level]")) {
        if (stats) {
          const line = stats[row.dataset.level] ?? { wins: 0, draws: 0, losses: 0 };
          for (const cell of row.querySelectorAll("[data-stat]")) {
            cell.textContent = String(line[cell.dataset.stat] ?? 0);
          }
        }
        row.classList.toggle("is-current", row.dataset.level === level);
      }
    },
  };
}
