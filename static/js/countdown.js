// A countdown from a number of seconds the server sent: ticks once a second on the page's own
// clock, from the moment the view arrived. The server stays the judge of when time is up.

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
