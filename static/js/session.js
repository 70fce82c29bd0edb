// The game on screen as a small state machine: asks the server (new_game, join, move, rematch,
// ...), keeps the newest view it has seen (by `rev`) and hands it to the renderers. It decides
// nothing about the game: what this page may do comes in the view's `can`, where it may play
// in its `legal`. Any refused event is followed by a `join`, whose snapshot is the truth.
import { newGamePayload, savePreferences } from "./controls.js";
import { createCaller } from "./caller.js";
import { createScreen, swapped } from "./screen.js";
import { createActs, newest } from "./acts.js";
import { createArrivals, firstSettings } from "./arrivals.js";
import { addressGame, keptFor, remember, watching } from "./kept.js";
import { refusalText } from "./status.js";
import { t } from "./squares.js";

/**
 * The states and, for each, the transitions it takes: event -> next state ("back": ready when
 * a game is on screen, idle when none). An event a state does not list is ignored.
 */
const MACHINE = Object.freeze({
  idle: { start: "starting", enter: "ready" },             // no game on screen yet
  ready: { move: "moving", start: "starting", enter: "ready" }, // a game on screen, nothing out
  moving: { answered: "ready", start: "starting" },        // our move is on its way
  starting: { enter: "ready", failed: "back", start: "starting" }, // a new game asked for
});

/** The order of two views of one game: `rev`, or the move count from an older server. */
const order = (game) => game.rev ?? game.version;

/** Codes after which a join would not help (or the banner already retries). */
const NO_RESYNC = new Set(["offline", "rate_limited", "unavailable", "timeout"]);

/**
 * `parts`: the page's pieces (status, coach, seats, clock, offer, reactions, share, sound,
 * controls, leave, board, learnRow, practice). `call(event, payload)`: the transport.
 * `app`: the root element (its data-game-id, data-ready, data-session). `calm`: reduced motion.
 */
export function createSession(parts, { call: send, app, calm }) {
  const { status, coach } = parts;
  const screen = createScreen(parts, { app });
  const state = {
    name: "idle",
    game: null,          // the newest view of the game on screen
    you: null,           // our Role in it, from the last answer (a view carries its own too)
    link: null,          // "/g/<id>" of a friend game
    record: null,        // wins/draws/losses against the AI, per level
    asked: null,         // id of the finished game whose rematch this page asked for
    withdrawing: false,  // our own decline is on its way: its change is no news (acts.js)
    ending: null,        // the resign or abort this page sent, while on its way (acts.js)
    following: null,     // a rematch this spectator did not follow (it was reading the review)
    starts: 0,           // new games asked for: only the newest one's answer is shown
    early: new Map(),    // id -> the newest push of a game not on screen yet (see enter)
    restored: false,     // the game on screen is this device's last one, read only (restore)
    riding: null,        // {id, answer}: the join the last connect carried (PROTOCOL v5)
    urlGame: app.dataset.gameId || addressGame(),
  };
  const call = createCaller(send, { status, rejoin: () => join(currentId()) });
  const acts = createActs({
    call, fire, view, show, refused, enter, keepRecord: (answer) => keepRecord(answer), parts,
    calm, now: () => state,
  });
  const currentId = () => (state.game ? state.game.id : state.urlGame);

  /** Take transition `event` from the current state; false when the state has none. */
  function fire(event) {
    const next = MACHINE[state.name][event];
    if (!next) return false;
    state.name = next === "back" ? (state.game ? "ready" : "idle") : next;
    app.dataset.session = state.name;
    return true;
  }

  /** A received Game as a view: one from an older server carries no `you`. */
  function view(game, you = state.you) {
    return game && !game.you ? { ...game, you } : game;
  }

  /** Whether `game` may replace the view on screen: the same game, and not older. */
  function current(game) {
    return !state.game || (state.game.id === game.id && order(game) >= order(state.game));
  }

  /** Put a view on screen unless it is older than the one there; true if shown. */
  function show(game, {
    opening = false, lead = "", reveal = false, seated = false, away = null,
  } = {}) {
    if (!current(game)) return false;
    const previous = state.game;
    state.game = game;
    if (!state.restored) remember(game, state.link);
    screen.render(previous, game, {
      opening, lead, reveal, seated, away, withdrawn: state.withdrawing, own: state.ending,
      link: state.link, record: state.record, following: state.following,
    });
    return true;
  }

  /**
   * Switch to the game of an ok answer of new_game, join or rematch; `lead` as for show; `back`:
   * the join of a (re)connect, whose view is told against the one shown before (the moves made
   * while away).
   */
  function enter(answer, { opening = false, lead = "", back = false } = {}) {
    const away = back && state.game?.id === answer.game.id ? state.game : null;
    if (state.restored) {
      // The last game drawn from this device before the socket was up gives way to the
      // server's view, whatever it is (even an older one, after a server restart).
      state.restored = false;
      state.game = null;
      delete app.dataset.restored;
    }
    const reveal = state.game?.id !== answer.game.id || !state.game; // another game: in view
    // A push of this game may have overtaken the answer (a friend's join of the rematch this
    // page accepted, say): the newer of the two is shown.
    const game = newest(state.early.get(answer.game.id), view(answer.game, answer.you));
    state.early.clear();
    if (state.game?.id !== game.id) {
      state.game = null;
      state.asked = null;
      state.following = null;
      acts.forget();
    }
    state.you = answer.you;
    state.link = game.mode === "friend" ? (answer.link ?? `/g/${game.id}`) : null;
    if (answer.record) state.record = answer.record;
    fire("enter");
    screen.reflect(game);
    // The address bar names a friend game (so a reload or a copy of it works) and nothing else.
    const path = state.link ?? "/";
    if (location.pathname !== path) history.replaceState(null, "", path);
    show(game, {
      opening, lead, reveal: reveal && Boolean(app.dataset.ready), away,
      seated: Boolean(answer.seated), // this join took the seat: the side played is told
    });
    if (!app.dataset.ready) {
      // The first game on screen: how long a visitor waits is measured to here.
      performance.mark("ttt:board-ready");
      app.dataset.ready = game.can?.includes("move") ? "playable" : "shown";
      app.dispatchEvent(new Event("ttt:ready"));
    }
    acts.sendEarly(); // a tap made while the page was connecting
    app.dispatchEvent(new CustomEvent("ttt:entered", { detail: game.id }));
  }

  /** A refused `event`: said, the game it carries shown, and the page re-synced by a join. */
  function refused(event, answer) {
    const code = answer.error?.code;
    if (code !== "unavailable") status.notice(refusalText(answer.error, event, state.game));
    if (answer.game) show(view(answer.game));
    if (state.game && !NO_RESYNC.has(code)) join(state.game.id);
  }

  /** Join game `id` (or this player's current one); true once its view is on screen. */
  async function join(id, { was = null, back = false } = {}) {
    // `?watch=1` on a game link (PROTOCOL v5): watch only, never take a free seat.
    const payload = id ? { game: id, ...(watching() ? { watch: true } : {}) } : {};
    return settle(id, await call("join", payload), { was, back });
  }

  /** The answer of a join of game `id` (sent, or ridden on the connect): shown. */
  async function settle(id, answer, { was = null, back = false } = {}) {
    if (!answer.ok) return joinRefused(id, answer);
    const { game } = answer;
    // A rematch started while we were away and its push was lost. A player is in it only if
    // they asked for it; a spectator follows, unless reading the review.
    if (game?.rematch && state.game?.id === game.id
        && (answer.you !== "spectator" || !coach.reviewing(state.game))) {
      return join(game.rematch);
    }
    if (game === null) {
      startGame(firstSettings());
      return false;
    }
    // The first game a connect started (PROTOCOL v5: nothing to resume) opens like any other.
    if (answer.started) enter(answer, { opening: true });
    else enter(answer, { lead: swapped(was, answer.you), back });
    return true;
  }

  /** A join refused: said (the banner speaks for a store that is down); a dead link is left. */
  function joinRefused(id, answer) {
    if (answer.error?.code !== "unavailable") status.notice(refusalText(answer.error, "join"));
    if (id && answer.error?.code === "not_found") {
      state.urlGame = null;
      state.game = null;
      join(null);
    }
    return false;
  }

  /** A new game with `settings`, once the game on screen is left; true if it started, null
   * when a newer new game was asked for meanwhile. */
  async function startGame(settings) {
    // Two quick choices (a level, then the variant) are two starts whose leaving and answers
    // may settle in either order: the game shown is the last one chosen, whatever answers first.
    if (!navigator.onLine) {
      status.notice(t("A new game needs the network — try again when you are back online"),
        { sticky: true }); // the why, whole (two lines on a 320 px phone), until back online
      window.addEventListener("online", () => status.clearNotice(), { once: true });
      return false;
    }
    const asked = ++state.starts;
    const left = await acts.leaveFirst();
    if (asked !== state.starts) return null; // superseded while the old game was being left
    if (!left) return false;
    const told = left === true ? "" : left;
    status.clearNotice();
    fire("start");
    // `from`: the game on screen, which the server ends by its rule when it is against the AI.
    const shown = state.game;
    const answer = await call("new_game", { ...newGamePayload(settings), from: shown?.id ?? null });
    if (asked !== state.starts) return null; // superseded: the newer call shows its game
    if (!answer.ok) {
      fire("failed");
      refused("new_game", answer);
      return false;
    }
    // What the server did with the game left, said; leave.js only when a game was left (it is
    // not part of the first load).
    const said = answer.left ? (await import("./leave.js")).leftWords(answer.left, shown) : "";
    enter(answer, { opening: true, lead: said || told });
    return true;
  }

  /** The record an answer carries when the event changed it (a game won, lost, resigned). */
  function keepRecord(answer) {
    if (!answer.record) return;
    state.record = answer.record;
    screen.record(answer.record, state.game);
  }

  // The player's saved settings in the bar at once, not when the first game arrives.
  screen.reflect(null);
  app.dataset.session = state.name;

  /**
   * Before the socket is up: a game this device showed, read only (no `can`, no `legal`, no
   * clock; which one: kept.js). A link never seen here offline says it needs the network.
   * The server's view replaces it as soon as it comes (enter).
   */
  function restore() {
    const wanted = state.urlGame;
    const saved = keptFor(wanted);
    if (!navigator.onLine && wanted && !saved) status.connection("link");
    if (!saved || state.game) return false;
    state.restored = true;
    state.link = saved.link ?? null;
    show({ ...saved.game, can: [], legal: [], time_left: null, claimable_in: null,
      first_move: null, offline: !navigator.onLine });
    app.dataset.restored = "true";
    return true;
  }

  const arrivals = createArrivals({
    state, view, show, join, settle, currentId,
    startPayload: () => newGamePayload(firstSettings()),
  }, { status, coach, acts, screen });

  return {
    call,
    restore,
    now: () => ({ game: state.game, busy: state.name === "moving" }),
    show: (game) => show(view(game)),
    enter,
    play: (cell) => acts.play(cell),
    rematch: () => acts.rematch(),
    claim: () => acts.act("claim"),
    resign: () => acts.give("resign"),
    abort: () => acts.give("abort"),
    decline: () => acts.end("decline"),
    react: (reaction) => acts.act("react", { reaction }),
    rename: (name) => acts.rename(name, () => state.game && join(state.game.id)),
    reacted: (push) => acts.reacted(push),

    /** The New game button. */
    newGame: (settings) => startGame(settings),

    /** A settings choice: a new game with it, or the form back as it was if the player stays. */
    async settings(settings) {
      const started = await startGame(settings);
      if (started) savePreferences(settings);
      else if (started === false) screen.reflect(state.game);
    },

    /** The claim countdown ran out: a fresh view says whether the claim is open now. */
    claimDue() {
      if (state.game) join(state.game.id);
    },

    /** A spectator goes on to the rematch it stayed behind from. */
    follow() {
      const id = state.following;
      state.following = null;
      if (id) join(id);
    },

    ...arrivals, // the connection's comings and goings, and the server's pushes
  };
}
