// Wiring: builds the pieces, connects them to the server, and holds the page's only state.
import { connect } from "./socket.js";
import { createBoard } from "./board.js";
import {
  createStatus, describe, describeLastMove, describeStart, opponentOf, refusalText,
} from "./status.js";
import { createControls, loadPreferences, newGamePayload, savePreferences } from "./controls.js";
import { createShare } from "./share.js";

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
};

const status = createStatus({
  status: byId("status"),
  detail: byId("detail"),
  notice: byId("notice"),
  banner: byId("connection"),
  bannerText: byId("connection-text"),
  players: { X: byId("player-x"), O: byId("player-o") },
  record: byId("record"),
});
const board = createBoard(byId("board"), byId("strike"), { onPlay: play });
const share = createShare(byId("share"));
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

/** Render `game` everywhere; `fresh` as for board.render; `opening`: the player just started it. */
function paint(game, fresh, opening = false) {
  board.render(game, { playable: canPlay(game), fresh });
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
  const news = [moved ? describeLastMove(game, state.you) : "", presence]
    .filter(Boolean)
    .join(" · ");
  const ended = previous?.status === "playing" && game.status !== "playing";
  if (news) status.news(news);
  else if (!previous) status.news(opening ? describeStart(game, state.you) : "");
  else if (ended) status.news(""); // won by a claim: the presence news is over too
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
}

async function join(id) {
  const answer = await server.call("join", id ? { game: id } : {});
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "join"));
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
  const answer = await server.call("new_game", newGamePayload(settings));
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "new_game"));
    return;
  }
  enter(answer, { opening: true });
}

async function play(cell) {
  const game = state.game;
  if (!game || state.busy) return;
  status.clearNotice();
  state.busy = true;
  const answer = await server.call("move", { game: game.id, cell, version: game.version });
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
  const answer = await server.call("rematch", { game: state.game.id });
  state.rematching = false;
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "rematch"));
    return;
  }
  enter(answer, { opening: true });
}

async function claim() {
  if (!state.game) return;
  const answer = await server.call("claim", { game: state.game.id });
  if (!answer.ok) {
    status.notice(refusalText(answer.error, "claim"));
    return;
  }
  show(answer.game);
}
