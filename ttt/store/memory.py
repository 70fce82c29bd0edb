"""Matches in this process's memory: for tests and throwaway servers."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from ttt.game.match import Match
from ttt.store.base import (
    CapReached,
    Caps,
    Change,
    Credit,
    Profile,
    add_credits,
    as_update,
    by_kind,
    empty_record,
)


class MemoryStore:
    """A dict of matches behind one lock."""

    url = "memory://"  # where it lives: what sits beside it (the bot book) opens there too

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._games: dict[str, Match] = {}
        self._records: dict[str, dict[str, dict[str, int]]] = {}
        self._current: dict[str, str] = {}
        self._names: dict[str, str] = {}
        self._beat: float | None = None
        self._seen: dict[str, float] = {}
        self._played: dict[str, bool] = {}

    def _count_live(self, owner: str | None = None) -> int:
        return sum(1 for m in self._games.values() if not m.is_over
                   and (owner is None or owner in m.owners()))

    def create(self, match: Match, caps: Caps | None = None, current: str | None = None,
               around: Any = None) -> None:
        with self._lock:
            if match.id in self._games:
                raise ValueError(f"game {match.id} exists")
            if caps:
                self._check(match, caps)
            self._games[match.id] = match

    def _check(self, match: Match, caps: Caps) -> None:
        """Refuse a new game whose player, address or server has too many live ones."""
        for who in match.owners():
            cap = caps.per_origin if who.startswith("@") else caps.per_player
            if cap and self._count_live(who) >= cap:
                raise CapReached(per_player=True, per_address=who.startswith("@"))
        if self._count_live() >= caps.total:
            raise CapReached(per_player=False)

    def get(self, game_id: str) -> Match | None:
        with self._lock:
            return self._games.get(game_id)

    def get_many(self, game_ids: list[str]) -> list[Match | None]:
        with self._lock:
            return [self._games.get(game_id) for game_id in game_ids]

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        with self._lock:
            before = self._games.get(game_id)
            if before is None:
                return None
            update = as_update(change(before))
            after = update.match
            if after.rev != before.rev:
                if update.create and update.caps:
                    self._check(update.create, update.caps)
                self._games[game_id] = after
                if update.create:
                    self._games[update.create.id] = update.create
                for who in {c[0] for c in update.credits}:
                    add_credits(self._records.setdefault(who, empty_record()), who,
                                update.credits)
            return before, after

    def delete(self, game_id: str) -> None:
        with self._lock:
            self._games.pop(game_id, None)

    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        with self._lock:
            return self._record(player_id)

    def _record(self, player_id: str) -> dict[str, dict[str, int]]:
        """A copy of the player's record (the lock is held)."""
        found = self._records.get(player_id)
        return {k: dict(v) for k, v in (found or empty_record()).items()}

    def current(self, player_id: str) -> str | None:
        with self._lock:
            return self._current.get(player_id)

    def set_current(self, player_id: str, game_id: str) -> None:
        with self._lock:
            self._current[player_id] = game_id
            self._seen[player_id] = time.time()

    def name(self, player_id: str) -> str | None:
        with self._lock:
            return self._names.get(player_id)

    def profile(self, player_id: str) -> Profile:
        with self._lock:
            return Profile(self._names.get(player_id), self._current.get(player_id),
                           self._record(player_id), self._live(player_id))

    def set_name(self, player_id: str, name: str) -> None:
        with self._lock:
            self._names[player_id] = name
            self._seen[player_id] = time.time()

    def mark_played(self, player_id: str) -> None:
        with self._lock:
            self._played[player_id] = True
            self._seen[player_id] = time.time()

    def played(self, player_id: str) -> bool:
        with self._lock:
            return player_id in self._played

    def live_games(self, player_id: str) -> list[str]:
        with self._lock:
            return self._live(player_id)

    def _live(self, player_id: str) -> list[str]:
        """The player's unfinished games, sorted (the lock is held)."""
        return sorted(gid for gid, m in self._games.items()
                      if not m.is_over and player_id in m.seats.values())

    def live_ids(self) -> list[str]:
        with self._lock:
            return sorted(gid for gid, m in self._games.items() if not m.is_over)

    def due(self, now: float) -> list[str]:
        with self._lock:
            return sorted(gid for gid, m in self._games.items()
                          if m.deadline is not None and m.deadline <= now and not m.is_over)

    def resume(self, clock: Callable[[], float], grace: float, credit: Credit) -> list[Match]:
        with self._lock:
            now = clock()
            last, self._beat = self._beat, now
            if last is None or now - last <= grace:
                return []
            credited = []
            for gid, match in self._games.items():
                after = credit(match, last, now - last)
                if after.rev != match.rev:
                    self._games[gid] = after
                    credited.append(after)
            return credited

    def purge(self, finished_before: float, idle_before: float,
              untouched_before: float | None = None) -> int:
        with self._lock:
            gone = [gid for gid, m in self._games.items()
                    if m.updated < idle_before or (m.is_over and m.updated < finished_before)
                    or (untouched_before is not None and not m.is_over and m.untouched
                        and m.created < untouched_before)]
            for gid in gone:
                del self._games[gid]
            seated = {p for m in self._games.values() if not m.is_over for p in m.humans()}
            known = {*self._current, *self._names, *self._records, *self._played}
            for who in [w for w in known if w not in seated
                        and self._seen.get(w, float("-inf")) < idle_before]:
                for profiles in (self._current, self._names, self._records, self._seen,
                                 self._played):
                    profiles.pop(who, None)  # type: ignore[attr-defined]
            return len(gone)

    def count_live(self, player_id: str | None = None) -> int:
        with self._lock:
            return self._count_live(player_id)

    def count_live_by_kind(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return by_kind(Counter((m.mode, m.variant) for m in self._games.values()
                                   if not m.is_over))

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        pass
