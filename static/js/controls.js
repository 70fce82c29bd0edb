// Settings (mode, side, level, clock) kept as preferences, and the New game button.

const STORAGE_KEY = "ttt.preferences";
// clock: seconds a move in a friend game, "0" for untimed; the choices are the form's.
const DEFAULTS = Object.freeze({ mode: "ai", you: "X", level: "perfect", clock: "0" });
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
  if (/^[0-9]{1,3}$/.test(settings?.clock ?? "")) clean.clock = settings.clock;
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
export function newGamePayload({ mode, you, level, clock }) {
  if (mode === "ai") return { mode, you, level };
  if (mode === "friend") return Number(clock) > 0 ? { mode, you, clock: Number(clock) } : { mode, you };
  return { mode: "local" };
}

/** Wire the settings form and the New game button. */
export function createControls({ form, fields, newGame }, handlers) {
  function read() {
    const data = new FormData(form);
    return valid({
      mode: data.get("mode"), you: data.get("you"), level: data.get("level"),
      clock: data.get("clock"),
    });
  }

  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", () => handlers.onSettings(read()));
  newGame.addEventListener("click", () => handlers.onNewGame(read()));

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
      fields.clock.disabled = settings.mode !== "friend";
    },
  };
}
