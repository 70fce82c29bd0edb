"""The catch-up push after a message-queue outage, retried until the store answers.

When the queue listener is back after a cut (`Hub.resend`, in its own background task), each
game a room of this process shows is read from the store and sent to those rooms. The store
is often the same Redis, still loading its dataset or refusing connections for a moment
after the queue came back: a game whose read failed is tried again with a growing wait until
it is sent, it is gone (deleted, or no room here shows it any more), or `GIVE_UP` passed
(the next move sends its view anyway). One warning when a read first fails, one line at the
end: never a line per try (a read that fails once must not cost players their catch-up push).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

log = logging.getLogger("ttt.hub")

DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0)  # then every 15 s
GIVE_UP = 600.0


def resend_until_answered(games: Iterable[str], send: Callable[[str], bool],
                          shown: Callable[[str], bool],
                          sleep: Callable[[float], None] = time.sleep,
                          clock: Callable[[], float] = time.monotonic,
                          give_up: float = GIVE_UP) -> int:
    """send(game) each game (True: sent; False: the store has it no more; raises while the
    store does not answer), then again with back-off the ones that raised, while shown(game).
    How many were sent."""
    started, sent, tries = clock(), 0, 0
    left: list[str] = []
    error: Exception | None = None
    for game in games:
        try:
            sent += bool(send(game))
        except Exception as failed:  # the store is away too: tried again below
            left.append(game)
            error = failed
    if not left:
        return sent
    log.warning("could not resend %d games yet (%s: %s): trying again until the store answers",
                len(left), type(error).__name__, error)
    while left and clock() - started < give_up:
        sleep(DELAYS[min(tries, len(DELAYS) - 1)])
        tries += 1
        waiting = []
        for game in left:
            if not shown(game):
                continue  # nobody here looks at it any more
            try:
                sent += bool(send(game))
            except Exception as failed:
                waiting.append(game)
                error = failed
        left = waiting
    if left:
        log.warning("gave up resending %d games after %.0f s (%s: %s): their next move sends "
                    "them", len(left), clock() - started, type(error).__name__, error)
    else:
        log.info("store back: the catch-up push resent after %d tries (%.1f s)", tries,
                 clock() - started)
    return sent
