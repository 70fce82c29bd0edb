// Quick reactions in a game against a friend: the row of buttons (when `react` is in the
// view's `can`), and a received reaction shown for a moment beside its sender's seat.

const SHOWN_MS = 2600;

/**
 * Wire the row of [data-reaction] buttons and the chips ({X, O}: each holds a .reaction).
 * `onReact(reaction)`: a button was pressed.
 */
export function createReactions(row, chips, { onReact }) {
  const timers = { X: 0, O: 0 };

  row.addEventListener("click", (event) => {
    const button = event.target.closest("[data-reaction]");
    if (button && row.contains(button)) onReact(button.dataset.reaction);
  });

  return {
    /** Offer the buttons when the view allows a reaction; true if they are on offer. */
    render(game) {
      const can = Boolean(game.can?.includes("react"));
      row.hidden = !can;
      return can;
    },

    /** What `reaction` says, for a screen reader: "applause" (its button's title). */
    words(reaction) {
      const button = Array.from(row.querySelectorAll("[data-reaction]"))
        .find((candidate) => candidate.dataset.reaction === reaction);
      return button ? button.title.toLowerCase() : reaction;
    },

    /** Show `reaction` beside the seat of `from` ("X" or "O") for a moment. */
    show(from, reaction) {
      const chip = chips[from];
      if (!chip) return;
      const bubble = chip.querySelector(".reaction");
      clearTimeout(timers[from]);
      bubble.textContent = reaction;
      bubble.classList.remove("is-shown");
      // Again from the start when the same reaction comes twice in a row.
      void bubble.offsetWidth;
      bubble.classList.add("is-shown");
      timers[from] = setTimeout(() => bubble.classList.remove("is-shown"), SHOWN_MS);
    },
  };
}
