"""How often a game's players and spectators hear that its number of watchers changed.

A spectator coming or going changes only the game's `watchers` count: it is told in a small
`watchers` event (never the whole game), at most once every `every` seconds per game; a
change inside that second is told by the master's next tick (or rides the next `game`
push, which carries the count anyway). So a crowd of spectators coming and going costs
each player at most one push a second (else 60 spectators re-joining at 53 joins a
second send each player 53 whole games a second).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

WATCHERS_EVERY = 1.0  # seconds between two `watchers` pushes of one game


class WatchersNews:
    """Which games' `watchers` changes to push now, and which to push later (one process)."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 every: float = WATCHERS_EVERY) -> None:
        self.clock = clock
        self.every = every
        self._lock = threading.Lock()
        self._sent: dict[str, float] = {}  # game id -> when its count was last pushed
        self._due: set[str] = set()        # games whose change waits for the next tick

    def changed(self, game_id: str) -> bool:
        """The count of `game_id` changed: whether to push it now (else it is due later)."""
        now = self.clock()
        with self._lock:
            if now - self._sent.get(game_id, -self.every) < self.every:
                self._due.add(game_id)
                return False
            self._sent[game_id] = now
            self._due.discard(game_id)
            return True

    def pushed(self, game_id: str) -> None:
        """A whole view of the game went out (it carries the count): nothing is due for it."""
        with self._lock:
            self._due.discard(game_id)

    def waiting(self, game_id: str) -> bool:
        """Whether a change of that game's count waits for its second (not yet told)."""
        with self._lock:
            return game_id in self._due

    def due(self) -> list[str]:
        """The games whose change waited and may be pushed now; forgets old sendings."""
        now = self.clock()
        with self._lock:
            ready = [g for g in self._due if now - self._sent.get(g, -self.every) >= self.every]
            for game_id in ready:
                self._due.discard(game_id)
                self._sent[game_id] = now
            for game_id in [g for g, t in self._sent.items()
                            if now - t >= self.every and g not in self._due]:
                del self._sent[game_id]
            return ready
