"""Matches in one SQLite file: the default. A JSON snapshot per game, WAL journal.

WAL with synchronous=NORMAL survives a killed process without an fsync per
move. Every change runs in a `BEGIN IMMEDIATE` transaction, which takes the
write lock up front: two processes on the same file can never both apply a
change to the same revision.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sqlite3
import threading
from collections.abc import Iterator

from ttt.match import Match
from ttt.store import Change, StoreUnavailable, add_results, empty_record, players_to_credit

SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    rev INTEGER NOT NULL,
    updated REAL NOT NULL,
    live INTEGER NOT NULL,
    seat_x TEXT,
    seat_o TEXT,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS games_updated ON games (updated);
CREATE INDEX IF NOT EXISTS games_live_x ON games (seat_x) WHERE live = 1;
CREATE INDEX IF NOT EXISTS games_live_o ON games (seat_o) WHERE live = 1;
CREATE INDEX IF NOT EXISTS games_live ON games (live) WHERE live = 1;
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY,
    current TEXT,
    record TEXT
);
"""


class SqliteStore:
    """A small pool of connections to one database file."""

    def __init__(self, path: str, pool_size: int = 8) -> None:
        self.path = path
        if path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        # A small pool, not one connection per thread: the threaded and gevent servers
        # run each request in a new thread or greenlet, which would leak a connection each.
        self._pool: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._pool_size = pool_size
        self._write_lock = threading.Lock()
        with self._conn() as conn:
            conn.executescript(SCHEMA)

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=10,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._pool.get_nowait()
        except queue.Empty:
            conn = self._open()
        try:
            yield conn
        finally:
            if self._pool.qsize() < self._pool_size:
                self._pool.put(conn)
            else:
                conn.close()

    @staticmethod
    def _row(match: Match) -> tuple:
        return (match.rev, match.updated, 0 if match.is_over else 1, match.seats["X"],
                match.seats["O"], json.dumps(match.to_json(), separators=(",", ":")))

    def create(self, match: Match) -> None:
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO games (rev, updated, live, seat_x, seat_o, body, id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", (*self._row(match), match.id))

    def get(self, game_id: str) -> Match | None:
        with self._conn() as conn:
            row = conn.execute("SELECT body FROM games WHERE id = ?", (game_id,)).fetchone()
        return Match.from_json(json.loads(row[0])) if row else None

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        # Writers of this process queue on a lock first: SQLite's busy handler sleeps and
        # retries with no order, which under many threads starves some past the timeout.
        # BEGIN IMMEDIATE still orders writers across processes.
        with self._write_lock, self._conn() as conn:
            try:
                return self._update(conn, game_id, change)
            except sqlite3.OperationalError as error:  # locked by another process too long
                raise StoreUnavailable(str(error)) from error

    def _update(self, conn: sqlite3.Connection, game_id: str,
                change: Change) -> tuple[Match, Match] | None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT body FROM games WHERE id = ?", (game_id,)).fetchone()
            if row is None:
                conn.execute("ROLLBACK")
                return None
            before = Match.from_json(json.loads(row[0]))
            after = change(before)
            if after is not before:
                cursor = conn.execute(
                    "UPDATE games SET rev = ?, updated = ?, live = ?, seat_x = ?, seat_o = ?, "
                    "body = ? WHERE id = ? AND rev = ?", (*self._row(after), game_id, before.rev))
                if cursor.rowcount != 1:  # cannot happen under BEGIN IMMEDIATE; be loud if it does
                    raise RuntimeError("lost a compare-and-set under an immediate transaction")
                for who in players_to_credit(before, after):
                    record = self._read_record(conn, who)
                    add_results(record, before, after, who)
                    conn.execute(
                        "INSERT INTO players (id, record) VALUES (?, ?) "
                        "ON CONFLICT (id) DO UPDATE SET record = excluded.record",
                        (who, json.dumps(record)))
            conn.execute("COMMIT")
            return before, after
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def delete(self, game_id: str) -> None:
        with self._write_lock, self._conn() as conn:
            conn.execute("DELETE FROM games WHERE id = ?", (game_id,))

    @staticmethod
    def _read_record(conn: sqlite3.Connection, player_id: str) -> dict[str, dict[str, int]]:
        row = conn.execute("SELECT record FROM players WHERE id = ?", (player_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else empty_record()

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
                "INSERT INTO players (id, current) VALUES (?, ?) "
                "ON CONFLICT (id) DO UPDATE SET current = excluded.current", (player_id, game_id))

    def purge(self, finished_before: float, idle_before: float) -> int:
        with self._conn() as conn:
            return conn.execute(
                "DELETE FROM games WHERE updated < ? OR (live = 0 AND updated < ?)",
                (idle_before, finished_before)).rowcount

    def count_live(self, player_id: str | None = None) -> int:
        if player_id is None:
            sql, args = "SELECT COUNT(*) FROM games WHERE live = 1", ()
        else:
            sql = ("SELECT (SELECT COUNT(*) FROM games WHERE live = 1 AND seat_x = ?) + "
                   "(SELECT COUNT(*) FROM games WHERE live = 1 AND seat_o = ? "
                   "AND seat_x IS NOT ?)")
            args = (player_id, player_id, player_id)
        with self._conn() as conn:
            return conn.execute(sql, args).fetchone()[0]

    def ping(self) -> bool:
        try:
            with self._conn() as conn:
                conn.execute("SELECT 1").fetchone()
            return True
        except sqlite3.Error:
            return False

    def close(self) -> None:
        while True:
            try:
                self._pool.get_nowait().close()
            except queue.Empty:
                return
