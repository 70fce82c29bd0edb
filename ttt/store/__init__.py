"""Where matches and players live: one small interface, several backends.

`open_store(url)` picks the backend: `memory://`, `sqlite:///path`, `redis://host:port/db`.
The store knows no game rules. Every change is a compare-and-set on the match's
revision; the caller's change function says what to write besides the match
(record counters to add to, a game to create with it), and the store writes all
of it in one transaction, so a move and its result are never split by a crash.
"""

from __future__ import annotations

# The words other layers take from the package (the backends take theirs from ttt.store.base).
from ttt.store.base import (  # noqa: F401
    KINDS,
    CapReached,
    Caps,
    Change,
    Store,
    StoreUnavailable,
    Update,
    as_update,
    empty_record,
)


def open_store(url: str, finished_ttl: float = 7 * 24 * 3600,
               idle_ttl: float = 30 * 24 * 3600, untouched_ttl: float = 6 * 3600) -> Store:
    """The store for a URL: memory://, sqlite:///path or redis://host:port/db.

    Redis expires games by itself after the TTLs; the others rely on `purge`.
    """
    if url == "memory://" or url == "memory":
        from ttt.store.memory import MemoryStore

        return MemoryStore()
    if url.startswith("sqlite:///"):
        from ttt.store.sqlite import SqliteStore

        return SqliteStore(url.removeprefix("sqlite:///"))
    if url.startswith(("redis://", "rediss://", "unix://")):
        from ttt.store.redis import RedisStore

        return RedisStore(url, finished_ttl=finished_ttl, idle_ttl=idle_ttl,
                          untouched_ttl=untouched_ttl)
    raise ValueError(f"unknown store {url!r}: use memory://, sqlite:///path or redis://host:port/db")
