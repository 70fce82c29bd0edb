"""Matches in one SQLite file: the default. A JSON snapshot per game, WAL journal.

WAL with synchronous=NORMAL survives a killed process without an fsync per
move. Every write is a compare-and-set on the game's `rev`: a change read
inside a `BEGIN IMMEDIATE` transaction, which takes the write lock up front, or
(the common move) a change applied to this process's cached copy and written
by one `UPDATE ... WHERE rev = ?`, which lands only if nobody wrote the game
since. Either way two processes can never both apply a change to the same
revision.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sqlite3
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from ttt.game.match import Match
from ttt.store import codec
from ttt.store.base import (
    CapReached,
    Caps,
    Change,
    Credit,
    StoreUnavailable,
    Update,
    add_credits,
    as_update,
    by_kind,
)
from ttt.store.sqlite_faults import Use, begin_write, rollback_if_open
from ttt.store.sqlite_players import LIVE_OF, PLAYED_TABLE, SqlitePlayers
from ttt.store.sqlite_pool import Connections
from ttt.store.sqlite_schema import migrate

#: Games whose last written state this process keeps, to change without reading them back.
CACHED_GAMES = 4096
# Read from the covering partial index games_live_kind alone: no game row is visited.
LIVE_BY_KIND = ("SELECT mode, variant, COUNT(*) FROM games WHERE live = 1 "
                "GROUP BY mode, variant")
# Rows an older release's process inserted while this one ran have no kind yet: their bodies.
UNKINDED_BY_KIND = ("SELECT json_extract(body, '$.mode'), "
                    "coalesce(json_extract(body, '$.variant'), 'classic'), COUNT(*) "
                    "FROM games WHERE live = 1 AND mode IS NULL GROUP BY 1, 2")

log = logging.getLogger("ttt.store")

# The write `ping` tries after a write fault: a row that needs new pages, then its removal.
PROBE_WRITE = ("INSERT INTO beats (name, at) VALUES ('probe', zeroblob(16384)) "
               "ON CONFLICT (name) DO UPDATE SET at = excluded.at")
PROBE_FREE = "DELETE FROM beats WHERE name = 'probe'"
# The store's identity: a random number in `beats`, written by the first process
# to open the file and read by the others, with the file's device and inode. `ping` checks
# both: a file deleted or replaced under running processes (which keep reading the old one
# through their open descriptors) is a store down at the next probe.
CLAIM_ID = "INSERT OR IGNORE INTO beats (name, at) VALUES ('store-id', ?)"
READ_ID = "SELECT at FROM beats WHERE name = 'store-id'"


class SqliteStore(SqlitePlayers):
    """A small pool of connections to one database file (its players' rows:
    `ttt.store.sqlite_players`; its faults: `ttt.store.sqlite_faults`)."""

    def __init__(self, path: str, pool_size: int = 8) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"  # the bot book opens beside it, in the same file
        if path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            # Owner-only, like the secret key beside it; SQLite gives its -wal and -shm
            # files the database file's permissions.
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            os.chmod(path, 0o600)
        # A small pool, not one connection per thread: the threaded and gevent servers
        # run each request in a new thread or greenlet, which would leak a connection each.
        self._pool = Connections(path, pool_size)
        # A full or read-only disk reads fine: after a write failed so, `ping` tries a write.
        self._write_failed = False
        self._write_lock = threading.Lock()
        # The state this process last wrote of each recent game. Only ever trusted through a
        # compare-and-set on `rev` (every write bumps it), so another process's write simply
        # makes an entry useless, never wrong. Changed only under the write lock.
        self._cache: OrderedDict[str, Match] = OrderedDict()
        with self._write_lock, self._conn() as conn:
            migrate(conn)
            conn.execute(PLAYED_TABLE)  # beside the versioned schema, as the bot book's tables
        self.identity: float | None = None
        # Claimed now, or at the first ping that can write (a full disk at start-up).
        with contextlib.suppress(StoreUnavailable, sqlite3.Error), self._write_lock, \
                self._conn() as conn:
            self.identity = self._claim(conn)
        self._file = self._file_id()
        self.lost = False  # the file or its identity is another: the data went with it

    def _file_id(self) -> tuple[int, int] | None:
        if self.path == ":memory:":
            return None
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    @staticmethod
    def _claim(conn: sqlite3.Connection) -> float:
        conn.execute(CLAIM_ID, (float(secrets.randbits(52) + 1),))
        return conn.execute(READ_ID).fetchone()[0]

    def _same_store(self, conn: sqlite3.Connection) -> bool:
        if self.identity is None:
            with self._write_lock:
                self.identity = self._claim(conn)
        if self.path != ":memory:" and self._file_id() != self._file:
            return False
        row = conn.execute(READ_ID).fetchone()
        return row is not None and row[0] == self.identity

    def _conn(self) -> Use:
        """A pooled connection for a `with` block; SQLite's "cannot do it now" errors (disk
        full, read-only, I/O, locked, cannot open) raised in the block become
        StoreUnavailable: players get `unavailable` and /healthz 503, not `internal` for a
        bug."""
        return Use(self)

    # mode and variant never change: written by the INSERT, never by a move's UPDATE (which
    # sets only the columns that changed).
    COLUMNS = ("rev", "updated", "live", "seat_x", "seat_o", "untouched", "created", "deadline",
               "origin", "mode", "variant", "body")

    @staticmethod
    def _keys(match: Match) -> tuple:
        """The columns other than the body, in COLUMNS order."""
        return (match.rev, match.updated, 0 if match.is_over else 1, match.seats["X"],
                match.seats["O"], 1 if match.untouched else 0, match.created,
                None if match.is_over else match.deadline, match.origin, match.mode,
                match.variant)

    def _row(self, match: Match) -> tuple:
        return (*self._keys(match), codec.encode(match))

    _INSERT = (f"INSERT INTO games ({', '.join(COLUMNS)}, id) "
               f"VALUES ({', '.join('?' * (len(COLUMNS) + 1))})")

    def create(self, match: Match, caps: Caps | None = None, current: str | None = None,
               around: Any = None) -> None:
        row = (*self._row(match), match.id)  # built before the lock: only SQL runs under it
        with self._write_lock, self._conn() as conn:
            begin_write(conn)
            try:
                if caps:  # counted inside the write transaction: parallel creates cannot race
                    self._check(conn, match, caps)
                conn.execute(self._INSERT, row)
                conn.execute("COMMIT")
            except BaseException:
                rollback_if_open(conn)
                raise
            self._remember(match)

    def _check(self, conn: sqlite3.Connection, match: Match, caps: Caps) -> None:
        """Refuse a new game whose players, address or server have too many live ones."""
        for who in match.humans():
            if self._count_live(conn, who) >= caps.per_player:
                raise CapReached(per_player=True)
        if caps.per_origin and match.origin and conn.execute(
                "SELECT COUNT(*) FROM games WHERE live = 1 AND origin = ?",
                (match.origin,)).fetchone()[0] >= caps.per_origin:
            raise CapReached(per_player=True, per_address=True)
        if self._count_live(conn) >= caps.total:
            raise CapReached(per_player=False)

    def _remember(self, match: Match) -> None:
        """Cache what was just written (the write lock is held)."""
        self._cache[match.id] = match
        self._cache.move_to_end(match.id)
        if len(self._cache) > CACHED_GAMES:
            self._cache.popitem(last=False)

    def cached(self, game_id: str) -> Match | None:
        """The copy of a game this process last wrote, or None: no SQL, and maybe stale
        (another process may have changed the row since), so good only for what no change
        undoes: a game's mode, and that it is over (the table skips a change that
        could not act on such a game)."""
        return self._cache.get(game_id)

    def get(self, game_id: str) -> Match | None:
        with self._conn() as conn:
            row = conn.execute("SELECT body FROM games WHERE id = ?", (game_id,)).fetchone()
        return codec.decode(row[0]) if row else None

    def get_many(self, game_ids: list[str]) -> list[Match | None]:
        if not game_ids:
            return []
        with self._conn() as conn:  # one statement (a player's live games are few: ≤ caps)
            rows = dict(conn.execute(f"SELECT id, body FROM games WHERE id IN "
                                     f"({','.join('?' * len(game_ids))})", game_ids))
        return [codec.decode(rows[g]) if g in rows else None for g in game_ids]

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        # The common move first: the change applied to the cached copy, outside any lock (the
        # compare-and-set on `rev` is what makes it safe; the lock only orders this process's
        # writers), then one `UPDATE ... WHERE rev = ?` under the lock. Writers of this process
        # queue on the lock: SQLite's busy handler sleeps and retries with no order, which
        # under many threads starves some past the timeout. BEGIN IMMEDIATE still orders
        # writers across processes.
        planned = self._plan_cached(game_id, change)
        with self._write_lock, self._conn() as conn:
            try:
                done = self._write_planned(conn, game_id, planned) if planned else None
                if done is None:
                    done = self._update(conn, game_id, change)
            except sqlite3.OperationalError as error:  # locked by another process too long
                self._cache.pop(game_id, None)
                raise StoreUnavailable(str(error)) from error
            if done is None:
                self._cache.pop(game_id, None)
            else:
                self._remember(done[1])
            return done

    def _changed_columns(self, before: Match, after: Match) -> tuple[str, tuple]:
        """The SET clause and its values: only the columns whose values changed (SQLite
        rewrites every index on a column named in SET, changed or not, and those page writes
        were most of a move's cost)."""
        new, old = self._row(after), (*self._keys(before), None)
        changed = [(c, v) for c, v, was in zip(self.COLUMNS, new, old, strict=True) if v != was]
        return ", ".join(f"{c} = ?" for c, _ in changed), tuple(v for _, v in changed)

    def _plan_cached(self, game_id: str, change: Change
                     ) -> tuple[Match, Update, str, tuple] | None:
        """The change applied to the cached copy (no lock, no SQL): the copy, the update, and
        the SET clause with its values; None when that cannot be done (nothing cached, or the
        change refuses or changes nothing, which only the row as stored may decide)."""
        before = self._cache.get(game_id)
        if before is None:
            return None
        try:
            update = as_update(change(before))
        except Exception:  # maybe refused for a stale reason: decided again on the real row
            return None
        if update.match.rev == before.rev:
            return None
        return (before, update, *self._changed_columns(before, update.match))

    def _write_planned(self, conn: sqlite3.Connection, game_id: str,
                       planned: tuple[Match, Update, str, tuple]) -> tuple[Match, Match] | None:
        """The planned change written if the row is still at the copy's revision (the write
        lock is held); None when it is not (the copy was stale: the caller reads the row)."""
        before, update, columns, values = planned
        sql = f"UPDATE games SET {columns} WHERE id = ? AND rev = ?"
        if not update.create and not update.credits:
            # One statement is its own transaction: the move is durable once it returns.
            if conn.execute(sql, (*values, game_id, before.rev)).rowcount == 1:
                return before, update.match
            self._cache.pop(game_id, None)
            return None
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute(sql, (*values, game_id, before.rev)).rowcount != 1:
                rollback_if_open(conn)
                self._cache.pop(game_id, None)
                return None
            self._write_with(conn, update)
            conn.execute("COMMIT")
        except BaseException:
            rollback_if_open(conn)
            raise
        return before, update.match

    def _write_with(self, conn: sqlite3.Connection, update: Update) -> None:
        """What goes with a change in its transaction: the game it creates, the records."""
        if update.create:  # cached at once: a rolled-back one only fails its compare-and-set
            if update.caps:  # in this transaction: parallel rematches cannot race past them
                self._check(conn, update.create, update.caps)
            conn.execute(self._INSERT, (*self._row(update.create), update.create.id))
            self._remember(update.create)
        for who in sorted({c[0] for c in update.credits}):
            record = self._read_record(conn, who)
            add_credits(record, who, update.credits)
            conn.execute(
                "INSERT INTO players (id, record) VALUES (?, ?) "
                "ON CONFLICT (id) DO UPDATE SET record = excluded.record",
                (who, codec.dumps(record)))

    def _update(self, conn: sqlite3.Connection, game_id: str,
                change: Change) -> tuple[Match, Match] | None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT body FROM games WHERE id = ?", (game_id,)).fetchone()
            if row is None:
                rollback_if_open(conn)
                return None
            before = codec.decode(row[0])
            update = as_update(change(before))
            after = update.match
            if after.rev != before.rev:
                columns, values = self._changed_columns(before, after)
                cursor = conn.execute(f"UPDATE games SET {columns} WHERE id = ? AND rev = ?",
                                      (*values, game_id, before.rev))
                if cursor.rowcount != 1:  # cannot happen under BEGIN IMMEDIATE; be loud if it does
                    raise RuntimeError("lost a compare-and-set under an immediate transaction")
                self._write_with(conn, update)
            conn.execute("COMMIT")
            return before, after
        except BaseException:
            rollback_if_open(conn)
            raise

    def resume(self, clock: Callable[[], float], grace: float, credit: Credit) -> list[Match]:
        with self._write_lock, self._conn() as conn:
            begin_write(conn)
            try:
                row = conn.execute("SELECT at FROM beats WHERE name = 'up'").fetchone()
                now = clock()
                credited = []
                if row is not None and now - row[0] > grace:
                    credited = self._credit(conn, row[0], now - row[0], credit)
                conn.execute("INSERT INTO beats (name, at) VALUES ('up', ?) "
                             "ON CONFLICT (name) DO UPDATE SET at = excluded.at", (now,))
                conn.execute("COMMIT")
            except BaseException:
                rollback_if_open(conn)
                self._cache.clear()
                raise
            return credited

    def _credit(self, conn: sqlite3.Connection, since: float, downtime: float,
                credit: Credit) -> list[Match]:
        """Every live timed game with `credit` applied, written in the open transaction."""
        credited = []
        for (body,) in conn.execute("SELECT body FROM games WHERE deadline IS NOT NULL "
                                    "AND live = 1").fetchall():
            before = codec.decode(body)
            after = credit(before, since, downtime)
            if after.rev != before.rev:
                columns, values = self._changed_columns(before, after)
                conn.execute(f"UPDATE games SET {columns} WHERE id = ?", (*values, after.id))
                self._cache.pop(after.id, None)
                credited.append(after)
        return credited

    def delete(self, game_id: str) -> None:
        with self._write_lock, self._conn() as conn:
            conn.execute("DELETE FROM games WHERE id = ?", (game_id,))
            self._cache.pop(game_id, None)

    def live_ids(self) -> list[str]:
        with self._conn() as conn:
            return [row[0] for row in conn.execute("SELECT id FROM games WHERE live = 1")]

    def due(self, now: float) -> list[str]:
        with self._conn() as conn:
            return [row[0] for row in conn.execute(
                "SELECT id FROM games WHERE deadline IS NOT NULL AND deadline <= ? AND live = 1",
                (now,))]

    def purge(self, finished_before: float, idle_before: float,
              untouched_before: float | None = None) -> int:
        with self._write_lock, self._conn() as conn:
            gone = conn.execute(
                "DELETE FROM games WHERE updated < ? OR (live = 0 AND updated < ?) "
                "OR (untouched = 1 AND live = 1 AND created < ?)",
                (idle_before, finished_before,
                 -1.0 if untouched_before is None else untouched_before)).rowcount
            if gone:
                self._cache.clear()
            # A player with no live game not seen for the idle time is forgotten: its name,
            # record and current game (profiles must not grow for good).
            conn.execute(
                "DELETE FROM players WHERE (seen IS NULL OR seen < ?) AND NOT EXISTS "
                "(SELECT 1 FROM games WHERE live = 1 AND seat_x = players.id) AND NOT EXISTS "
                "(SELECT 1 FROM games WHERE live = 1 AND seat_o = players.id)", (idle_before,))
            conn.execute("DELETE FROM played WHERE id NOT IN (SELECT id FROM players)")
            return gone

    @staticmethod
    def _count_live(conn: sqlite3.Connection, player_id: str | None = None) -> int:
        if player_id is None:
            return conn.execute("SELECT COUNT(*) FROM games WHERE live = 1").fetchone()[0]
        return conn.execute(f"SELECT COUNT(*) FROM ({LIVE_OF})", {"p": player_id}).fetchone()[0]

    def count_live(self, player_id: str | None = None) -> int:
        with self._conn() as conn:
            return self._count_live(conn, player_id)

    def count_live_by_kind(self) -> dict[tuple[str, str], int]:
        with self._conn() as conn:
            rows = conn.execute(LIVE_BY_KIND).fetchall()
            if any(mode is None for mode, _, _ in rows):  # an older release's process wrote
                rows = [r for r in rows if r[0] is not None]
                rows += conn.execute(UNKINDED_BY_KIND).fetchall()
        counts: Counter[tuple[str, str]] = Counter()
        for mode, variant, n in rows:
            counts[(mode, variant)] += n
        return by_kind(counts)

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the database and truncate it (it never shrinks else)."""
        with self._write_lock, self._conn() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()

    def ping(self) -> bool:
        """Whether the store answers; after a write failed (full or read-only disk), whether
        a write that needs new room lands again (a few pages, written and freed), and then
        the write-ahead log is truncated at once (it would otherwise keep the space just
        freed)."""
        try:
            with self._conn() as conn:
                same = self._same_store(conn)
            if same == self.lost:
                self.lost = not same
                if self.lost:
                    log.error("sqlite store lost its data: %s was deleted or replaced under "
                              "this process (docs/runbook.md, TTTStoreLostData)", self.path)
                else:
                    log.warning("sqlite store's file is back: %s", self.path)
            if self.lost:
                return False
            if self._write_failed:
                with self._write_lock, self._conn() as conn:
                    for probe in (PROBE_WRITE, PROBE_FREE):
                        begin_write(conn)
                        try:
                            conn.execute(probe)
                            conn.execute("COMMIT")
                        except BaseException:
                            rollback_if_open(conn)
                            raise
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                self._write_failed = False
            return True
        except (sqlite3.Error, StoreUnavailable):
            return False

    def close(self) -> None:
        self._pool.close()
