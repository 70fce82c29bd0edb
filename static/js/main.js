// Wiring: builds the pieces, connects them to the server, and holds the page's only state.
import { connect } from "./socket.js";
import { createBoard } from "./board.js";
import {
  cellsWords, createStatus, describe, describeLastMove, describeStart, opponentOf, refusalText,
  sentences, summarize,
} from "./status.js";
import { createControls, loadPreferences, newGamePayload, savePreferences } from "./controls.js";
import { createShare } from "./share.js";
import { createLearn, loadEvaluations } from "./learn.js";
import { createReview } from "./review.js";
import { createDeck } from "./deck.js";
import { createSound } from "./sound.js";

const CLAIM_AFTER_MS = 60_000;
const byId = (id) => document.getElementById(id);
const app = byId("app");
const calm = window.matchMedia("(prefers-reduced-motion: reduce)");

const state = {
  game: null,          // the snapshot on screen
  you: null,           // our Role in it
  link: null,          // "/g/<id>" of a friend game
  record: null,        // wins/draws/losses against the AI, per level
  busy: false,         // a move is on its way or its AI reply is being shown
  held: null,          // the newest push that came in while busy
  rematching: false,   // our own rematch call is out
  awaySince: null,     // when we saw the opponent go offline
  claimTimer: 0,
  urlGame: app.dataset.gameId || null,
  evaluations: loadEvaluations(), // the switch is on
  analysis: null,      // {id, version, moves}: the analyze answer for the snapshot on screen
  asking: null,        // "id:version" of the evaluations call on its way
  hint: null,          // {id, version, cells}: the last hint, shown until the next move
  review: null,        // {id, positions, mistakes, ply, evaluations}: a finished game's review;
                       // ply on screen; evaluations: the analyze moves of past positions, by ply
  reviewAsking: null,  // id of the game whose review is on its way
  pastTimer: 0,        // a past position's evaluations are asked for once the stepping pauses
  trouble: false,      // the server's store is down: the banner stays until a call succeeds
  retryTimer: 0,
};

const status = createStatus({
  status: byId("status"),
  detail: byId("detail"),
  notice: byId("notice"),
  announcer: byId("announce"),
  banner: byId("connection"),
  bannerText: byId("connection-text"),
  players: { X: byId("player-x"), O: byId("player-o") },
  record: byId("record"),
});
const board = createBoard(byId("board"), byId("strike"), { onPlay: play });
const deck = createDeck(byId("deck-tabs"), {
  // The board's replay belongs to the review: away from it, the board shows how the game ended.
  onLeave(page) {
    if (page === "deck-review") stepReview("last");
  },
});
const sound = createSound(byId("sound"));
const share = createShare(byId("share"));
const learn = createLearn(
  { evaluations: byId("evaluations"), hint: byId("hint-button"), count: byId("hint-count"),
    note: byId("learn-note") },
  {
    onEvaluations(on) {
      state.evaluations = on;
      if (state.game) paint(state.game);
    },
    onHint: hint,
  },
);
learn.reflect(state.evaluations);
const review = createReview(byId("review"), {
  onStep: stepReview,
  onShow(side) {
    const mistake = state.review?.mistakes?.[side];
    if (!mistake) return;
    goReview(mistake.ply + 1);
    byId("board-wrap").scrollIntoView({ block: "nearest", behavior: "auto" });
  },
  onTry: tryAgain,
});
const controls = createControls(
  {
    form: byId("settings"),
    fields: { side: byId("field-side"), level: byId("field-level") },
    newGame: byId("new-game"),
    rematch: byId("rematch"),
    claim: byId("claim"),
  },
  {
    onSettings(settings) {
      savePreferences(settings);
      startGame(settings);
    },
    onNewGame: startGame,
    onRematch: rematch,
    onClaim: claim,
  },
);
const server = connect({
  onConnect() {
    status.connection("up");
    // Events sent while we were away are lost: the snapshot from join is the truth.
    join(state.game ? state.game.id : state.urlGame);
  },
  onDisconnect({ retrying }) {
    status.connection(retrying ? "retrying" : "down");
  },
  onGame(game) {
    if (!state.game || game.id !== state.game.id) return;
    if (state.busy) {
      if (!state.held || game.version >= state.held.version) state.held = game;
      return;
    }
    show(game);
  },
  onRecord(record) {
    state.record = record;
    status.record(record, state.game?.level);
  },
  onRematch(push) {
    if (state.rematching || !state.game || push.from !== state.game.id) return;
    join(push.game.id);
  },
});

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });
const seated = () => state.you === "X" || state.you === "O" || state.you === "both";

function canPlay(game) {
  return game.status === "playing" && (state.you === "both" || state.you === game.turn);
}

function canClaim(game) {
  const other = opponentOf(state.you);
  // The server gives the win to the player on move only.
  return game.mode === "friend" && game.status === "playing" && game.turn === state.you
    && game.seats[other] === "human" && !game.online[other]
    && state.awaySince !== null && Date.now() - state.awaySince >= CLAIM_AFTER_MS;
}

/** Follow the opponent's connection; returns news of a change, or "". */
function trackPresence(previous, game) {
  const other = game.mode === "friend" ? opponentOf(state.you) : null;
  if (!other || game.seats[other] !== "human" || game.online[other] || game.status !== "playing") {
    state.awaySince = null;
    clearTimeout(state.claimTimer);
  } else if (state.awaySince === null) {
    state.awaySince = Date.now();
    clearTimeout(state.claimTimer);
    state.claimTimer = setTimeout(() => paint(state.game), CLAIM_AFTER_MS + 250);
  }
  if (!other || !previous) return "";
  if (previous.seats[other] === "open" && game.seats[other] === "human") return "Your friend joined";
  if (previous.online[other] && !game.online[other]) {
    // The status line already says so: say what happens next.
    return game.turn === state.you
      ? "If they stay away a minute, you can claim the win"
      : "Waiting for them to come back";
  }
  if (!previous.online[other] && game.online[other]) return "Your friend is back";
  return "";
}

/** Whether the same game at the same version as `game`. */
function current(mark, game) {
  return Boolean(mark) && mark.id === game.id && mark.version === game.version;
}

/** Whether the board should carry evaluations now: only ever for the viewer's own move. */
function wantsEvaluations(game) {
  return state.evaluations && game.mode !== "friend" && canPlay(game) && !state.busy;
}

/** The review's position when it is not the end of the game, else null. */
function replayPly(game) {
  const { review: seen } = state;
  if (!seen || seen.id !== game.id || !seen.positions) return null;
  return seen.ply === game.moves.length ? null : seen.ply;
}

/** The board: the game, or the position the review is on, with what goes on top of it. */
function paintBoard(game, fresh) {
  const ply = replayPly(game);
  if (ply === null) {
    board.render(game, { playable: canPlay(game), fresh });
  } else {
    // A past position, straight from the server's list: nothing to play, nothing won yet.
    board.render({
      board: state.review.positions[ply], moves: game.moves.slice(0, ply), line: null,
      winner: null, status: "replay", turn: null,
    }, { fresh });
  }
  board.replaying(ply !== null);
  if (state.review?.id === game.id && game.status !== "playing") {
    const at = ply ?? game.moves.length;
    const mistake = Object.values(state.review.mistakes ?? {}).find((m) => m && m.ply + 1 === at);
    board.flag(mistake ? { mistake: mistake.cell, better: mistake.best } : {});
    // A past position can carry its evaluations too, for the side to move there; not where a
    // mistake is flagged, whose "better" squares are the other side's.
    const evaluating = ply !== null && !mistake && offersLearning(game) && state.evaluations;
    const known = evaluating ? state.review.evaluations?.[ply] : null;
    board.evaluate(known ?? null);
    clearTimeout(state.pastTimer);
    if (evaluating && !known) state.pastTimer = setTimeout(() => askPastEvaluations(game, ply), 120);
    return;
  }
  const evaluating = wantsEvaluations(game);
  board.evaluate(evaluating && current(state.analysis, game) ? state.analysis.moves : null);
  board.suggest(current(state.hint, game) ? state.hint.cells : []);
  if (evaluating && !current(state.analysis, game)) askEvaluations(game);
}

/** Why hints and evaluations are not offered in `game`, or "" when they are. */
function whyNoLearning(game) {
  if (state.you === "spectator") return "You are watching: hints and evaluations are for the players";
  if (game.mode === "friend") {
    return "No hints or evaluations against a friend: the review opens when the game ends";
  }
  return "";
}

function offersLearning(game) {
  return !whyNoLearning(game);
}

/** The switch and Hint under the board, or why they are not there. */
function offerLearning(game) {
  const why = whyNoLearning(game);
  const hints = game.hints ?? { X: 0, O: 0 };
  learn.offer({
    why,
    canHint: !why && canPlay(game) && !state.busy,
    used: state.you === "both" ? hints.X + hints.O : (hints[state.you] ?? 0),
  });
}

/** Who sat where, for the review: {X: "You", O: "AI"}; nothing for pass-and-play or watchers. */
function sideNames(game) {
  const other = opponentOf(state.you);
  if (!other) return {};
  return { [state.you]: "You", [other]: game.mode === "ai" ? "AI" : "Friend" };
}

/** The review card: open (and asked for) once a game is over, closed while one is on. */
function offerReview(game) {
  if (game.status === "playing") {
    state.review = null;
    review.close();
    deck.playing();
    return;
  }
  if (state.review?.id !== game.id) {
    state.review = {
      id: game.id, positions: null, mistakes: null, ply: game.moves.length, evaluations: {},
    };
  }
  deck.over(game.id);
  review.open({
    moves: game.moves,
    summary: summarize(game, state.you),
    names: sideNames(game),
    href: game.moves.length ? `${location.origin}/r/${game.moves.join("")}` : "",
  });
  review.at(state.review.ply, game.moves, Boolean(state.review.positions));
  if (!state.review.positions) askReview(game);
}

/** Render `game` everywhere; `fresh` as for board.render; `opening`: the player just started it. */
function paint(game, fresh, opening = false) {
  paintBoard(game, fresh);
  offerLearning(game);
  offerReview(game);
  byId("practice").hidden = !(game.start > 0);
  status.say(describe(game, state.you));
  status.players(game, state.you);
  status.record(state.record, game.level);
  const over = game.status !== "playing";
  controls.offer({ canRematch: over && seated(), canClaim: canClaim(game) });
  const other = opponentOf(state.you);
  if (game.mode === "friend" && other && game.seats[other] === "open") {
    share.show(state.link, { reveal: opening });
  } else {
    share.hide();
  }
}

/** Put a snapshot of the current game on screen, unless it is older than what is there. */
function show(game, { opening = false } = {}) {
  if (state.game && state.game.id !== game.id) return;
  const previous = state.game;
  if (previous && game.version < previous.version) return;
  const moved = previous ? game.version > previous.version : opening && game.moves.length > 0;
  const presence = trackPresence(previous, game);
  state.game = game;
  let fresh;
  if (moved) fresh = game.moves[game.moves.length - 1];
  else if (!previous) fresh = null;
  paint(game, fresh, opening);
  // A practice game opens on a position: say what it is rather than who moved last.
  const practice = opening && game.start > 0;
  const lastMove = moved && !practice ? describeLastMove(game, state.you) : "";
  const news = [lastMove, presence].filter(Boolean).join(" · ");
  const start = !previous && opening ? describeStart(game, state.you) : "";
  const ended = previous?.status === "playing" && game.status !== "playing";
  if (news) status.news(news);
  else if (!previous) status.news(start);
  else if (ended) status.news(""); // won by a claim: the presence news is over too
  if (moved || ended || presence || !previous) {
    status.announce(sentences([lastMove || start, describe(game, state.you), presence]));
  }
  if (moved || ended) sound.play(tune(game));
}

/** The blip for a snapshot that just changed: a mark placed, or how the game ended. */
function tune(game) {
  if (game.status === "draw") return "draw";
  if (game.status === "won") {
    // Pass-and-play and watchers cheer every win.
    return game.winner === state.you || !opponentOf(state.you) ? "win" : "loss";
  }
  const mover = game.moves.length % 2 === 1 ? "X" : "O";
  const own = state.you === "both" ? mover === "X" : mover === state.you;
  return own ? "move" : "reply";
}

/** Switch to the game of an ok answer of new_game, join or rematch. */
function enter(answer, { opening = false } = {}) {
  const { game } = answer;
  if (!state.game || state.game.id !== game.id) {
    state.game = null;
    state.held = null;
    state.awaySince = null;
    clearTimeout(state.claimTimer);
  }
  state.you = answer.you;
  state.link = game.mode === "friend" ? (answer.link ?? `/g/${game.id}`) : null;
  if (answer.record) state.record = answer.record;
  const preferences = loadPreferences();
  controls.reflect({
    mode: game.mode,
    level: game.level ?? preferences.level,
    you: opponentOf(answer.you) ? answer.you : preferences.you,
  });
  // The address bar names a friend game (so a reload or a copy of it works) and nothing else.
  const path = state.link ?? "/";
  if (location.pathname !== path) history.replaceState(null, "", path);
  show(game, { opening });
  if (!app.dataset.ready) {
    // The first game on screen: how long a visitor waits is measured to here.
    performance.mark("ttt:board-ready");
    app.dataset.ready = canPlay(game) ? "playable" : "shown";
  }
}

async function join(id) {
  const answer = await call("join", id ? { game: id } : {});
  if (!answer.ok) {
    // The store being down is the banner's to say; the retries follow it.
    if (answer.error?.code !== "unavailable") status.notice(refusalText(answer.error, "join"));
    if (id && answer.error?.code === "not_found") {
      state.urlGame = null;
      state.game = null;
      join(null);
    }
    return;
  }
  if (answer.game?.rematch && state.game?.id === answer.game.id) {
    // A rematch started while we were away and its push was lost: follow it.
    join(answer.game.rematch);
    return;
  }
  if (answer.game === null) {
    const { mode, you, level } = loadPreferences();
    // A friend game nobody asked for would be odd: a first visit is against the AI.
    startGame({ mode: mode === "friend" ? "ai" : mode, you, level });
    return;
  }
  enter(answer);
}

async function startGame(settings) {
  status.clearNotice();
  const answer = await call("new_game", newGamePayload(settings));
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "new_game"));
    return;
  }
  enter(answer, { opening: true });
}

async function play(cell) {
  const game = state.game;
  if (!game || state.busy) return;
  if (replayPly(game) !== null) {
    goReview(game.moves.length); // a square pressed during the replay: back to the end
    return;
  }
  status.clearNotice();
  state.busy = true;
  const answer = await call("move", { game: game.id, cell, version: game.version });
  if (!answer.ok) {
    state.busy = false;
    status.notice(refusalText(answer.error, "move"));
    if (state.held) show(state.held);
    state.held = null;
    if (answer.error?.code === "stale") join(game.id);
    return;
  }
  if (answer.played) {
    // Our move first, then the AI's a beat later, so the reply reads as a reply.
    show(answer.played);
    await sleep(calm.matches ? 150 : 450);
  }
  state.busy = false;
  const held = state.held;
  state.held = null;
  show(held && held.version > answer.game.version ? held : answer.game);
  if (answer.record) {
    state.record = answer.record;
    status.record(answer.record, state.game?.level);
  }
}

async function rematch() {
  if (!state.game) return;
  status.clearNotice();
  state.rematching = true;
  const answer = await call("rematch", { game: state.game.id });
  state.rematching = false;
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "rematch"));
    return;
  }
  const pressed = document.activeElement;
  enter(answer, { opening: true });
  // Rematch is disabled again now: a keyboard player goes on where the game is played.
  if (pressed === byId("rematch") || pressed === document.body) board.focus();
}

async function claim() {
  if (!state.game) return;
  const answer = await call("claim", { game: state.game.id });
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "claim"));
    return;
  }
  show(answer.game);
}

/** server.call, and the banner while the server's store is down ("unavailable"). */
async function call(event, payload) {
  const answer = await server.call(event, payload);
  if (answer.ok && state.trouble) {
    state.trouble = false;
    clearTimeout(state.retryTimer);
    status.connection("up");
  } else if (answer.error?.code === "unavailable") {
    status.connection("trouble");
    if (!state.trouble) {
      state.trouble = true;
      retry(2000);
    }
  }
  return answer;
}

/** While the store is down, join again now and then; the first success ends it. */
function retry(delay) {
  clearTimeout(state.retryTimer);
  state.retryTimer = setTimeout(async () => {
    if (!state.trouble) return;
    await join(state.game ? state.game.id : state.urlGame);
    if (state.trouble) retry(Math.min(delay * 2, 16000));
  }, delay);
}

/** Ask the server what each move leads to, for the board on screen. */
async function askEvaluations(game) {
  const key = `${game.id}:${game.version}`;
  if (state.asking === key) return;
  state.asking = key;
  const answer = await call("analyze", { game: game.id });
  if (state.asking === key) state.asking = null;
  if (!answer.ok) {
    if (answer.error?.code !== "unavailable") status.notice(refusalText(answer.error, "analyze"));
    return;
  }
  const now = state.game;
  if (!now || now.id !== game.id || now.version !== game.version || !wantsEvaluations(now)) return;
  // The answer is about the game as the server has it now: use it only if that is the board
  // on screen (the same side to move, the same empty squares).
  const { turn, moves } = answer.analysis;
  const empty = [...now.board].filter((mark) => mark === ".").length;
  if (turn !== now.turn || moves.length !== empty || moves.some((m) => now.board[m.cell] !== ".")) {
    return;
  }
  state.analysis = { id: game.id, version: game.version, moves };
  paintBoard(now);
}

/** Ask the server for a finished game's positions and first mistakes. */
async function askReview(game) {
  if (state.reviewAsking === game.id) return;
  state.reviewAsking = game.id;
  const answer = await call("analyze", { game: game.id });
  state.reviewAsking = null;
  const seen = state.review;
  if (!seen || seen.id !== game.id || seen.positions) return;
  if (!answer.ok || answer.positions?.length !== game.moves.length + 1) {
    review.failed();
    return;
  }
  seen.positions = answer.positions;
  seen.mistakes = answer.review;
  paint(state.game);
  review.fill(answer.review, sideNames(game));
}

/** Ask the server what each move leads to in the position after `ply` of a finished game. */
async function askPastEvaluations(game, ply) {
  const seen = state.review;
  const answer = await call("analyze", { game: game.id, ply });
  if (!answer.ok) {
    if (answer.error?.code !== "unavailable") status.notice(refusalText(answer.error, "analyze"));
    return;
  }
  if (state.review !== seen || answer.ply !== ply || answer.version !== game.version) return;
  seen.evaluations[ply] = answer.analysis.moves;
  if (seen.ply === ply && state.game?.id === game.id) paintBoard(state.game);
}

/** Step the review: "first", "back", "forward" or "last". */
function stepReview(to) {
  const game = state.game;
  const seen = state.review;
  if (!game || !seen || seen.id !== game.id || !seen.positions) return;
  const targets = { first: 0, back: seen.ply - 1, forward: seen.ply + 1, last: game.moves.length };
  goReview(Math.max(0, Math.min(game.moves.length, targets[to] ?? seen.ply)));
}

/** Show the position after `ply` moves of the finished game; its last move is the end. */
function goReview(ply) {
  const game = state.game;
  const seen = state.review;
  if (!game || !seen || seen.id !== game.id || !seen.positions || ply === seen.ply) return;
  const forward = ply === seen.ply + 1;
  seen.ply = ply;
  paintBoard(game, forward ? game.moves[ply - 1] : null);
  review.at(ply, game.moves);
}

/** Take a hint: the best squares for the side on move, marked until the next move. */
async function hint() {
  const game = state.game;
  if (!game || state.busy || !canPlay(game)) return;
  status.clearNotice();
  const answer = await call("hint", { game: game.id });
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "hint"));
    return;
  }
  if (!state.game || state.game.id !== game.id) return;
  state.hint = { id: game.id, version: answer.game.version, cells: answer.best };
  show(answer.game);
  if (state.game.version !== answer.game.version) return;
  const { best } = answer;
  const words = best.length <= 2
    ? `Hint: ${best.length === 1 ? "play " : ""}${cellsWords(best)}`
    : `Hint: ${best.length} moves as good as each other`;
  status.news(words);
  status.announce(words);
}

/** Play on from just before a side's first mistake, against the AI, as that side. */
async function tryAgain(side) {
  const game = state.game;
  const mistake = state.review?.mistakes?.[side];
  if (!game || !mistake || state.review.id !== game.id) return;
  status.clearNotice();
  const answer = await call("new_game", {
    mode: "ai", you: side, level: game.level ?? controls.read().level,
    moves: game.moves.slice(0, mistake.ply),
  });
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "new_game"));
    return;
  }
  enter(answer, { opening: true });
  board.focus(); // the card that held the button is gone; the board is where play goes on
}
