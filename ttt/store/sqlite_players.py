"""A player's rows in the SQLite store: name, current game, record, live games, played."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from ttt.store import codec
from ttt.store.base import Profile, empty_record

LIVE_OF = ("SELECT id FROM games WHERE live = 1 AND seat_x = :p "
           "UNION SELECT id FROM games WHERE live = 1 AND seat_o = :p")
# Everything a new game reads of its player, in one statement (one row, even for a player
# with no row yet): name, current game, record, live games (ids never hold a space).
PROFILE = ("SELECT (SELECT name FROM players WHERE id = :p), "
           "(SELECT current FROM players WHERE id = :p), "
           "(SELECT record FROM players WHERE id = :p), "
           f"(SELECT group_concat(id, ' ') FROM ({LIVE_OF}))")

# Who has made a move, one row each; forgotten with the player's profile.
PLAYED_TABLE = "CREATE TABLE IF NOT EXISTS played (id TEXT PRIMARY KEY)"


def _record_of(text: str | None) -> dict[str, dict[str, int]]:
    """A player's stored record (levels added since it was written read as no games)."""
    return {**empty_record(), **codec.loads(text)} if text else empty_record()


class SqlitePlayers:
    """The store's player methods (mixed into SqliteStore, whose `_conn` they use)."""

    _conn: Any

    @staticmethod
    def _read_record(conn: sqlite3.Connection, player_id: str) -> dict[str, dict[str, int]]:
        row = conn.execute("SELECT record FROM players WHERE id = ?", (player_id,)).fetchone()
        return _record_of(row[0] if row else None)

    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        with self._conn() as conn:
            return self._read_record(conn, player_id)

    def current(self, player_id: str) -> str | None:
        with self._conn() as conn:
            row = conn.execute("SELECT current FROM players WHERE id = ?",
                               (player_id,)).fetchone()
        return row[0] if row else None

    def set_current(self, player_id: str, game_id: str) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO players (id, current, seen) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET current = excluded.current, seen = excluded.seen",
                (player_id, game_id, time.time()))

    def name(self, player_id: str) -> str | None:
        with self._conn() as conn:
            row = conn.execute("SELECT name FROM players WHERE id = ?", (player_id,)).fetchone()
        return row[0] if row else None

    def profile(self, player_id: str) -> Profile:
        with self._conn() as conn:
            name, current, record, live = conn.execute(PROFILE, {"p": player_id}).fetchone()
        return Profile(name, current, _record_of(record), sorted(live.split()) if live else [])

    def set_name(self, player_id: str, name: str) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO players (id, name, seen) VALUES (?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET name = excluded.name, seen = excluded.seen",
                (player_id, name, time.time()))

    def mark_played(self, player_id: str) -> None:
        with self._conn() as conn:
            conn.execute("INSERT OR IGNORE INTO played (id) VALUES (?)", (player_id,))

    def played(self, player_id: str) -> bool:
        with self._conn() as conn:
            return conn.execute("SELECT 1 FROM played WHERE id = ?",
                                (player_id,)).fetchone() is not None

    def live_games(self, player_id: str) -> list[str]:
        with self._conn() as conn:
            return sorted(row[0] for row in conn.execute(LIVE_OF, {"p": player_id}))
