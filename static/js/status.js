// The status line, move news, refusals, the banner and the record: the page's elements for
// words (the words themselves are in words.js and squares.js).
import { boardWords, number, t } from "./squares.js";
import { levelWords } from "./words.js";

// The page's words for each refusal's code: a person reads these, a program reads the code.
const REFUSALS = {
  occupied: t("That square is taken"),
  not_your_turn: t("Wait for your turn"),
  game_over: t("The game is over — start a new one"),
  spectator: t("You are watching this game"),
  rate_limited: t("Too fast — give it a moment"),
  stale: t("The board had changed — here is the latest"),
  not_found: t("That game does not exist"),
  unavailable: t("That did not go through — try again"),
  internal: t("Something went wrong on the server — try again"),
  bad_request: t("The server did not understand that"),
  timeout: t("The server did not answer — try again"),
  offline: t("You are offline — reconnecting…"),
  bad_answer: t("The server sent something odd — try again"),
  busy: t("The AI is busy — try again in a moment"),
};

const NOTICE_MS = 4500;
const FLASH_MS = 6000;

/** The message for a refused `event`; `game`: the view on screen, to say where to play. */
export function refusalText(error, event, game = null) {
  const code = error?.code;
  if (event === "claim" && code === "not_allowed") {
    return t("Not yet — wait for the countdown to end");
  }
  if (event === "move" && code === "not_allowed" && game?.variant === "ultimate") {
    const open = game.next === null || game.next === undefined;
    return open ? t("Not there — that board is closed")
      // Translators: {board} a small board ("the centre board")
      : t("Not there — play in {board}", { board: boardWords(game.next) });
  }
  if (code === "busy" && event === "new_game" && error?.message) {  // the levels that start
    // The open levels by their buttons' labels, as a list: no inflection asked of a language.
    const levels = (error.available ?? []).map((level) => levelWords(level)).join(t(", "));
    if (!levels) return t("The AI is at capacity: no new games at this level for now");
    // Translators: {levels} is the levels still open, by their buttons' names ("Easy, Medium").
    return t("The AI is at capacity: no new games at this level for now. Open: {levels}",
      { levels });
  }
  if (code === "not_allowed") {
    // The server's reason, in English on the wire: the catalog has the page's words for it
    // (those marked N_ in ttt/, served with the page's own).
    if (!error?.message) return t("That is not allowed right now");
    // Translators: {why} is the server's reason, a sentence of its own from this catalog.
    return t("That is not allowed right now: {why}", { why: t(error.message) });
  }
  return REFUSALS[code] ?? (error?.message || t("Something went wrong — try again"));
}

/** Wire the words of the page to their elements. */
export function createStatus({
  status, detail, notice, announcer, banner, bannerText, record, joined,
}) {
  let noticeTimer = 0;
  let announceFrame = 0;
  let flashTimer = 0;
  let titleLead = ""; // news the tab title carries until the player has seen the page again
  let said = "";

  function title() {
    document.title = `${titleLead ? `${titleLead} · ` : ""}${said} · ${t("Tic-tac-toe")}`;
  }

  // The tab title keeps "Ana joined" while the tab is in the background; coming back ends it.
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && titleLead && !flashTimer) {
      titleLead = "";
      title();
    }
  });

  function clearNotice() {
    clearTimeout(noticeTimer);
    notice.textContent = "";
    notice.parentElement.classList.remove("has-notice");
  }

  return {
    /** Set the status line (and the tab title). */
    say(text) {
      if (status.textContent !== text) status.textContent = text;
      said = text;
      title();
    },

    /**
     * News that must not be missed ("Ana joined"): a banner over the page for a few seconds,
     * the tab title, and a short buzz on phones that allow it. (The live region says it too.)
     */
    flash(text) {
      if (!joined) return;
      clearTimeout(flashTimer);
      joined.textContent = text;
      joined.hidden = false;
      titleLead = `🔔 ${text}`;
      title();
      try {
        navigator.vibrate?.(200);
      } catch {
        // Not allowed before the page was touched, or not a phone: the banner is enough.
      }
      flashTimer = setTimeout(() => {
        flashTimer = 0;
        joined.hidden = true;
        if (document.visibilityState === "visible") titleLead = "";
        title();
      }, FLASH_MS);
    },

    /** Take the news banner down now (what it said is no longer so). */
    unflash() {
      if (!flashTimer) return;
      clearTimeout(flashTimer);
      flashTimer = 0;
      joined.hidden = true;
      titleLead = "";
      title();
    },

    /** Set the smaller line under the status: move news, presence. */
    news(text) {
      if (detail.textContent !== text) detail.textContent = text;
    },

    /**
     * Say `text` through the page's one polite live region (screen readers read it once).
     * The status and news lines are not live themselves: this says both, in order, once.
     */
    announce(text) {
      cancelAnimationFrame(announceFrame);
      if (announcer.textContent !== text) {
        announcer.textContent = text;
        return;
      }
      // Same words again (a second new game): empty first, so that they are read again.
      announcer.textContent = "";
      announceFrame = requestAnimationFrame(() => { announcer.textContent = text; });
    },

    /**
     * Show a refusal for a while, in place of the news line. `sticky`: until the next notice or
     * action (what became of a move tapped offline), on up to two lines.
     */
    notice(text, { sticky = false } = {}) {
      clearTimeout(noticeTimer);
      // Same text twice: empty first so screen readers announce it again.
      notice.textContent = "";
      requestAnimationFrame(() => { notice.textContent = text; });
      notice.classList.toggle("is-sticky", sticky);
      notice.parentElement.classList.add("has-notice");
      if (!sticky) noticeTimer = setTimeout(clearNotice, NOTICE_MS);
    },

    clearNotice,

    /** The connection banner: "up", "retrying", "trouble" (the store is down) or "down". */
    connection(state) {
      if (state === "up") {
        banner.hidden = true;
        return;
      }
      const texts = {
        retrying: t("Connection lost — reconnecting…"),
        trouble: t("Server trouble — retrying…"),
        down: t("Cannot reach the server — reload the page"),
        offline: t("You are offline — your last game, read only; it reconnects by itself"),
        link: t("You are offline — this game needs the network; it opens by itself when you are back"),
      };
      bannerText.textContent = texts[state] ?? texts.down;
      banner.hidden = false;
    },

    /** The record against the AI, level by level; `level` is highlighted. */
    record(stats, level) {
      for (const row of record.querySelectorAll("tr[data-level]")) {
        if (stats) {
          const line = stats[row.dataset.level] ?? { wins: 0, draws: 0, losses: 0 };
          for (const cell of row.querySelectorAll("[data-stat]")) {
            cell.textContent = number(line[cell.dataset.stat] ?? 0);
          }
        }
        row.classList.toggle("is-current", row.dataset.level === level);
      }
    },
  };
}
