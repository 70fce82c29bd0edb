// The second line of a friend game while the opponent is away: "Ben left · you can claim the
// win in 0:42". The main status keeps saying whose turn it is (PROTOCOL v4 "An absent friend
// never wins on your clock"): the player on move is never steered away from moving. The
// countdown is the server's `claimable_in`; the page only counts it down.
import { createCountdown } from "./clock.js";
import { clockWords, t } from "./squares.js";
import { friendName, opponentOf } from "./words.js";

/** Whether `game`, as `you` sees it, has an opponent who went away mid-game. */
export function awayMidGame(game, you) {
  const other = opponentOf(you);
  if (!other || game.mode !== "friend" || game.status !== "playing") return false;
  if (game.seats?.[other] !== "human" || game.online?.[other] !== false) return false;
  return game.moves.length > (game.start ?? 0);
}

/** The absence line for `left` seconds until the claim opens (0: open now). */
export function absenceWords(game, you, left) {
  const Friend = friendName(game, you, { start: true });
  return left > 0
    // Translators: {name}: their name or "Your friend"; {time}: a countdown, "0:42".
    ? t("{name} left · you can claim the win in {time}", { name: Friend, time: clockWords(left) })
    // Translators: {name} a name (or "Your friend", X, O)
    : t("{name} left · you can claim the win now", { name: Friend });
}

/** Wire the line (`line`, in the news slot `news`, which it takes while someone is away). */
export function createAbsence({ line, news }) {
  let view = null;
  const countdown = createCountdown((left) => {
    if (view) line.textContent = absenceWords(view, view.you, left);
  });

  return {
    /** Show the absence of `game`'s opponent, or clear it; a new view restarts the count. */
    render(game) {
      if (game === view) return;
      const away = awayMidGame(game, game.you) && game.claimable_in !== null
        && game.claimable_in !== undefined;
      view = away ? game : null;
      news.classList.toggle("has-absence", away);
      if (!away) {
        countdown.stop();
        line.textContent = "";
        return;
      }
      const open = (game.can ?? []).includes("claim");
      countdown.start(open ? 0 : game.claimable_in);
    },
  };
}
