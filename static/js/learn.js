// Learning aids under the board: the evaluations switch (a remembered preference) and Hint.
import { t, tn } from "./squares.js";

const STORAGE_KEY = "ttt.evaluations";

/** Whether the player last left evaluations on. */
export function loadEvaluations() {
  try {
    return localStorage.getItem(STORAGE_KEY) === "on";
  } catch {
    return false;
  }
}

function saveEvaluations(on) {
  try {
    localStorage.setItem(STORAGE_KEY, on ? "on" : "off");
  } catch {
    // Storage can be full or forbidden (private windows): the switch still works for now.
  }
}

/**
 * Wire the switch, the hint button, the note that stands in for them when they are off, the
 * last hint's advice and the legend of the evaluations.
 */
export function createLearn(
  { evaluations, hint, count, note, advice, legend }, { onEvaluations, onHint },
) {
  const controls = [evaluations.closest("label"), hint];

  evaluations.addEventListener("change", () => {
    saveEvaluations(evaluations.checked);
    onEvaluations(evaluations.checked);
  });
  // aria-disabled, not disabled: a keyboard player keeps focus while the AI replies.
  hint.addEventListener("click", () => {
    if (hint.getAttribute("aria-disabled") !== "true") onHint();
  });

  return {
    /** Show the switch on or off without firing a change. */
    reflect(on) {
      evaluations.checked = on;
    },

    /**
     * `why`: a sentence to show instead of both controls (a friend game, a spectator), or "".
     * `canHint`: Hint may be pressed now. `used`: hints taken so far by the side it counts for.
     * `advice`: the sentence of the hint on the board, or "". `legend`: evaluations are on.
     */
    offer({ why = "", canHint = false, used = 0, advice: words = "", legend: on = false }) {
      for (const control of controls) control.hidden = Boolean(why);
      note.hidden = !why;
      note.textContent = why;
      hint.setAttribute("aria-disabled", String(!canHint));
      count.hidden = !used;
      count.textContent = String(used);
      hint.setAttribute("aria-label",
        used ? tn("Hint, {n} taken so far", "Hint, {n} taken so far", used) : t("Hint"));
      if (advice.textContent !== words) advice.textContent = words;
      advice.hidden = !words;
      legend.hidden = !on;
    },
  };
}
