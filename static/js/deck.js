// The place the review and the settings share: the settings while a game is on; once it is
// over, the review on top, with tabs (Review | Settings) to go between them.
import { modified } from "./board.js";

const MOVES = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -1, ArrowDown: 1 };

/**
 * Wire the tab list `tabs` ([role=tab] buttons, each aria-controls its page). `onLeave(id)`:
 * the player turned from the page with that id to another.
 */
export function createDeck(tabs, { onLeave } = {}) {
  const buttons = Array.from(tabs.querySelectorAll("[role=tab]"));
  const pages = buttons.map((tab) => document.getElementById(tab.getAttribute("aria-controls")));
  let shownFor = null; // the game whose end the tabs were opened for

  /** Show the page of tab `index` (and give it the keyboard if `focus`). */
  function select(index, { focus = false } = {}) {
    buttons.forEach((tab, at) => {
      const chosen = at === index;
      tab.setAttribute("aria-selected", String(chosen));
      tab.tabIndex = chosen ? 0 : -1;
      pages[at].hidden = !chosen;
    });
    if (focus) buttons[index].focus();
  }

  /** The player's choice of tab: the page left behind is told. */
  function choose(index, options) {
    const left = pages.find((page) => !page.hidden);
    select(index, options);
    if (left && left !== pages[index]) onLeave?.(left.id);
  }

  tabs.addEventListener("click", (event) => {
    const tab = event.target.closest("[role=tab]");
    if (tab) choose(buttons.indexOf(tab));
  });

  // Arrow keys move along the tabs and show each page (automatic activation), Home and End jump.
  tabs.addEventListener("keydown", (event) => {
    if (modified(event)) return;
    const at = buttons.indexOf(document.activeElement);
    let to;
    if (event.key in MOVES) to = (at + MOVES[event.key] + buttons.length) % buttons.length;
    else if (event.key === "Home") to = 0;
    else if (event.key === "End") to = buttons.length - 1;
    else return;
    event.preventDefault();
    choose(to, { focus: true });
  });

  /** Give the tabs their roles, or take them away while there is one page to show. */
  function roles(on) {
    tabs.hidden = !on;
    buttons.forEach((tab, at) => {
      if (on) {
        pages[at].setAttribute("role", "tabpanel");
        pages[at].setAttribute("aria-labelledby", tab.id);
      } else {
        pages[at].removeAttribute("role");
        pages[at].removeAttribute("aria-labelledby");
      }
    });
  }

  return {
    /**
     * A game is over: open on the review (the first page) once per game, unless the keyboard
     * is in the settings, which must not vanish under it.
     */
    over(gameId) {
      if (shownFor === gameId) return;
      shownFor = gameId;
      roles(true);
      const busy = pages.findIndex((page) => page.contains(document.activeElement));
      select(busy > 0 ? busy : 0);
    },

    /** A game is on: the settings alone, no tabs. */
    playing() {
      shownFor = null;
      roles(false);
      select(buttons.length - 1);
    },
  };
}
