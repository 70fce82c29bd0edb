// The renderers of the session: a view of the game put on every part of the page, and the
// change between two views said (the news line, the live region, a sound). They decide nothing:
// what is shown comes from the view, what is said from the difference of two views.
import { loadPreferences, recordKey } from "./controls.js";
import {
  describe, describeLastMove, describeOfferChange, describePresence, describeStart, nameAt,
  opponentOf, sentences,
} from "./words.js";

/** "You play O this time": a rematch swapped the side of a seated player, or "". */
export function swapped(before, now) {
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
  } = parts;

  /** Render `game` everywhere. `extra`: {fresh, opening, link, record, following}. */
  function paint(game, { fresh, opening = false, link = null, record = null, following = null } = {}) {
    app.dataset.role = game.you ?? "";
    app.dataset.status = game.status;
    coach.paint(game, fresh);
    practice.hidden = !(game.start > 0);
    status.say(describe(game, game.you));
    seats.render(game);
    clock.render(game);
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
   * Say what changed from `previous` to `game` (null: the first view of this game).
   * `lead`: words to open with; `withdrawn`: this page took its own offer back.
   */
  function tell(previous, game, { opening = false, lead = "", withdrawn = false } = {}) {
    const { you } = game;
    const moved = previous ? game.moves.length > previous.moves.length
      : opening && game.moves.length > 0;
    // A practice game opens on a position: say what it is rather than who moved last.
    const lastMove = moved && !(opening && game.start > 0) ? describeLastMove(game, you) : "";
    const presence = describePresence(previous, game, you);
    const offered = describeOfferChange(previous, game, you, { withdrawn });
    const news = [lastMove, presence].filter(Boolean).join(" · ");
    const start = !previous && opening ? describeStart(game, you) : "";
    const ended = previous?.status === "playing" && game.status !== "playing";
    // The lead says what the board cannot (the side changed); the board shows the AI's move.
    if (lead) status.news(lead);
    else if (news) status.news(news);
    else if (!previous) status.news(start);
    else if (ended) status.news(""); // the status line says how it ended
    if (moved || ended || presence || offered || !previous) {
      status.announce(sentences([lead, lastMove || start, describe(game, you), presence, offered]));
    }
    const blip = moved || ended ? tune(game) : null;
    if (blip) sound.play(blip);
  }

  /** Put `game` on screen after `previous` (null when it is new here) and say what changed. */
  function render(previous, game, { opening = false, lead = "", withdrawn = false, ...extra } = {}) {
    paint(game, { ...extra, opening, fresh: freshCell(previous, game, opening) });
    tell(previous, game, { opening, lead, withdrawn });
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

  return {
    paint, render, reflect,
    record: (record, game) => status.record(record, recordKey(game)),
  };
}
