// The game on screen as a small state machine: asks the server (new_game, join, move, rematch,
// ...), keeps the newest view it has seen (by `rev`) and hands it to the renderers. It decides
// nothing about the game: what this page may do comes in the view's `can`, where it may play
// in its `legal`. Any refused event is followed by a `join`, whose snapshot is the truth.
import { loadPreferences, newGamePayload, savePreferences } from "./controls.js";
import { createCaller } from "./caller.js";
import { createScreen, swapped } from "./screen.js";
import { createActs, newest } from "./acts.js";
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

const LAST_GAME = "ttt.last-game";
const GAMES = "ttt.games"; // id -> {game, link}: the last few games seen here, for their links
const KEPT_GAMES = 8;

/** The game a `/g/<id>` address names (the `/` shell answers for a link offline), or null. */
function addressGame() {
  return location.pathname.match(/^\/g\/([A-Za-z0-9_-]{16,64})$/)?.[1] ?? null;
}

/** True on a watch-only link (`?watch=1`, PROTOCOL v5): never take a free seat. */
function watching() {
  return new URLSearchParams(location.search).get("watch") === "1";
}

/** Keep the view on screen on this device, to draw before the socket is up (and offline). */
function remember(game, link) {
  if (!game?.id || !game.you) return;
  try {
    localStorage.setItem(LAST_GAME, JSON.stringify({ game, link }));
    const kept = JSON.parse(localStorage.getItem(GAMES) ?? "{}");
    delete kept[game.id];
    const newest = [...Object.entries(kept), [game.id, { game, link }]].slice(-KEPT_GAMES);
    localStorage.setItem(GAMES, JSON.stringify(Object.fromEntries(newest)));
  } catch {
    // Private mode or full: the page simply starts from the server's view.
  }
}

/** The view of game `id` kept by remember(), or null. */
function recalledGame(id) {
  try {
    return JSON.parse(localStorage.getItem(GAMES) ?? "{}")[id] ?? null;
  } catch {
    return null;
  }
}

/** The last view kept by remember(), or null. */
function recalled() {
  try {
    return JSON.parse(localStorage.getItem(LAST_GAME) ?? "null");
  } catch {
    return null;
  }
}

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
      const { mode, you, level, variant } = loadPreferences();
      // A friend game nobody asked for would be odd: a first visit is against the AI.
      startGame({ mode: mode === "friend" ? "ai" : mode, you, level, variant });
      return false;
    }
    enter(answer, { lead: swapped(was, answer.you), back });
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
   * clock): a link's own game if it was seen here, else on `/` the last game (a friend game
   * only when offline, where nothing else can be shown). A link never seen here offline says
   * it needs the network. The server's view replaces it as soon as it comes (enter).
   */
  function restore() {
    const wanted = state.urlGame;
    // A link shows its own game, never another one (the last game is for the home page).
    const last = recalled();
    const saved = wanted ? recalledGame(wanted) ?? (last?.game?.id === wanted ? last : null) : last;
    const game = saved?.game;
    if (!navigator.onLine && wanted && !game) status.connection("link");
    if (!game?.id || state.game) return false;
    if (navigator.onLine && !wanted && game.mode === "friend") return false;
    state.restored = true;
    state.link = saved.link ?? null;
    show({ ...game, can: [], legal: [], time_left: null, claimable_in: null, first_move: null,
      offline: !navigator.onLine });
    app.dataset.restored = "true";
    return true;
  }

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

    // Transport events.
    /** The game the next connect asks for (null: this player's current one). */
    joining() {
      const id = currentId() ?? null;
      state.riding = { id, answer: null };
      return id;
    },

    /** The join answer the connect carried: it arrives just before `connected`. */
    joined(answer) {
      if (state.riding && !state.riding.answer) state.riding.answer = answer;
    },

    async connected() {
      status.connection("up");
      // Events sent while we were away are lost: the snapshot from join is the truth. The
      // connect carried the join (no round trip more); a server that did not answer it, or
      // refused it, is asked with a join as before.
      const riding = state.riding;
      state.riding = null;
      const shown = riding?.answer?.ok
        ? await settle(riding.id, riding.answer, { back: true })
        : await join(currentId(), { back: true });
      if (shown) {
        screen.inView();
        acts.sendHeld();
      }
    },

    disconnected({ retrying }) {
      // Opened offline, the page says so (its last game on screen, read only) and reconnects
      // by itself when the network is back (socket.js listens for it).
      if (!navigator.onLine && state.restored) status.connection("offline");
      else if (!navigator.onLine && !state.game && state.urlGame) status.connection("link");
      else status.connection(retrying ? "retrying" : "down");
    },

    pushed(game) {
      if (state.game && game.id === state.game.id) {
        acts.pushed(view(game));
        return;
      }
      // Not on screen (yet): kept in case the answer that enters it is on its way.
      if (state.early.size > 3) state.early.clear();
      state.early.set(game.id, newest(state.early.get(game.id), view(game)));
    },

    /** A game's number of watchers changed: a small push, at most one a second (issue 41). */
    watched(push) {
      const game = state.game;
      if (game && push.game === game.id && game.watchers !== push.watchers) {
        show({ ...game, watchers: push.watchers });
      }
    },

    recorded(record) {
      state.record = record;
      screen.record(record, state.game);
    },

    /** A rematch of a game started. A spectator follows it; a player only if they asked. */
    rematched(push) {
      const game = state.game;
      if (!game || push.from !== game.id) return;
      if (game.you !== "spectator") {
        if (state.asked === push.from) join(push.game.id, { was: game.you });
        return;
      }
      if (!coach.reviewing(game)) {
        join(push.game.id);
        return;
      }
      state.following = push.game.id;
      screen.paint(game, { following: state.following, link: state.link, record: state.record });
      status.announce(t("A rematch has started"));
    },

  };
}
