// The transport as the session uses it: server.call, plus the banner while the server's store is
// down ("unavailable") and a join now and then until a call goes through again.

/**
 * `send(event, payload)` -> Promise<answer>; `status`: the banner; `rejoin()`: join the game on
 * screen again (the retry).
 */
export function createCaller(send, { status, rejoin }) {
  let trouble = false; // the store is down: the banner stays until a call succeeds
  let timer = 0;

  /** While the store is down, join again now and then; the first success ends it. */
  function retry(delay) {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (!trouble) return;
      await rejoin();
      if (trouble) retry(Math.min(delay * 2, 16000));
    }, delay);
  }

  return async function call(event, payload) {
    const answer = await send(event, payload);
    if (answer.ok && trouble) {
      trouble = false;
      clearTimeout(timer);
      status.connection("up");
    } else if (answer.error?.code === "unavailable") {
      status.connection("trouble");
      if (!trouble) {
        trouble = true;
        retry(2000);
      }
    }
    return answer;
  };
}
