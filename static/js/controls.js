// Settings (mode, side, level) kept as preferences, and the game buttons.

const STORAGE_KEY = "ttt.preferences";
const DEFAULTS = Object.freeze({ mode: "ai", you: "X", level: "perfect" });
const CHOICES = {
  mode: ["ai", "local", "friend"],
  you: ["X", "O"],
  level: ["easy", "medium", "hard", "perfect"],
};

function valid(settings) {
  const clean = { ...DEFAULTS };
  for (const [name, allowed] of Object.entries(CHOICES)) {
    if (allowed.includes(settings?.[name])) clean[name] = settings[name];
  }
  return clean;
}

/** The player's saved choices, or the defaults: X against the perfect AI. */
export function loadPreferences() {
  try {
    return valid(JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null"));
  } catch {
    return { ...DEFAULTS };
  }
}

export function savePreferences(settings) {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(valid(settings)));
  } catch {
    // Storage can be full or forbidden (private windows): preferences are a nicety.
  }
}

/** What new_game is sent for these settings. */
export function newGamePayload({ mode, you, level }) {
  if (mode === "ai") return { mode, you, level };
  if (mode === "friend") return { mode, you };
  return { mode: "local" };
}

/** Wire the settings form and the buttons under the board. */
export function createControls({ form, fields, newGame, rematch, claim }, handlers) {
  function read() {
    const data = new FormData(form);
    return valid({ mode: data.get("mode"), you: data.get("you"), level: data.get("level") });
  }

  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", () => handlers.onSettings(read()));
  newGame.addEventListener("click", () => handlers.onNewGame(read()));
  rematch.addEventListener("click", () => handlers.onRematch());
  claim.addEventListener("click", () => handlers.onClaim());

  return {
    read,

    /** Show `settings` in the form without firing a change. */
    reflect(settings) {
      for (const [name, value] of Object.entries(valid(settings))) {
        const input = form.querySelector(`input[name="${name}"][value="${value}"]`);
        if (input) input.checked = true;
      }
      fields.side.disabled = settings.mode === "local";
      fields.level.disabled = settings.mode !== "ai";
    },

    /**
     * Which of Rematch and Claim the win are offered now. They share one slot and
     * Rematch stays there, disabled, while a game is on: nothing moves when a game ends.
     */
    offer({ canRematch, canClaim }) {
      const claiming = canClaim && !canRematch;
      rematch.disabled = !canRematch;
      rematch.hidden = claiming;
      claim.hidden = !claiming;
    },
  };
}
