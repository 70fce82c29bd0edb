// The clock of a timed game, on the seats: the time left to the side on move, as text ("0:07")
// and as a bar, counted down from the server's `time_left`; a warning at 5 seconds. The server
// ends the game when the time is up: the page only shows it.
import { clockWords, tn } from "./squares.js";

/**
 * `onTick(left)`: seconds left (a whole number, 0 at the end), at the start and on every
 * second; `onDone()`: once, when it reaches 0.
 */
export function createCountdown(onTick, onDone = () => {}) {
  let timer = 0;
  let end = 0;

  function tick() {
    const left = Math.max(0, Math.ceil((end - performance.now()) / 1000));
    onTick(left);
    if (left === 0) {
      timer = 0;
      onDone();
      return;
    }
    // Wake just after the next whole second, so the text changes when it should.
    const next = end - (left - 1) * 1000 - performance.now();
    timer = setTimeout(tick, Math.max(20, next + 15));
  }

  return {
    /** Count down from `seconds`, as received just now. */
    start(seconds) {
      clearTimeout(timer);
      end = performance.now() + Math.max(0, seconds) * 1000;
      tick();
    },

    stop() {
      clearTimeout(timer);
      timer = 0;
    },

    /** Whether it is still counting. */
    running() {
      return timer !== 0;
    },
  };
}

const WARN_AT = 5;

/**
 * Wire the clocks of the chips ({X, O}: each holds a .player-clock and a .clock-bar).
 * `onLow(text)`: the player's own time has just come down to the warning.
 */
export function createClock(chips, { onLow }) {
  let view = null; // the view whose time_left is counting
  let side = null; // the side on move in it
  let warned = false;

  const text = (at) => chips[at].querySelector(".player-clock");
  const bar = (at) => chips[at].querySelector(".clock-bar");

  const countdown = createCountdown((left) => {
    if (!side) return;
    text(side).textContent = clockWords(left);
    const low = left <= WARN_AT;
    chips[side].classList.toggle("is-low", low);
    // The bar runs smoothly to the next second's length (no motion: it steps).
    const next = Math.max(0, left - 1);
    bar(side).style.setProperty("--left", String(Math.min(1, next / view.clock)));
    if (low && !warned && view.you === side) {
      warned = true;
      onLow(tn("{n} second left", "{n} seconds left", left));
    }
  });

  /** Show the clocks of `game`; a new view restarts the count from its `time_left`. */
  function render(game) {
    if (game === view) return;
    const timed = Boolean(game.clock);
    // While a seat is open `time_left` is the time the move will have (PROTOCOL v5): still.
    const running = timed && game.status === "playing" && game.time_left !== null
      && game.time_left !== undefined && game.turn
      && !Object.values(game.seats ?? {}).includes("open");
    const before = side;
    view = game;
    side = running ? game.turn : null;
    if (side !== before) warned = false;
    for (const at of ["X", "O"]) {
      const chip = chips[at];
      chip.classList.toggle("is-timed", timed);
      chip.classList.toggle("is-ticking", at === side);
      chip.classList.remove("is-low");
      // Before the second player sits, both seats show the time a move will have; then only
      // the side on move has a clock (the names need the room on a phone). The name shrinks
      // or grows: nothing else on the page moves.
      const shown = timed && (side === null ? game.status === "playing" : at === side);
      text(at).textContent = shown ? clockWords(game.clock) : "";
      text(at).hidden = !shown;
      // A first-move window (PROTOCOL v3 fair starts) may be longer than a move's time.
      const left = at === side ? Math.min(1, game.time_left / game.clock) : 1;
      bar(at).style.setProperty("--left", String(left));
    }
    if (side) countdown.start(game.time_left);
    else countdown.stop();
  }

  return { render };
}
