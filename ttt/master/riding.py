"""A connection's lease change sent in the round trip of the write that makes its game (one
round trip, not the create and then one more for the leases).

`plan` gives what the Redis store's write carries (`RedisStore.create(..., around=)`): the
lease commands inside the write's script, run only if it writes (a refused create leaves the
old game's leases as they were), and the presence of both games read before the script and
after it in the same pipeline, as `RedisSeats.shift` reads them. `Presence.attach` then takes
that answer instead of shifting again; a plan no write carried (another store) is shifted as
before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Leave = tuple[str, tuple[str, ...], float]  # game, marks, grace
Join = tuple[str, tuple[str, ...]]         # game, marks


@dataclass
class Planned:
    """A lease change to ride a write: `was` the connection's (game, role, seats) it starts
    from, `join` the game and seats it ends on; `found` the shift's answer once written."""

    was: tuple[Any, ...]
    join: Join
    pre: list[tuple] = field(default_factory=list)
    inside: list[tuple] = field(default_factory=list)
    post: list[tuple] = field(default_factory=list)
    took: Callable[[list, list], None] = lambda before, after: None
    found: list | None = None


def plan(seats: Any, sid: str, join: Join, was: tuple[Any, ...], present: Callable,
         lease: float, watch: str, ridden_for: float) -> Planned:
    """The commands of `seats.shift(sid, leave, join)` split around a write (see above), the
    connection leaving what it showed (`was`: game, role, seats)."""
    leave: Leave | None = (was[0], was[2], 0.0) if was[0] else None
    now = seats._clock()
    parts = [(leave[0], leave[1], now + leave[2], True) if leave and leave[1] else None,
             (join[0], join[1], now + lease, False) if join[1] else None]
    planned = Planned(was, join)
    for part in parts:
        if part is None:
            continue
        game, marks, score, leaving = part
        counts = [("ZCOUNT", seats._key(game, mark), f"({now}", "+inf")
                  for mark in ("X", "O", watch)]
        planned.pre += counts
        planned.post += counts
        for mark in marks:
            key = seats._key(game, mark)
            planned.inside.append(("ZREM", key, sid) if mark == watch and leaving
                                  else ("ZADD", key, score, sid))
            planned.inside.append(("EXPIRE", key, 24 * 3600))

    def took(before: list, after: list) -> None:
        befores, afters = iter(before), iter(after)
        found: list = []
        for part in parts:
            if part is None:
                found.append(None)
                continue
            snapshots = (present(befores), present(afters))
            seats._ridden[part[0]] = (snapshots[1], now, time.monotonic() + ridden_for)
            found.append(snapshots)
        planned.found = found

    planned.took = took
    return planned
