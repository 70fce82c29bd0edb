// Settings (mode, side, level, clock, variant) kept as preferences: the bar of selects above the
// board, and the New game button. The choices come from the server (PROTOCOL v3 `config`:
// levels per variant, modes, clocks, reactions, the claim delay), read once from the JSON the
// page was rendered with; nothing here is written down a second time.

import { t, tn } from "./squares.js";

const element = document.getElementById("config");
const EMPTY = { variants: {}, modes: [], clocks: [], reactions: [], claim_after: null };

/** The server's `config` object, as embedded in the page (an empty one on pages without it). */
export const config = Object.freeze(element ? { ...EMPTY, ...JSON.parse(element.textContent) } : EMPTY);

/** The AI levels the server offers for `variant`, weakest first. */
export function levelsOf(variant) {
  return config.variants[variant]?.levels ?? [];
}

/** The row of the record a game counts in, as the server names it (PROTOCOL v4: the view's
 * `record_key`, else `config`'s `records` of its variant); null when it counts in none. */
export function recordKey(game) {
  if (!game?.level) return null;
  return game.record_key ?? config.variants[game.variant ?? "classic"]?.records?.[game.level] ?? null;
}

/** The claim delay in words: "1 minute", "30 seconds". */
export function claimWords() {
  const seconds = config.claim_after;
  if (typeof seconds !== "number") return t("a while");
  if (seconds % 60 === 0) return tn("{n} minute", "{n} minutes", seconds / 60);
  return tn("{n} second", "{n} seconds", seconds);
}

const STORAGE_KEY = "ttt.preferences";
const SIDES = ["X", "O"];
const UNTIMED = "0";

/**
 * The settings with every unknown choice replaced by the first the server offers (`config`);
 * clock: seconds a move in a friend game, "0" for untimed. A first visit plays X against the
 * weakest AI: a first game a newcomer can win. A level the variant lacks becomes its strongest.
 */
function valid(settings) {
  const pick = (value, allowed, fallback = allowed[0]) => (allowed.includes(value) ? value : fallback);
  const variants = Object.keys(config.variants);
  const variant = pick(settings?.variant, variants);
  const levels = levelsOf(variant);
  const clocks = [UNTIMED, ...config.clocks.map(String)];
  return {
    mode: pick(settings?.mode, config.modes),
    you: pick(settings?.you, SIDES),
    level: pick(settings?.level, levels, settings?.level ? levels[levels.length - 1] : levels[0]),
    clock: pick(String(settings?.clock ?? UNTIMED), clocks, UNTIMED),
    variant,
  };
}

/** The player's saved choices, or the defaults: X against the easy AI. */
export function loadPreferences() {
  try {
    return valid(JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null"));
  } catch {
    return valid(null);
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
        const missing = !levelsOf(clean.variant).includes(option.value);
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
