// The game on screen: asks the server (new_game, join, move, rematch, ...), takes the views it
// sends and hands each to every part of the page. It decides nothing about the game: what this
// page may do now comes in the view's `can`, when a claim opens in its `claimable_in`.
import { loadPreferences, newGamePayload, savePreferences } from "./controls.js";
import { ending, leaving } from "./leave.js";
import {
  describe, describeLastMove, describeOffer, describeOfferChange, describePresence,
  describeReaction, describeStart, opponentOf, refusalText, sentences, squareWords,
} from "./status.js";

/** The row of the record a game counts in: "hard", or "ultimate-hard" for an ultimate game. */
function recordLevel(game) {
  return game?.variant === "ultimate" ? `ultimate-${game.level}` : game?.level;
}

/** "You play O this time": a rematch swapped the side of a seated player, or "". */
function swapped(before, now) {
  return opponentOf(now) && opponentOf(before) && now !== before ? `You play ${now} this time` : "";
}

/** The blip for a view that just changed: a mark placed, or how the game ended. */
function tune(game) {
  if (game.status === "aborted") return null;
  if (game.status === "draw") return "draw";
  if (game.status === "won") {
    // Pass-and-play and watchers cheer every win.
    return game.winner === game.you || !opponentOf(game.you) ? "win" : "loss";
  }
  const mover = game.board[game.moves[game.moves.length - 1]];
  // In pass-and-play X's marks sound as the player's, O's as the reply.
  const own = game.you === "both" ? mover === "X" : mover === game.you;
  return own ? "move" : "reply";
}

/**
 * `parts`: the page's pieces (status, coach, seats, clock, offer, reactions, share, sound,
 * controls, leave, board, learnRow, practice). `call(event, payload)`: the transport.
 * `app`: the root element (its data-game-id, data-ready). `calm`: prefers-reduced-motion.
 */
export function createSession(parts, { call: send, app, calm }) {
  const {
    status, coach, seats, clock, offer, reactions, share, sound, controls, leave, board,
    learnRow, practice,
  } = parts;
  const state = {
    game: null,          // the view on screen
    you: null,           // our Role in it, from the last answer (a view carries its own too)
    link: null,          // "/g/<id>" of a friend game
    record: null,        // wins/draws/losses against the AI, per level
    busy: false,         // a move is on its way or its AI reply is being shown
    sent: null,          // the version our move on its way was sent at
    ownAt: 0,            // when the push of our own move was shown, while a slow AI thinks
    held: null,          // the newest push that came in while busy
    asked: null,         // id of the finished game whose rematch this page asked for
    withdrawing: false,  // our own decline is on its way: its change is no news
    following: null,     // a rematch this spectator did not follow (it was reading the review)
    queued: null,        // {id, version, cell, variant}: a move tapped while offline, to send
    starts: 0,           // new games asked for: only the newest one's answer is shown
    urlGame: app.dataset.gameId || null,
    trouble: false,      // the server's store is down: the banner stays until a call succeeds
    retryTimer: 0,
  };

  const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

  /** A received Game as a view: one from an older server carries no `you`. */
  function view(game, you = state.you) {
    return game && !game.you ? { ...game, you } : game;
  }

  /** Render `game` everywhere; `fresh` as for board.render; `opening`: the player just started it. */
  function paint(game, fresh, opening = false) {
    app.dataset.role = game.you ?? "";
    coach.paint(game, fresh);
    practice.hidden = !(game.start > 0);
    status.say(describe(game, game.you));
    seats.render(game);
    clock.render(game);
    offer.render(game, { following: state.following });
    learnRow.classList.toggle("is-reacting", reactions.render(game));
    status.record(state.record, recordLevel(game));
    const other = opponentOf(game.you);
    if (game.mode === "friend" && other && game.seats[other] === "open" && state.link) {
      share.show(state.link, { reveal: opening, name: game.names?.[game.you] ?? null });
    } else {
      share.hide();
    }
  }

  /**
   * Put a view of the current game on screen, unless it is older than what is there. `lead`:
   * words to open its news with ("You play O this time").
   */
  function show(game, { opening = false, lead = "" } = {}) {
    if (state.game && state.game.id !== game.id) return;
    const previous = state.game;
    if (previous && game.version < previous.version) return;
    const moved = previous
      ? game.moves.length > previous.moves.length
      : opening && game.moves.length > 0;
    state.game = game;
    let fresh;
    if (moved) fresh = game.moves[game.moves.length - 1];
    else if (!previous) fresh = null;
    paint(game, fresh, opening);
    const { you } = game;
    // A practice game opens on a position: say what it is rather than who moved last.
    const practising = opening && game.start > 0;
    const lastMove = moved && !practising ? describeLastMove(game, you) : "";
    const presence = describePresence(previous, game, you);
    const offered = describeOfferChange(previous, game, you, { withdrawn: state.withdrawing });
    const news = [lastMove, presence].filter(Boolean).join(" · ");
    const start = !previous && opening ? describeStart(game, you) : "";
    const ended = previous?.status === "playing" && game.status !== "playing";
    // The lead says what the board cannot (the side changed); the board shows the AI's move.
    if (lead) status.news(lead);
    else if (news) status.news(news);
    else if (!previous) status.news(start);
    else if (ended) status.news(""); // won by a claim, a resignation, the clock: news is over
    if (moved || ended || presence || offered || !previous) {
      status.announce(sentences([lead, lastMove || start, describe(game, you), presence, offered]));
    }
    const blip = moved || ended ? tune(game) : null;
    if (blip) sound.play(blip);
  }

  /**
   * The settings form as the game on screen was started, preferences for the rest. The side is
   * always the player's choice: a rematch swaps sides for one game, New game goes back to it.
   */
  function reflect(game) {
    const preferences = loadPreferences();
    controls.reflect({
      mode: game?.mode ?? preferences.mode,
      level: game?.level ?? preferences.level,
      you: preferences.you,
      clock: game?.mode === "friend" ? String(game.clock ?? 0) : preferences.clock,
      variant: game?.variant ?? preferences.variant,
    });
  }

  /** Switch to the game of an ok answer of new_game, join or rematch; `lead` as for show. */
  function enter(answer, { opening = false, lead = "" } = {}) {
    const game = view(answer.game, answer.you);
    if (!state.game || state.game.id !== game.id) {
      state.game = null;
      state.held = null;
      state.asked = null;
      state.following = null;
    }
    state.you = answer.you;
    state.link = game.mode === "friend" ? (answer.link ?? `/g/${game.id}`) : null;
    if (answer.record) state.record = answer.record;
    reflect(game);
    // The address bar names a friend game (so a reload or a copy of it works) and nothing else.
    const path = state.link ?? "/";
    if (location.pathname !== path) history.replaceState(null, "", path);
    show(game, { opening, lead });
    if (!app.dataset.ready) {
      // The first game on screen: how long a visitor waits is measured to here.
      performance.mark("ttt:board-ready");
      app.dataset.ready = game.can?.includes("move") ? "playable" : "shown";
    }
  }

  /**
   * Join game `id` (or this player's current one); true once its view is on screen. `was`: our
   * side in the game it continues (a rematch), to say when the side changed.
   */
  async function join(id, { was = null } = {}) {
    const answer = await call("join", id ? { game: id } : {});
    if (!answer.ok) {
      // The store being down is the banner's to say; the retries follow it.
      if (answer.error?.code !== "unavailable") status.notice(refusalText(answer.error, "join"));
      if (id && answer.error?.code === "not_found") {
        state.urlGame = null;
        state.game = null;
        join(null);
      }
      return false;
    }
    const { game } = answer;
    if (game?.rematch && state.game?.id === game.id) {
      // A rematch started while we were away and its push was lost. A player is in it only
      // if they asked for it; a spectator follows, unless reading the review.
      if (answer.you !== "spectator" || !coach.reviewing(state.game)) {
        return join(game.rematch);
      }
    }
    if (game === null) {
      const { mode, you, level, variant } = loadPreferences();
      // A friend game nobody asked for would be odd: a first visit is against the AI.
      startGame({ mode: mode === "friend" ? "ai" : mode, you, level, variant });
      return false;
    }
    enter(answer, { lead: swapped(was, answer.you) });
    return true;
  }

  /** Send resign, abort or decline for the game on screen; true if it went through. */
  async function end(event) {
    const game = state.game;
    if (!game) return false;
    state.withdrawing = event === "decline";
    const answer = await call(event, { game: game.id });
    if (answer.ok && answer.game) show(view(answer.game));
    if (answer.ok) keepRecord(answer);
    state.withdrawing = false;
    if (event === "decline") state.asked = null;
    if (!answer.ok) {
      // The game ended or changed meanwhile: there is nothing left to give up.
      if (answer.error?.code === "game_over" || answer.error?.code === "not_allowed") return true;
      status.notice(refusalText(answer.error, event));
      return false;
    }
    return true;
  }

  /** Before leaving the game on screen: ask, when it is in progress, and tell the server. */
  async function leaveFirst() {
    const plan = leaving(state.game);
    if (!plan) return true;
    if (plan.ask && !(await leave.ask(plan))) return false;
    return plan.event ? end(plan.event) : true;
  }

  /** A new game with `settings`, once the game on screen is left; true if it started, null
   * when a newer new game was asked for meanwhile. */
  async function startGame(settings) {
    if (!(await leaveFirst())) return false;
    status.clearNotice();
    // Two quick choices (a level, then the variant) are two calls that the server may answer
    // in either order: the game shown is the last one asked for, not the last one answered.
    const asked = ++state.starts;
    const answer = await call("new_game", newGamePayload(settings));
    if (asked !== state.starts) return null; // superseded: the newer call shows its game
    if (!answer.ok) {
      status.notice(refusalText(answer.error, "new_game"));
      return false;
    }
    enter(answer, { opening: true });
    return true;
  }

  async function play(cell) {
    const game = state.game;
    if (!game || state.busy) return;
    if (coach.reviewing(game)) {
      coach.step("last"); // a square pressed during the replay: back to the end
      return;
    }
    status.clearNotice();
    state.busy = true;
    state.sent = game.version;
    state.ownAt = 0;
    const answer = await call("move", { game: game.id, cell, version: game.version });
    if (!answer.ok) {
      state.busy = false;
      if (answer.error?.code === "offline" && game.can?.includes("move")
          && game.board[cell] === ".") {
        hold(game, cell);
        return;
      }
      status.notice(refusalText(answer.error, "move"));
      if (state.held) show(state.held);
      state.held = null;
      if (answer.error?.code === "stale") join(game.id);
      return;
    }
    if (answer.played) {
      // Our move first, then the AI's a beat later, so the reply reads as a reply.
      show(view(answer.played));
      // A slow AI (ultimate) had our move pushed and shown long ago: no more waiting then.
      const beat = (calm.matches ? 150 : 450) - (state.ownAt ? performance.now() - state.ownAt : 0);
      if (beat > 0) await sleep(beat);
    }
    state.busy = false;
    const held = state.held;
    state.held = null;
    const reply = view(answer.game);
    show(held && held.version > reply.version ? held : reply);
    keepRecord(answer);
  }

  /**
   * A move tapped while offline: kept (the last one tapped) and said, and sent once the
   * connection is back if the game is still as it was then (see sendHeld).
   */
  function hold(game, cell) {
    state.queued = { id: game.id, version: game.version, cell, variant: game.variant };
    const where = squareWords(cell, game.variant);
    status.notice(`You are offline — your move (${where}) will be played when the connection is back`,
      { sticky: true });
  }

  /** After a reconnect and its join: play the held move, or say plainly that it was not. */
  function sendHeld() {
    const queued = state.queued;
    const game = state.game;
    if (!queued || !game) return;
    state.queued = null;
    const { id, version, cell, variant } = queued;
    // The server is the judge of the move; the page only checks that nothing changed while it
    // was away (a move, a claim, the clock), since the player decided on that board.
    if (game.id === id && game.version === version && game.can?.includes("move")
        && game.board[cell] === ".") {
      status.clearNotice();
      play(cell);
      return;
    }
    status.notice(`Your move (${squareWords(cell, variant)}) was not played: the game changed `
      + "while you were offline", { sticky: true });
  }

  /** The record an answer carries when the event changed it (a game won, lost, resigned). */
  function keepRecord(answer) {
    if (!answer.record) return;
    state.record = answer.record;
    status.record(answer.record, recordLevel(state.game));
  }

  /** Rematch: at once against the AI and in pass-and-play; an offer (or its acceptance) else. */
  async function rematch() {
    const game = state.game;
    if (!game) return;
    status.clearNotice();
    state.asked = game.id;
    const answer = await call("rematch", { game: game.id });
    if (!answer.ok) {
      state.asked = null;
      status.notice(refusalText(answer.error, "rematch"));
      return;
    }
    if (answer.started === false) {
      show(view(answer.game));
      status.announce(describeOffer(state.game, state.game.you));
      return;
    }
    const pressed = document.activeElement;
    // Sides swap in a rematch: say so, or the player's next tap may be a surprise.
    enter(answer, { opening: true, lead: swapped(game.you, answer.you) });
    // The button is gone: a keyboard player goes on where the game is played.
    if (offer.holds(pressed) || pressed === document.body) board.focus();
  }

  async function claim() {
    const game = state.game;
    if (!game) return;
    const answer = await call("claim", { game: game.id });
    if (!answer.ok) {
      status.notice(refusalText(answer.error, "claim"));
      return;
    }
    show(view(answer.game));
    keepRecord(answer);
  }

  /** Resign or abort the game on screen, once the player says so. */
  async function give(event) {
    const game = state.game;
    if (!game || !(await leave.ask(ending(game, event)))) return;
    await end(event);
  }

  /** server.call, and the banner while the server's store is down ("unavailable"). */
  async function call(event, payload) {
    const answer = await send(event, payload);
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

  // The player's saved settings in the bar at once, not when the first game arrives.
  reflect(null);

  return {
    call,
    now: () => ({ game: state.game, busy: state.busy }),
    show: (game) => show(view(game)),
    enter,
    play,
    rematch,
    claim,
    resign: () => give("resign"),
    abort: () => give("abort"),
    decline: () => end("decline"),

    /** The New game button. */
    newGame: (settings) => startGame(settings),

    /** A settings choice: a new game with it, or the form back as it was if the player stays. */
    async settings(settings) {
      const started = await startGame(settings);
      if (started) savePreferences(settings);
      else if (started === false) reflect(state.game);
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

    async rename(name) {
      const answer = await call("set_name", { name });
      if (!answer.ok) {
        status.notice(refusalText(answer.error, "set_name"));
        return null;
      }
      // The answer holds the name, not the game: a fresh view of it shows the name everywhere
      // on this page (the score line, the seats) as the server now has it.
      if (state.game) join(state.game.id);
      return answer.name;
    },

    async react(reaction) {
      const game = state.game;
      if (!game) return;
      const answer = await call("react", { game: game.id, reaction });
      // One a second is plenty: a quicker tap is simply not sent on.
      if (!answer.ok && answer.error?.code !== "rate_limited") {
        status.notice(refusalText(answer.error, "react"));
      }
    },

    // Transport events.
    async connected() {
      status.connection("up");
      // Events sent while we were away are lost: the snapshot from join is the truth.
      if (await join(state.game ? state.game.id : state.urlGame)) sendHeld();
    },

    disconnected({ retrying }) {
      status.connection(retrying ? "retrying" : "down");
    },

    pushed(game) {
      if (!state.game || game.id !== state.game.id) return;
      const received = view(game);
      if (state.busy && received.version === state.sent + 1 && state.game.version === state.sent) {
        // Our own move, pushed at once while a slow AI (ultimate) thinks: on screen now.
        show(received);
        state.ownAt = performance.now();
        return;
      }
      if (state.busy) {
        if (!state.held || received.version >= state.held.version) state.held = received;
        return;
      }
      show(received);
    },

    recorded(record) {
      state.record = record;
      status.record(record, recordLevel(state.game));
    },

    /** A rematch of a game started. A spectator follows it; a player only if they asked. */
    rematched(push) {
      const game = state.game;
      if (!game || push.from !== game.id) return;
      if (game.you === "spectator") {
        if (coach.reviewing(game)) {
          state.following = push.game.id;
          paint(game);
          status.announce("A rematch has started");
          return;
        }
        join(push.game.id);
        return;
      }
      if (state.asked === push.from) join(push.game.id, { was: game.you });
    },

    reacted(push) {
      const game = state.game;
      if (!game || push.game !== game.id) return;
      reactions.show(push.from, push.reaction);
      status.announce(describeReaction(game, game.you, push.from, reactions.words(push.reaction)));
    },

    /** The player's own clock came down to its last seconds. */
    warn(text) {
      status.announce(text);
    },
  };
}
