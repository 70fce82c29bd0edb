"""Matches in this process's memory: for tests and throwaway servers."""

from __future__ import annotations

import threading

from ttt.match import Match
from ttt.store import Change, add_results, empty_record, players_to_credit


class MemoryStore:
    """A dict of matches behind one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._games: dict[str, Match] = {}
        self._records: dict[str, dict[str, dict[str, int]]] = {}
        self._current: dict[str, str] = {}

    def create(self, match: Match) -> None:
        with self._lock:
            if match.id in self._games:
                raise ValueError(f"game {match.id} exists")
            self._games[match.id] = match

    def get(self, game_id: str) -> Match | None:
        with self._lock:
            return self._games.get(game_id)

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        with self._lock:
            before = self._games.get(game_id)
            if before is None:
                return None
            after = change(before)
            if after is not before:
                self._games[game_id] = after
                for who in players_to_credit(before, after):
                    record = self._records.setdefault(who, empty_record())
                    add_results(record, before, after, who)
            return before, after

    def delete(self, game_id: str) -> None:
        with self._lock:
            self._games.pop(game_id, None)

    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        with self._lock:
            found = self._records.get(player_id)
            return {k: dict(v) for k, v in (found or empty_record()).items()}

    def current(self, player_id: str) -> str | None:
        with self._lock:
            return self._current.get(player_id)

    def set_current(self, player_id: str, game_id: str) -> None:
        with self._lock:
            self._current[player_id] = game_id

    def purge(self, finished_before: float, idle_before: float) -> int:
        with self._lock:
            gone = [gid for gid, m in self._games.items()
                    if m.updated < idle_before or (m.is_over and m.updated < finished_before)]
            for gid in gone:
                del self._games[gid]
            return len(gone)

    def count_live(self, player_id: str | None = None) -> int:
        with self._lock:
            return sum(1 for m in self._games.values() if not m.is_over
                       and (player_id is None or player_id in m.seats.values()))

    def ping(self) -> bool:
        return True

    def close(self) -> None:
        pass
