"""A small pool of SQLite connections to one file, shared by the threads (or greenlets) of a
process: a connection per thread leaked under the threaded and gevent servers."""

from __future__ import annotations

import sqlite3
import threading

# Bytes the write-ahead log keeps after a checkpoint: above the 4 MiB it reaches between
# automatic checkpoints (1,000 pages), so in normal running it is overwritten in place. Cut
# to 1 MiB at every checkpoint it grew again each time, and growing a file costs the kernel
# a page at a time: a tenth of the threaded server's system time per event, a quarter of
# the gevent worker's.
# Only a log a held-up checkpoint let grow past this is cut back.
WAL_LIMIT = 6 << 20


class Connections:
    """Connections to `path`, at most `size` kept open between uses.

    `take()` (or `get` and `put`) is on every store call's path, so it is a plain list
    (the cheapest): no generator, no queue with its conditions, no lock.
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
            # Each time the log is reset after a checkpoint, cut it back to WAL_LIMIT: on a
            # small disk it would otherwise keep (and after a full disk, take back) its
            # largest size.
            conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
        return conn

    def take(self) -> _Taken:
        """A connection for the `with` block, given back (or closed) after it."""
        return _Taken(self)

    def get(self) -> sqlite3.Connection:
        """A connection of the pool (or a new one), to give back with `put`. No lock: a list's
        pop and append are atomic, and at worst a few more than `size` are kept a moment."""
        try:
            return self._idle.pop()
        except IndexError:
            return self._open()

    def put(self, conn: sqlite3.Connection) -> None:
        """Give back a connection from `get`: kept for the next, or closed."""
        if len(self._idle) < self._size:
            self._idle.append(conn)
        else:
            conn.close()

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
        self._conn = conn = self._pool.get()
        return conn

    def __exit__(self, *_: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.put(conn)
