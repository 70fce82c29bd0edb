// Sound effects: short blips made by an oscillator on the spot (no audio files). Off until the
// player turns them on; the choice is remembered.

const STORAGE_KEY = "ttt.sound";

// Each tune: notes of [frequency in Hz, start in s, length in s].
const TUNES = {
  move: [[660, 0, 0.06]],                                   // a mark of yours
  reply: [[494, 0, 0.06]],                                  // the other side's mark
  win: [[523, 0, 0.09], [659, 0.09, 0.09], [784, 0.18, 0.22]],
  loss: [[440, 0, 0.12], [349, 0.13, 0.26]],
  draw: [[523, 0, 0.1], [523, 0.15, 0.16]],
};
const VOLUME = 0.15;

function loadOn() {
  try {
    return localStorage.getItem(STORAGE_KEY) === "on";
  } catch {
    return false;
  }
}

function saveOn(on) {
  try {
    localStorage.setItem(STORAGE_KEY, on ? "on" : "off");
  } catch {
    // Storage can be full or forbidden (private windows): the switch still works for now.
  }
}

/** Wire the toggle `button` (aria-pressed); returns play(tune). */
export function createSound(button) {
  const Context = window.AudioContext ?? window.webkitAudioContext;
  let on = loadOn();
  let context = null;

  function reflect() {
    button.setAttribute("aria-pressed", String(on));
  }

  /**
   * Browsers let a page make sound only after a tap or a key: the context is made (or woken)
   * inside one, and never before the player wants sound.
   */
  function wake() {
    if (!on || !Context) return;
    try {
      context ??= new Context();
      if (context.state === "suspended") context.resume();
    } catch {
      context = null; // no audio device: stay quiet
    }
  }

  function play(name) {
    if (!on || !context || context.state !== "running") return;
    const now = context.currentTime;
    for (const [frequency, start, length] of TUNES[name] ?? []) {
      const tone = context.createOscillator();
      const gain = context.createGain();
      tone.type = "triangle";
      tone.frequency.value = frequency;
      // A fast rise and an exponential fall: a blip, not a click.
      gain.gain.setValueAtTime(0.0001, now + start);
      gain.gain.exponentialRampToValueAtTime(VOLUME, now + start + 0.012);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + start + length);
      tone.connect(gain).connect(context.destination);
      tone.start(now + start);
      tone.stop(now + start + length + 0.02);
    }
  }

  button.addEventListener("click", async () => {
    on = !on;
    saveOn(on);
    reflect();
    wake();
    if (!on || !context) return;
    try {
      await context.resume(); // a new context may still be starting
    } catch {
      return;
    }
    play("move"); // what it sounds like, now that it is on
  });
  // A remembered "on" needs a first gesture on this page too.
  document.addEventListener("pointerdown", wake, true);
  document.addEventListener("keydown", wake, true);

  reflect();
  return { play };
}
