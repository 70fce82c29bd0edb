// The buttons beside New game, from the view's `can`: Resign or Abort while a game is on, Claim
// the win (with its countdown from `claimable_in`) when the opponent is away, Rematch once it
// is over, and a rematch offer with Accept and Decline, or Withdraw for the one who made it.
// They share one slot, so nothing else moves when one takes the place of another.
import { createCountdown } from "./clock.js";
import { clockWords, t } from "./squares.js";
import { describeOffer } from "./news.js";

/**
 * `buttons`: {rematch, claim, resign, abort, accept, decline, withdraw, follow}; `row`: the
 * actions row (it gains a column for Decline); `text`: the offer's line.
 * Handlers: onRematch, onClaim, onResign, onAbort, onDecline, onFollow, and onClaimDue (the
 * countdown is over: time to ask the server for a view that allows the claim).
 */
export function createOffer({ row, buttons, text }, handlers) {
  let view = null;
  const slot = ["rematch", "claim", "resign", "abort", "accept", "withdraw", "follow"];

  const pressed = (name, handler) => buttons[name].addEventListener("click", () => {
    if (buttons[name].getAttribute("aria-disabled") !== "true") handler();
  });
  pressed("rematch", () => handlers.onRematch());
  pressed("accept", () => handlers.onRematch());
  pressed("claim", () => handlers.onClaim());
  pressed("resign", () => handlers.onResign());
  pressed("abort", () => handlers.onAbort());
  pressed("decline", () => handlers.onDecline());
  pressed("withdraw", () => handlers.onDecline());
  pressed("follow", () => handlers.onFollow());

  const countdown = createCountdown((left) => {
    buttons.claim.textContent = left > 0
      // Translators: {time} a countdown ("0:42")
      ? t("Claim the win in {time}", { time: clockWords(left) }) : t("Claim the win");
  }, () => handlers.onClaimDue());

  /** Which button holds the slot for `game`. */
  function choose(game, following) {
    const can = new Set(game.can ?? []);
    const from = game.offer?.rematch ?? null;
    if (following) return "follow";
    if (game.status === "playing") {
      if (can.has("claim") || (game.claimable_in !== null && game.claimable_in !== undefined)) {
        return "claim";
      }
      if (can.has("abort")) return "abort";
      if (can.has("resign")) return "resign";
      return "rematch";
    }
    if (from && from === game.you && can.has("decline")) return "withdraw";
    if (from && from !== game.you && can.has("rematch")) return "accept";
    return "rematch";
  }

  return {
    /**
     * Show the buttons for `game` (a view). `following`: a rematch this spectator has not
     * followed yet (it stayed in the review).
     */
    render(game, { following = null } = {}) {
      const fresh = game !== view;
      view = game;
      const can = new Set(game.can ?? []);
      const shown = choose(game, following);
      // A watcher is offered nothing it cannot use (only Watch the rematch, when there is one).
      const none = game.you === "spectator" && shown !== "follow";
      for (const name of slot) buttons[name].hidden = none || name !== shown;
      // A game in progress keeps the slot but offers no restart: one stray tap must not
      // throw away a pass-and-play game (the server would take it, version 1 style).
      buttons.rematch.disabled = !can.has("rematch") || game.status === "playing";
      const answering = shown === "accept";
      buttons.decline.hidden = !answering;
      buttons.decline.setAttribute("aria-disabled", String(!can.has("decline")));
      row.classList.toggle("has-answer", answering);
      if (shown === "claim") {
        buttons.claim.setAttribute("aria-disabled", String(!can.has("claim")));
        if (can.has("claim")) {
          countdown.stop();
          buttons.claim.textContent = t("Claim the win");
        } else if (fresh) {
          // At least a second: a view that says "now" but does not allow it yet is asked again
          // a moment later, not at once in a loop.
          countdown.start(Math.max(1, game.claimable_in ?? 0));
        }
      } else {
        countdown.stop();
      }
      const words = describeOffer(game, game.you);
      text.textContent = words;
      text.parentElement.classList.toggle("has-offer", Boolean(words));
    },

    /** Whether the keyboard is on one of these buttons (it moves on when they change). */
    holds(element) {
      return Object.values(buttons).includes(element);
    },
  };
}
