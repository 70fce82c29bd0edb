"""The game store, counted: each call timed and its failures counted by operation, games
started and finished here counted and logged. A store itself (every method of
`ttt.store.Store`, written out: tests/test_metered.py checks the list), not a proxy.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ttt.game.match import Match
from ttt.runtime import loglines
from ttt.store import Caps, StoreUnavailable
from ttt.store.base import Change, Credit, Profile, Store
from ttt.web.ops.metrics import Metrics

GAMES = logging.getLogger("ttt.games")  # one line per game ended by this process


class MeteredStore:
    """A store that counts games started and finished here, and calls that failed."""

    def __init__(self, store: Store, metrics: Metrics) -> None:
        self._store, self._metrics = store, metrics
        self.url = store.url

    @property
    def wrapped(self) -> Store:
        """The store whose calls are counted."""
        return self._store

    @property
    def lost(self) -> bool:
        """Whether the store's identity is gone or another (its data went with it)."""
        return bool(getattr(self._store, "lost", False))

    def _call(self, name: str, *args: Any) -> Any:
        started = time.perf_counter()
        try:  # looked up at each call: a store's method replaced later is the one called
            return getattr(self._store, name)(*args)
        except StoreUnavailable:
            self._metrics.store_errors.labels(name).inc()
            raise
        finally:
            self._metrics.store_timer(name).observe(time.perf_counter() - started)

    # --- the games ---------------------------------------------------------------------------

    def create(self, match: Match, caps: Caps | None = None, current: str | None = None,
               around: Any = None) -> None:
        self._call("create", match, caps, current, around)
        self._metrics.started.labels(match.mode, match.variant).inc()

    def get(self, game_id: str) -> Match | None:
        return self._call("get", game_id)

    def get_many(self, game_ids: list[str]) -> list[Match | None]:
        return self._call("get_many", game_ids)

    def cached(self, game_id: str) -> Match | None:
        """The store's cached copy (ttt.store.sqlite), or None: no store call, so not timed."""
        peek = getattr(self._store, "cached", None)
        return peek(game_id) if peek is not None else None

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        changed = self._call("update", game_id, change)
        if changed:
            before, after = changed
            if not before.is_over and after.is_over:
                self._metrics.finished.labels(after.mode, after.variant).inc()
                loglines.info(GAMES, "game over game=%s status=%s winner=%s", after.id,
                              after.status, after.winner or "-", game=after.id, mode=after.mode,
                              variant=after.variant, status=after.status, winner=after.winner,
                              rev=after.rev)
            if after.rematch_id is not None and before.rematch_id is None:
                # The change made the rematch (ttt.game.endings.rematch: the same mode and
                # variant) in its transaction: a game started.
                self._metrics.started.labels(after.mode, after.variant).inc()
        return changed

    def delete(self, game_id: str) -> None:
        self._call("delete", game_id)

    def live_games(self, player_id: str) -> list[str]:
        return self._call("live_games", player_id)

    def count_live(self, player_id: str | None = None) -> int:
        return self._call("count_live", player_id)

    # --- the players -------------------------------------------------------------------------

    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        return self._call("record", player_id)

    def current(self, player_id: str) -> str | None:
        return self._call("current", player_id)

    def set_current(self, player_id: str, game_id: str) -> None:
        self._call("set_current", player_id, game_id)

    def name(self, player_id: str) -> str | None:
        return self._call("name", player_id)

    def get_with_profile(self, game_id: str, player_id: str) -> tuple[Match | None, Any]:
        """The store's (Redis: one round trip), else `get` and no profile (read if needed)."""
        if not hasattr(self._store, "get_with_profile"):
            return self.get(game_id), None
        return self._call("get_with_profile", game_id, player_id)

    def profile(self, player_id: str) -> Profile:
        return self._call("profile", player_id)

    def set_name(self, player_id: str, name: str) -> None:
        self._call("set_name", player_id, name)

    def mark_played(self, player_id: str) -> None:
        self._call("mark_played", player_id)

    def played(self, player_id: str) -> bool:
        return self._call("played", player_id)

    # --- housekeeping ------------------------------------------------------------------------

    def live_ids(self) -> list[str]:
        return self._call("live_ids")

    def count_live_by_kind(self) -> dict[tuple[str, str], int]:
        return self._call("count_live_by_kind")

    def due(self, now: float) -> list[str]:
        return self._call("due", now)

    def resume(self, clock: Callable[[], float], grace: float, credit: Credit) -> list[Match]:
        return self._call("resume", clock, grace, credit)

    def purge(self, finished_before: float, idle_before: float,
              untouched_before: float | None = None) -> int:
        return self._call("purge", finished_before, idle_before, untouched_before)

    def checkpoint(self) -> None:
        """Keep SQLite's WAL from growing (other stores have nothing to do)."""
        if hasattr(self._store, "checkpoint"):
            self._call("checkpoint")

    def ping(self) -> bool:
        return self._call("ping")

    def close(self) -> None:
        self._call("close")
