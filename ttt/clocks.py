"""The server's own moves: the timed games' clocks, run out or given back after an outage.

A part of `ttt.table.Table`, driven by the web layer's clock loop (`tick`); the table hands
it the store, the clock, the limits and the views.
"""

from __future__ import annotations

from collections.abc import Callable

from ttt.limits import Limits
from ttt.match import credit_outage, time_out
from ttt.replies import Push
from ttt.store import Store
from ttt.views import Views


class Clocks:
    """The clock loop's steps: stamp the store as up, end the games out of time."""

    BEAT_EVERY = 1.0  # seconds between this process's stamps in the store

    def __init__(self, store: Store, clock: Callable[[], float], limits: Limits,
                 views: Views) -> None:
        self.store = store
        self.clock = clock
        self.limits = limits
        self.views = views
        # When this process last stamped the store as up; None while no clock loop runs (tests).
        self._beaten: float | None = None

    def resume_clocks(self) -> list[Push]:
        """Stamp the store as served now; after an outage (no stamp for `outage_after`), give
        every running clock the downtime back first. The pushes of the games credited."""
        now = self.clock()
        if self._beaten is not None and now - self._beaten < self.BEAT_EVERY:
            return []
        if self._beaten is None:
            self._beaten = float("-inf")  # a clock loop runs from now on: moves check it
        credited = self.store.resume(self.clock, self.limits.outage_after, credit_outage)
        self._beaten = now
        return [push for match in credited for push in self.views.game_pushes(match)]

    def resume_if_stale(self) -> list[Push]:
        """`resume_clocks` when the clock loop has not stamped for a while (the store is back)."""
        if self._beaten is None or self.clock() - self._beaten <= self.limits.outage_after:
            return []
        return self.resume_clocks()

    def tick(self) -> list[Push]:
        """End the timed games whose clock ran out; the pushes that says so."""
        # Once a clock loop runs, it stamps the store first (and gives back an outage).
        pushes: list[Push] = self.resume_clocks() if self._beaten is not None else []
        for game_id in self.store.due(self.clock()):
            changed = self.store.update(game_id, lambda m: time_out(m, self.clock()))
            if changed and changed[1].rev != changed[0].rev:
                pushes += self.views.game_pushes(changed[1])
        return pushes
