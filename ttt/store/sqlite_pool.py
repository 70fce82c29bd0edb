"""A small pool of SQLite connections to one file, shared by the threads (or greenlets) of a
process: a connection per thread leaked under the threaded and gevent servers."""

from __future__ import annotations

import sqlite3
import threading

WAL_LIMIT = 1 << 20  # bytes the write-ahead log keeps between checkpoints


class Connections:
    """Connections to `path`, at most `size` kept open between uses.

    `take()` is on every store call's path, so it is a plain context manager over a list and
    a lock (issue 28): no generator, no queue with its conditions.
    """

    def __init__(self, path: str, size: int = 4, wal: bool = True) -> None:
        self.path = path
        self._size = size
        self._wal = wal
        self._idle: list[sqlite3.Connection] = []  # last in, first out: the warmest first
        self._lock = threading.Lock()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=10,
                               check_same_thread=False)
        if self._wal:  # survives a killed process without an fsync per move (PITFALLS)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Each time the log is reset after a checkpoint, cut it back to 1 MiB: on a small
            # disk it would otherwise keep (and after a full disk, take back) its largest size.
            conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
        return conn

    def take(self) -> _Taken:
        """A connection for the `with` block, given back (or closed) after it."""
        return _Taken(self)

    def close(self) -> None:
        """Close the connections kept open."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _Taken:
    """`with pool.take() as conn:` one connection of the pool for the block."""

    __slots__ = ("_pool", "_conn")

    def __init__(self, pool: Connections) -> None:
        self._pool = pool
        self._conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        pool = self._pool
        with pool._lock:
            conn = pool._idle.pop() if pool._idle else None
        self._conn = conn = conn or pool._open()
        return conn

    def __exit__(self, *_: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            pool = self._pool
            with pool._lock:
                if len(pool._idle) < pool._size:
                    pool._idle.append(conn)
                    return
            conn.close()
