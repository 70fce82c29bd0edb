// What comes over the connection without being asked for: its comings and goings (with the
// join, or the first game, that a connect carries: PROTOCOL v5) and the server's pushes. Each
// is handed to the session's state; nothing here decides a rule of the game.
import { loadPreferences } from "./controls.js";
import { newest } from "./acts.js";
import { t } from "./squares.js";

/** The settings of the game a visit with nothing to show starts: a friend game nobody asked
 * for would be odd, so a first visit is against the AI. */
export function firstSettings() {
  const { mode, you, level, variant } = loadPreferences();
  return { mode: mode === "friend" ? "ai" : mode, you, level, variant };
}

/**
 * `session`: the session's state (`state`), its views (`view`, `show`), its joins (`join`,
 * `settle`), the game it would connect to (`currentId`) and the first game's payload
 * (`startPayload`); `parts`: status, coach, acts, screen.
 */
export function createArrivals({ state, view, show, join, settle, currentId, startPayload },
  { status, coach, acts, screen }) {
  return {
    /** What the next connect asks for: the game (null: this player's current one) and, when
     * the page has nothing to show yet, the game to start if the server finds none. */
    joining() {
      const id = currentId() ?? null;
      state.riding = { id, answer: null };
      return id || state.name !== "idle" ? { game: id } : { game: null, start: startPayload() };
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

    /** A game's number of watchers changed: a small push, at most one a second. */
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
