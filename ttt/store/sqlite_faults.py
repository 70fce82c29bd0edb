"""Which SQLite errors mean "the store cannot be used now", and the connection's `with` block
that turns them into StoreUnavailable (noting a write fault for `ping` to probe)."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

from ttt.store.base import StoreUnavailable

# SQLite's primary result codes that mean "the file cannot be used now", not a bug.
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY = 5, 6, 7, 8
SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL = 10, 13, 14, 15
UNAVAILABLE = {SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY, SQLITE_IOERR,
               SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL}
WRITE_FAULTS = {SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN}


def primary(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def unavailable(error: BaseException) -> bool:
    """Whether a SQLite error says the store cannot be used now (a full or read-only disk,
    an I/O error, a lock held too long), rather than a bug in a statement."""
    return isinstance(error, sqlite3.Error) and primary(error) in UNAVAILABLE


def rollback_if_open(conn: sqlite3.Connection) -> None:
    """Undo the open transaction, if SQLite has not already: on a full disk or an I/O error
    it rolls back by itself, and a second ROLLBACK raised "cannot rollback - no transaction
    is active", hiding the error that mattered."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):  # the error being raised is the one to see
            conn.execute("ROLLBACK")


def begin_write(conn: sqlite3.Connection) -> None:
    """Open a write transaction now (BEGIN IMMEDIATE); a locked file is StoreUnavailable."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        raise StoreUnavailable(str(error)) from error


class Use:
    """`with store._conn() as conn:` (a class, not a generator: it is on every store call's
    path)."""

    __slots__ = ("_store", "_conn")

    def __init__(self, store: Any) -> None:  # a SqliteStore: its _pool, _write_failed
        self._store = store
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        try:
            self._conn = conn = self._store._pool.get()
        except sqlite3.Error as error:  # cannot open the file
            self._fault(error)
            raise
        return conn

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: Any) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._store._pool.put(conn)
        if error is not None:
            self._fault(error)

    def _fault(self, error: BaseException) -> None:
        """Note a write fault; raise StoreUnavailable for SQLite's "cannot do it now"."""
        if isinstance(error, StoreUnavailable):  # already said (a lock, BEGIN)
            cause = error.__cause__
            if isinstance(cause, sqlite3.Error) and primary(cause) in WRITE_FAULTS:
                self._store._write_failed = True
        elif isinstance(error, sqlite3.Error) and unavailable(error):
            if primary(error) in WRITE_FAULTS:
                self._store._write_failed = True
            raise StoreUnavailable(f"the SQLite store: {error}") from error
