// Settings (mode, side, level, clock, variant) kept as preferences: the bar of selects above the
// board, and the New game button.

const STORAGE_KEY = "ttt.preferences";
// clock: seconds a move in a friend game, "0" for untimed; the choices are the form's.
// A first visit plays X against the easy AI: a first game a newcomer can win.
const DEFAULTS = Object.freeze({
  mode: "ai", you: "X", level: "easy", clock: "0", variant: "classic",
});
const CHOICES = {
  mode: ["ai", "local", "friend"],
  you: ["X", "O"],
  level: ["easy", "medium", "hard", "perfect"],
  variant: ["classic", "ultimate"],
};
// Ultimate is not solved: no perfect AI. A level it lacks becomes its strongest.
const LEVELS = { classic: CHOICES.level, ultimate: ["easy", "medium", "hard"] };

function valid(settings) {
  const clean = { ...DEFAULTS };
  for (const [name, allowed] of Object.entries(CHOICES)) {
    if (allowed.includes(settings?.[name])) clean[name] = settings[name];
  }
  if (/^[0-9]{1,3}$/.test(settings?.clock ?? "")) clean.clock = settings.clock;
  const levels = LEVELS[clean.variant];
  if (!levels.includes(clean.level)) clean.level = levels[levels.length - 1];
  return clean;
}

/** The player's saved choices, or the defaults: X against the easy AI. */
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
export function newGamePayload({ mode, you, level, clock, variant = "classic" }) {
  const game = variant === "classic" ? {} : { variant };
  if (mode === "ai") return { mode, you, level, ...game };
  if (mode === "friend") {
    return Number(clock) > 0 ? { mode, you, clock: Number(clock), ...game } : { mode, you, ...game };
  }
  return { mode: "local", ...game };
}

/**
 * Wire the settings `form` (one <select> per setting, each in a .pick box that shows its choice
 * in short) and the New game button.
 */
export function createControls({ form, newGame }, handlers) {
  const field = (name) => form.elements.namedItem(name);
  const pick = (name) => field(name)?.closest(".pick");

  /** The box of `name` shows the choice of its select, in short ("Perfect", not "Perfect — …"). */
  function showPick(name) {
    const select = field(name);
    const box = pick(name);
    if (!select || !box) return;
    const option = select.selectedOptions[0];
    box.dataset.value = select.value;
    box.querySelector(".pick-text").textContent = option?.dataset.short ?? option?.text ?? "";
  }

  function read() {
    // A select that does not apply now (disabled) still holds the player's choice.
    const value = (name) => field(name)?.value ?? null;
    return valid({
      mode: value("mode"), you: value("you"), level: value("level"), clock: value("clock"),
      variant: value("variant") ?? "classic",
    });
  }

  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", (event) => {
    if (event.target.name) showPick(event.target.name);
    handlers.onSettings(read());
  });
  newGame.addEventListener("click", () => handlers.onNewGame(read()));

  return {
    read,

    /** Show `settings` in the form without firing a change. */
    reflect(settings) {
      const clean = valid(settings);
      for (const option of form.querySelectorAll('select[name="level"] option')) {
        const missing = !LEVELS[clean.variant].includes(option.value);
        option.hidden = missing;
        option.disabled = missing;
      }
      for (const [name, value] of Object.entries(clean)) {
        if (field(name)) field(name).value = value;
        showPick(name);
      }
      // One place for the level (against the AI) or the clock (against a friend); nothing in
      // it applies to two players on one screen, nor a side.
      field("you").disabled = clean.mode === "local";
      field("level").disabled = clean.mode === "local";
      pick("level").hidden = clean.mode === "friend";
      pick("clock").hidden = clean.mode !== "friend";
    },
  };
}
