// The renderers of the session: a view of the game put on every part of the page, and the
// change between two views said (the news line, the live region, a sound). They decide nothing:
// what is shown comes from the view, what is said from the difference of two views.
import { loadPreferences, recordKey } from "./controls.js";
import { t } from "./squares.js";
import { describeEnd, describeOfferChange, describePresence } from "./news.js";
import {
  describe, describeAway, describeFirstMove, describeLastMove, describeStart, nameAt, opponentOf,
  sentences,
} from "./words.js";

/** "You play O this time": a rematch swapped the side of a seated player, or "". */
export function swapped(before, now) {
  return opponentOf(now) && opponentOf(before) && now !== before
    // Translators: {side} X or O
    ? t("You play {side} this time", { side: now }) : "";
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

/** The cell whose mark is new in `game` since `previous` (null: none, undefined: keep). */
function freshCell(previous, game, opening) {
  const moved = previous ? game.moves.length > previous.moves.length : opening && game.moves.length > 0;
  if (moved) return game.moves[game.moves.length - 1];
  return previous ? undefined : null;
}

/**
 * Wire the renderers to the page's parts (status, coach, seats, clock, offer, reactions, share,
 * sound, controls, learnRow, practice) and the root element `app`.
 */
export function createScreen(parts, { app }) {
  const {
    status, coach, seats, clock, offer, reactions, share, sound, controls, learnRow, practice,
    absence,
  } = parts;
  const statusArea = app.querySelector(".status-area");
  // What the news line says that holds only while its state does ("Ben wants a rematch",
  // "Ben joined", "Ben is back"): cleared when that state ends, never left behind.
  let standing = null;

  /** Whether the state the news line told of (`standing`) is over in `game`. */
  function gone(kind, game) {
    const other = opponentOf(game.you);
    if (kind === "offer") return !game.offer?.rematch;
    if (kind === "here") return Boolean(other) && game.online?.[other] === false;
    return false;
  }

  /** Render `game` everywhere. `extra`: {fresh, opening, link, record, following}. */
  function paint(game, { fresh, opening = false, link = null, record = null, following = null } = {}) {
    app.dataset.role = game.you ?? "";
    app.dataset.mode = game.mode; // the record against the AI is no card of a friend game
    app.dataset.status = game.status;
    coach.paint(game, fresh);
    practice.hidden = !(game.start > 0);
    status.say(describe(game, game.you));
    seats.render(game);
    clock.render(game);
    absence?.render(game);
    offer.render(game, { following });
    learnRow.classList.toggle("is-reacting", reactions.render(game));
    status.record(record, recordKey(game));
    const other = opponentOf(game.you);
    if (game.mode === "friend" && other && game.seats[other] === "open" && link) {
      share.show(link, { reveal: opening, name: nameAt(game, game.you) });
    } else {
      share.hide();
    }
  }

  /**
   * Say what changed from `previous` to `game` (null: the first view of this game), on the news
   * line and to screen readers alike. `lead`: words to open with; `withdrawn`: this page took
   * its own offer back; `own`: the ending event this page sent itself.
   */
  function tell(previous, game, {
    opening = false, lead = "", withdrawn = false, own = null, seated = false, away = null,
  } = {}) {
    const { you } = game;
    const moved = previous ? game.moves.length > previous.moves.length
      : opening && game.moves.length > 0;
    // Back in a game (a reconnect, a reload): the moves made meanwhile, against the view shown
    // before (this device's last, on a reload).
    const missed = away ? game.moves.length - away.moves.length : 0;
    const awayNews = missed > 0 ? describeAway(missed) : "";
    // A practice game opens on a position: say what it is rather than who moved last.
    const lastMove = (moved || missed > 0) && !(opening && game.start > 0)
      ? describeLastMove(game, you) : "";
    const presence = describePresence(previous, game, you);
    const offered = describeOfferChange(previous, game, you, { withdrawn });
    const ended = describeEnd(previous, game, you, { own });
    const news = [awayNews || lastMove, presence, offered, ended].filter(Boolean).join(" · ");
    // A watcher arriving is told whom it watches, however it came.
    // So is a friend who has just taken a seat through the link: the side they play.
    const start = !previous && (opening || seated || you === "spectator")
      ? describeStart(game, you) : "";
    const over = previous?.status === "playing" && game.status !== "playing";
    // A fair start's window, once opened (a join, the other's first move), holds the news line
    // (the board shows the move, the banner the join; both are read out below).
    const fairStart = moved || presence || !previous ? describeFirstMove(game, you) : "";
    // The lead says what the board cannot (the side changed); the board shows the AI's move.
    const line = fairStart || lead || news || (previous ? "" : start);
    if (line || !previous) {
      status.news(line);
      standing = null;
      if (line === offered && offered) standing = "offer";
      else if (line === presence && presence && game.online?.[opponentOf(you)]) standing = "here";
    } else if (over) {
      status.news(""); // the status line says how it ended
    } else if (standing && gone(standing, game)) {
      status.news("");
      standing = null;
    }
    const other = opponentOf(you);
    if (other && previous?.online?.[other] && game.online?.[other] === false) {
      status.unflash(); // "Ben joined" is over once Ben has gone
    }
    if (moved || missed > 0 || over || presence || offered || !previous) {
      status.announce(sentences([lead, awayNews, lastMove || start, describe(game, you), presence,
        offered, ended, fairStart]));
    }
    if (previous && opponentOf(you) && previous.seats[opponentOf(you)] === "open"
        && game.seats[opponentOf(you)] === "human") {
      status.flash(presence); // "Ana joined": a banner, the tab title, a buzz
    }
    const blip = moved || over ? tune(game) : null;
    if (blip) sound.play(blip);
    return Boolean(presence || offered || ended);
  }

  /**
   * Put `game` on screen after `previous` (null when it is new here) and say what changed.
   * `reveal`: something happened to the game that the player must see (a join, a rematch, a
   * practice start, a reconnect): the status line and the whole board are scrolled into view.
   */
  function render(previous, game, { opening = false, lead = "", withdrawn = false, own = null,
    reveal = false, seated = false, away = null, ...extra } = {}) {
    paint(game, { ...extra, opening, fresh: freshCell(previous, game, opening) });
    const news = tell(previous, game, { opening, lead, withdrawn, own, seated, away });
    if (reveal || news) inView();
  }

  /**
   * Scroll so that the status line and the whole board are on screen, if they are not: from the
   * seats down when all of that fits, else from the status line.
   */
  function inView() {
    const board = app.querySelector(app.dataset.variant === "ultimate" ? "#ultimate-wrap" : "#board-wrap");
    const bottom = board.getBoundingClientRect().bottom;
    if (statusArea.getBoundingClientRect().top >= 0 && bottom <= window.innerHeight) return;
    const seats = app.querySelector(".players");
    const fits = seats && bottom - seats.getBoundingClientRect().top <= window.innerHeight - 8;
    (fits ? seats : statusArea).scrollIntoView({ block: "start" });
  }

  /**
   * The settings form as the game on screen is played (the side too: after a rematch swapped
   * sides, "Play as" says the side now played), preferences for the rest.
   */
  function reflect(game) {
    const preferences = loadPreferences();
    const seated = game?.you === "X" || game?.you === "O";
    controls.reflect({
      mode: game?.mode ?? preferences.mode,
      level: game?.level ?? preferences.level,
      you: seated ? game.you : preferences.you,
      clock: game?.mode === "friend" ? String(game.clock ?? 0) : preferences.clock,
      variant: game?.variant ?? preferences.variant,
    });
  }

  return {
    paint, render, reflect, inView,
    record: (record, game) => status.record(record, recordKey(game)),
  };
}
