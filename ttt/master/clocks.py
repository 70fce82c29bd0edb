"""The server's own moves: the timed games' clocks, run out or given back after an outage.

A part of the master (ttt.master.table), driven by the web layer's clock loop (`tick`): it takes
the services and the views, and returns the pushes of the games it changed.
"""

from __future__ import annotations

from ttt.game.match import credit_outage, time_out
from ttt.master.replies import Push
from ttt.master.services import Services
from ttt.master.views import Views


class Clocks:
    """The clock loop's steps: stamp the store as up, end the games out of time."""

    BEAT_EVERY = 1.0  # seconds between this process's stamps in the store

    def __init__(self, services: Services, views: Views, beaten: float | None = None) -> None:
        self.services = services
        self.views = views
        # When this process last stamped the store as up; None while no clock loop runs (tests).
        self.beaten = beaten

    def resume_clocks(self) -> list[Push]:
        """Stamp the store as served now; after an outage (no stamp for `outage_after`), give
        every running clock the downtime back first. The pushes of the games credited."""
        svc = self.services
        now = svc.clock()
        if self.beaten is not None and now - self.beaten < self.BEAT_EVERY:
            return []
        if self.beaten is None:
            self.beaten = float("-inf")  # a clock loop runs from now on: moves check it
        credited = svc.store.resume(svc.clock, svc.limits.outage_after, credit_outage)
        self.beaten = now
        return [push for match in credited for push in self.views.game_pushes(match)]

    def resume_if_stale(self) -> list[Push]:
        """`resume_clocks` when the clock loop has not stamped for a while (the store is back)."""
        svc = self.services
        if self.beaten is None or svc.clock() - self.beaten <= svc.limits.outage_after:
            return []
        return self.resume_clocks()

    def tick(self) -> list[Push]:
        """End the timed games whose clock ran out; the pushes that says so."""
        # Once a clock loop runs, it stamps the store first (and gives back an outage).
        pushes: list[Push] = self.resume_clocks() if self.beaten is not None else []
        svc = self.services
        for game_id in svc.store.due(svc.clock()):
            changed = svc.write(game_id, lambda m: time_out(m, svc.clock()))
            if changed and changed[1].rev != changed[0].rev:
                pushes += self.views.game_pushes(changed[1])
        return pushes
