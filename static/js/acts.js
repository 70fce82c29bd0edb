// What the player sends about the game on screen, for the session: moves (the "moving" state:
// the pushes that come meanwhile are kept, the newest by `rev`, until the move's answer; a move
// tapped while offline is sent once the connection is back, if the game is still as it was),
// rematch, claim, resign, abort, decline, react, and leaving a game for another.
import { swapped } from "./screen.js";
import { squareWords, t } from "./squares.js";
import { refusalText } from "./status.js";
import { describeOffer, describeReaction } from "./news.js";

/** How long the AI's reply waits after the player's own mark, at least, so that it reads as a
 * reply (the network's time counts towards it). */
const REPLY_BEAT_MS = 450;

/** The newer of two views of one game (by `rev`, or the move count from an older server);
 * `other` on a tie. */
export function newest(one, other) {
  if (!one) return other;
  if (!other) return one;
  return (other.rev ?? other.version) >= (one.rev ?? one.version) ? other : one;
}

/**
 * `session`: {call, fire, view, show, refused, enter, keepRecord, parts, calm, now}; `now()`
 * gives the session's state ({name, game, asked, withdrawing}), which this may change.
 */
export function createActs(session) {
  const { call, fire, view, show, refused, enter, keepRecord, parts, calm, now } = session;
  const { status, coach, leave, offer, board } = parts;
  const shared = now(); // the session's state object: `asked`, `withdrawing` are set here too
  const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });
  const state = {
    sent: null,    // the version our move on its way was sent at
    ownAt: 0,      // when the push of our own move was shown, while a slow AI thinks
    held: null,    // the newest push that came in while the move was on its way
    queued: null,  // {id, version, cell, variant}: a move tapped while offline, to send
    early: null,   // a cell tapped before the first view came (the page was connecting)
  };

  /** Send a move on `cell` of the game on screen, and show what comes back. */
  async function play(cell) {
    const { game, name, restored } = now();
    if (restored || name === "idle" || (name === "starting" && !game)) {
      // The page is still connecting: the tap is kept (the last one) and sent once the
      // server's view is on screen, if that cell is playable then (sendEarly).
      state.early = cell;
      board.unpend();
      if (game?.status === "playing") board.pending(cell, game.you === "both" ? game.turn : game.you);
      return;
    }
    if (!game || name !== "ready") return;
    if (coach.reviewing(game)) {
      coach.step("last"); // a square pressed during the replay: back to the end
      return;
    }
    status.clearNotice();
    fire("move");
    // The mark shows at the tap, pending (dimmed, not counted): the server still decides, and
    // a refusal takes it off again. The player's mark is on screen from now on.
    const mark = game.you === "both" ? game.turn : game.you;
    const pending = game.status === "playing" && board.pending(cell, mark);
    const tapped = performance.now();
    Object.assign(state, { sent: game.version, ownAt: 0, held: null });
    const answer = await call("move", { game: game.id, cell, version: game.version });
    if (!answer.ok) {
      board.unpend();
      settle(null);
      if (answer.error?.code === "offline" && game.can?.includes("move")) hold(game, cell);
      else refused("move", answer);
      return;
    }
    if (answer.played) {
      // Our move first, then the AI's. The pause for effect (so the reply reads as a reply)
      // only makes up what the network did not: the player's mark has been on screen since
      // the tap (pending) or since the push of it (a slow AI), and a reply that took longer
      // than a person notices is shown as soon as it is here.
      show(view(answer.played));
      const since = state.ownAt || (pending ? tapped : performance.now());
      const beat = (calm.matches ? 150 : REPLY_BEAT_MS) - (performance.now() - since);
      if (beat > 0) await sleep(beat);
    }
    settle(view(answer.game));
    keepRecord(answer);
  }

  /** The move's answer is in: back to ready, showing the newest of it and the pushes held. */
  function settle(reply) {
    const held = state.held;
    state.held = null;
    fire("answered");
    const shown = newest(reply, held);
    if (shown) show(shown);
  }

  /**
   * A move tapped while offline: kept (the last one tapped) and said, and sent once the
   * connection is back if the game is still as it was then (see sendHeld).
   */
  function hold(game, cell) {
    state.queued = { id: game.id, version: game.version, cell, variant: game.variant };
    const where = squareWords(cell, game.variant);
    // Translators: {where} a square ("the top left")
    status.notice(t("You are offline — your move ({where}) will be played when the connection is back",
      { where }), { sticky: true });
  }

  /** After a reconnect and its join: play the held move, or say plainly that it was not. */
  function sendHeld() {
    const { queued } = state;
    const { game } = now();
    if (!queued || !game) return;
    state.queued = null;
    const { id, version, cell, variant } = queued;
    // The server is the judge of the move; the page only checks that nothing changed while it
    // was away (a move, a claim, the clock), since the player decided on that board.
    if (game.id === id && game.version === version && game.legal?.includes(cell)) {
      status.clearNotice();
      play(cell);
      return;
    }
    status.notice(t("Your move ({where}) was not played: the game changed while you were offline",
      // Translators: {where} a square ("the top left")
      { where: squareWords(cell, variant) }), { sticky: true });
  }

  /** The first view is on screen: play the cell tapped while connecting, if it is playable. */
  function sendEarly() {
    const cell = state.early;
    state.early = null;
    const { game, name } = now();
    if (cell === null || !game || name !== "ready") return;
    if (game.legal?.includes(cell)) play(cell);
  }

  /** A push of the game on screen: shown, or kept while our move is on its way. */
  function pushed(game) {
    const { name, game: shown } = now();
    if (name !== "moving") {
      show(game);
      return;
    }
    if (game.version === state.sent + 1 && shown.version === state.sent) {
      // Our own move, pushed at once while a slow AI (ultimate) thinks: on screen now.
      show(game);
      state.ownAt = performance.now();
      return;
    }
    state.held = newest(state.held, game);
  }

  /** Send resign, abort or decline for the game on screen; true if it went through. */
  async function end(event) {
    const game = now().game;
    if (!game) return false;
    shared.withdrawing = event === "decline";
    shared.ending = event === "decline" ? null : event;
    const answer = await call(event, { game: game.id });
    if (answer.ok && answer.game) show(view(answer.game));
    if (answer.ok) keepRecord(answer);
    shared.withdrawing = false;
    shared.ending = null;
    if (event === "decline") shared.asked = null;
    if (answer.ok) return true;
    // The game ended or changed meanwhile: there is nothing left to give up.
    if (answer.error?.code === "game_over" || answer.error?.code === "not_allowed") return true;
    refused(event, answer);
    return false;
  }

  let leavingNow = null; // the leave under way: a second choice meanwhile waits for it

  /** Leave the game on screen once, however many choices ask for it at the same time. */
  function leaveFirst() {
    leavingNow ??= leaveOnce().finally(() => { leavingNow = null; });
    return leavingNow;
  }

  /**
   * Before leaving the game on screen: ask, when it is in progress, and tell the server. False
   * when the player stays; else true, or the words to say once the next game is on screen.
   */
  async function leaveOnce() {
    if (!now().game) return true; // nothing to leave (and no need to load the words for it)
    const { leaving } = await import("./leave.js");
    const plan = leaving(now().game);
    if (!plan) return true;
    if (plan.ask && !(await leave.ask(plan))) return false;
    const done = plan.event ? await end(plan.event) : true;
    return done && plan.told ? plan.told : done;
  }

  /** Rematch: at once against the AI and in pass-and-play; an offer (or its acceptance) else. */
  async function rematch() {
    const game = now().game;
    if (!game) return;
    // A rematch in the middle of a game leaves it: asked first; the server ends it (`from`).
    if (game.status === "playing" && !(await leaveFirst())) return;
    status.clearNotice();
    shared.asked = game.id;
    const answer = await call("rematch", { game: game.id, from: game.id });
    if (!answer.ok) {
      shared.asked = null;
      refused("rematch", answer);
      return;
    }
    if (answer.started === false) {
      show(view(answer.game));
      status.announce(describeOffer(now().game, now().game.you));
      return;
    }
    const pressed = document.activeElement;
    // Sides swap in a rematch: say so, or the player's next tap may be a surprise.
    enter(answer, { opening: true, lead: swapped(game.you, answer.you) });
    // The button is gone: a keyboard player goes on where the game is played.
    if (offer.holds(pressed) || pressed === document.body) board.focus();
  }

  /** Send `event` for the game on screen and show the game of its answer. */
  async function act(event, payload = {}) {
    const game = now().game;
    if (!game) return null;
    const answer = await call(event, { game: game.id, ...payload });
    if (!answer.ok) {
      // One reaction a second is plenty: a quicker tap is simply not sent on.
      if (!(event === "react" && answer.error?.code === "rate_limited")) refused(event, answer);
      return null;
    }
    if (answer.game) show(view(answer.game));
    keepRecord(answer);
    return answer;
  }

  /** Resign or abort the game on screen, once the player says so. */
  async function give(event) {
    const game = now().game;
    const { ending } = await import("./leave.js");
    if (!game || !(await leave.ask(ending(game, event)))) return;
    await end(event);
  }

  /** Set the player's name; `rejoin()` then shows it everywhere (the answer holds no game). */
  async function rename(name, rejoin) {
    const answer = await call("set_name", { name });
    if (!answer.ok) {
      status.notice(refusalText(answer.error, "set_name"));
      return null;
    }
    rejoin();
    return answer.name;
  }

  /** A reaction pushed: shown on its sender's seat and said. */
  function reacted(push) {
    const { game } = shared;
    if (!game || push.game !== game.id) return;
    parts.reactions.show(push.from, push.reaction);
    const words = parts.reactions.words(push.reaction);
    status.announce(describeReaction(game, game.you, push.from, words));
  }

  return {
    play,
    rename,
    reacted,
    end,
    leaveFirst,
    rematch,
    act,
    give,
    pushed,
    sendHeld,
    sendEarly,
    /** Another game is on screen: nothing held belongs to it. */
    forget() {
      state.held = null;
    },
  };
}
