// Asking before a game in progress is left: what happens to it, in words, and a dialog in the
// page (a modal <dialog>: it keeps the keyboard inside, Escape stays, focus returns after).
import { claimWords } from "./controls.js";
import { friendName } from "./words.js";
import { t } from "./squares.js";

/** Whether someone else sits at `game` and would be told: a friend in the other seat. */
function somebodyThere(game) {
  const other = game.you === "X" ? "O" : "X";
  return game.mode === "friend" && game.seats[other] === "human";
}

/** Whether the person has put a mark on the board of `game`: only then is leaving asked about. */
function marked(game) {
  return game.moves.some((cell) => game.board[cell] === game.you);
}

/**
 * What leaving `game` (a view) needs, or null when nothing: `event` is sent first ("abort" or
 * "decline" for a friend or two people at one screen, else null); `ask` says whether to ask;
 * `title`, `text` and `go` are the dialog's words. A game against the AI is ended by the server
 * itself when the next game is asked for (PROTOCOL v4 `from`): the page only asks, in words
 * made from the view's `can`, and sends nothing for it.
 */
export function leaving(game) {
  if (!game) return null;
  const can = new Set(game.can ?? []);
  const { you } = game;
  if (you !== "X" && you !== "O" && you !== "both") return null; // a spectator just goes
  if (game.status !== "playing") {
    // A standing offer is taken back (or declined) rather than left hanging.
    return can.has("decline") ? { event: "decline", ask: false } : null;
  }
  const title = t("Leave this game?");
  if (you === "both") {
    // Two people at one screen: their game is only asked about once it has moves.
    const event = can.has("abort") ? "abort" : null;
    if (!game.moves.length) return event ? { event, ask: false } : null;
    const text = event ? t("The game is cancelled: it counts nowhere.")
      : t("The game will be left as it is.");
    return { event, ask: true, title, text, go: t("Leave") };
  }
  if (game.mode === "ai") {
    if (!marked(game)) return null; // nothing of the person's is on the board: nothing to lose
    return can.has("abort")
      ? { event: null, ask: true, title, text: t("The game is not counted: nobody wins."), go: t("Leave") }
      : {
        event: null, ask: true, title,
        text: t("You resign: this counts as a loss against the AI."), go: t("Resign and leave"),
      };
  }
  if (game.mode !== "friend") return null;
  if (can.has("abort")) {
    // Nothing that counts is lost: only a friend who is there is asked about.
    if (!somebodyThere(game)) {
      // Worth a word only once the player had put a mark down.
      return { event: "abort", ask: false,
        told: marked(game) ? t("The game you left was not counted") : "" };
    }
    return {
      event: "abort", ask: true, title,
      text: t("The game is cancelled: nobody wins, and it counts nowhere."),
      go: t("Cancel it and leave"),
    };
  }
  const friend = friendName(game, you);
  return {
    event: null, ask: true, title,
    // Translators: {friend} their name or "your friend"; {time} a countdown ("0:42")
    text: t("The game stays open: {friend} can claim it in {time}.", { friend, time: claimWords() }),
    go: t("Leave"),
  };
}

/** What the server did with `game` (the view left) as the answer's `left` says (PROTOCOL v4),
 * in words, or "": worth a word only once the person had put a mark down. */
export function leftWords(left, game) {
  if (!left || !game || left.game !== game.id || !marked(game)) return "";
  if (left.status === "aborted") return t("The game you left was not counted");
  return left.reason === "resign" ? t("The game you left counted as a loss") : "";
}

/** The words of the Resign and Abort buttons' question. */
export function ending(game, event) {
  if (event === "abort") {
    return {
      title: t("Abort this game?"), text: t("Nobody wins, and it counts nowhere."), go: t("Abort"),
    };
  }
  const text = game.mode === "ai"
    ? t("It counts as a loss against the AI.")
    // Translators: {name} a name (or "Your friend", X, O)
    : t("{name} wins the game.", { name: friendName(game, game.you, { start: true }) });
  return { title: t("Resign this game?"), text, go: t("Resign") };
}

/** Wire the dialog: ask({title, text, go}) -> Promise<boolean> (true: go ahead). */
export function createLeave(dialog) {
  const title = dialog.querySelector("[data-leave='title']");
  const text = dialog.querySelector("[data-leave='text']");
  const go = dialog.querySelector("[data-leave='go']");
  const stay = dialog.querySelector("[data-leave='stay']");
  let settle = null;

  function close(answer) {
    const done = settle;
    settle = null;
    if (dialog.open) dialog.close();
    done?.(answer);
  }

  go.addEventListener("click", () => close(true));
  stay.addEventListener("click", () => close(false));
  // Escape. The close event comes a frame after close(): when the dialog is open again by then
  // (stay, then another choice at once), it belonged to the question already answered.
  dialog.addEventListener("close", () => { if (!dialog.open) close(false); });
  // A tap on the dimmed page around the dialog is "stay".
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) close(false);
  });

  return {
    ask(words) {
      close(false);
      title.textContent = words.title;
      text.textContent = words.text;
      go.textContent = words.go;
      return new Promise((resolve) => {
        settle = resolve;
        dialog.showModal();
        stay.focus(); // the safe choice first
      });
    },
  };
}
