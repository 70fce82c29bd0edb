"""A small pool of SQLite connections to one file, shared by the threads (or greenlets) of a
process: a connection per thread leaked under the threaded and gevent servers."""

from __future__ import annotations

import contextlib
import queue
import sqlite3
from collections.abc import Iterator

WAL_LIMIT = 1 << 20  # bytes the write-ahead log keeps between checkpoints


class Connections:
    """Connections to `path`, at most `size` kept open between uses."""

    def __init__(self, path: str, size: int = 4, wal: bool = True) -> None:
        self.path = path
        self._size = size
        self._wal = wal
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()

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

    @contextlib.contextmanager
    def take(self) -> Iterator[sqlite3.Connection]:
        """A connection for the `with` block, given back (or closed) after it."""
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._open()
        try:
            yield conn
        finally:
            if self._idle.qsize() < self._size:
                self._idle.put(conn)
            else:
                conn.close()

    def close(self) -> None:
        """Close the connections kept open."""
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
