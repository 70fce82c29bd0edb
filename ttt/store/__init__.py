"""Where matches and player records live: one small interface, several backends.

`open_store(url)` picks the backend: `memory://`, `sqlite:///path`, `redis://host:port/db`.
Every backend applies a change atomically with a compare-and-set on the match's
revision, and counts a finished game against the AI into the player's record
in the same step, so a move and its result are never split by a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ttt.match import Match, results
from ttt.players import AI_LEVELS

Change = Callable[[Match], Match]
MAX_RETRIES = 20


class StoreUnavailable(RuntimeError):
    """The backing service cannot be reached."""


class Store(Protocol):
    """What the web layer needs from storage."""

    def create(self, match: Match) -> None:
        """Add a new match."""

    def get(self, game_id: str) -> Match | None:
        """The match with that id, or None."""

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        """Apply `change` atomically; (before, after), or None when there is no such game.

        `change` may raise MatchError, which leaves the match untouched. It may be
        called more than once when another writer got in first.
        """

    def delete(self, game_id: str) -> None:
        """Remove a game (one that was never shown to anybody)."""

    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        """The player's wins, draws and losses against the AI, per level."""

    def current(self, player_id: str) -> str | None:
        """The id of the player's current game."""

    def set_current(self, player_id: str, game_id: str) -> None:
        """Remember the player's current game."""

    def purge(self, finished_before: float, idle_before: float) -> int:
        """Delete finished games not touched since the first time, and any since the second."""

    def count_live(self, player_id: str | None = None) -> int:
        """Games still being played (by this player, if given)."""

    def ping(self) -> bool:
        """Whether the backend answers."""

    def close(self) -> None:
        """Release connections."""


def empty_record() -> dict[str, dict[str, int]]:
    """A record with no games."""
    return {level: {"wins": 0, "draws": 0, "losses": 0} for level in AI_LEVELS}


def add_results(record: dict[str, dict[str, int]], before: Match, after: Match,
                player_id: str) -> bool:
    """Count into `record` the results of this change for that player; whether any."""
    changed = False
    for who, level, outcome in results(before, after):
        if who == player_id:
            record.setdefault(level, {"wins": 0, "draws": 0, "losses": 0})[outcome] += 1
            changed = True
    return changed


def players_to_credit(before: Match, after: Match) -> list[str]:
    """The player ids whose records this change touches."""
    return sorted({who for who, _, _ in results(before, after)})


def open_store(url: str, finished_ttl: float = 7 * 24 * 3600,
               idle_ttl: float = 30 * 24 * 3600) -> Store:
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

        return RedisStore(url, finished_ttl=finished_ttl, idle_ttl=idle_ttl)
    raise ValueError(f"unknown store {url!r}: use memory://, sqlite:///path or redis://host:port/db")
