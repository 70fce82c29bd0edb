"""Log lines made cheaply, for a served process: a record made without logging's
look for its caller, handed straight to our handler when it is the only one, and a handler
that writes INFO lines in batches. Standard library only: ttt.web.ops.logs sets it up, and
ttt.web.ops.metrics writes a game's end through it."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any


class Handler(logging.StreamHandler):
    """The handler this module installed (so a second call changes nothing).

    It formats a record before taking its lock and takes the lock only to write: a line is
    queued on a deque (append is atomic), so an INFO line takes no lock at all. With `every`
    (seconds; `configure` sets `TTT_LOG_FLUSH_SECONDS`, 0.1), INFO lines are written in
    batches at most `every` apart by a writer thread (nginx's `access_log ... buffer=
    flush=`): one write a batch instead of one per event, which on a busy server is a system
    call, and a turn of the interpreter's lock, less per event. A WARNING or worse
    writes everything queued and itself at once, in order; so do `flush()` (which
    `logging.shutdown` calls at exit) and 256 kB queued. A process killed outright (SIGKILL)
    loses at most `every` seconds of INFO lines.
    """

    LIMIT = 256 * 1024  # characters queued before a line is written at once

    def __init__(self, stream: Any = None, every: float = 0.0) -> None:
        super().__init__(stream)
        self.every = every
        self._lines: deque[str | tuple[Callable[..., str], tuple]] = deque()
        self._size = 0  # about what is queued: only decides an early write
        self._writer: int | None = None  # the process whose writer thread runs
        self._record: logging.LogRecord | None = None  # the last one queued, for handleError
        if every:
            os.register_at_fork(after_in_child=self._forget)

    def handle(self, record: logging.LogRecord) -> logging.LogRecord | bool:
        rv = self.filter(record) if self.filters else True
        if isinstance(rv, logging.LogRecord):
            record = rv
        if rv:
            try:
                line = self.format(record) + self.terminator
            except Exception:  # as StreamHandler.emit does: say so on stderr, go on
                self.handleError(record)
                return rv
            self._record = record
            self.write_line(line, record.levelno)
        return rv

    def write_line(self, line: str, level: int) -> None:
        """A formatted line (with its end) of a record at `level`: queued, or written."""
        self._lines.append(line)
        self._size += len(line)  # two threads may lose an addition: a write comes later
        self._queued(level)

    def write_made(self, make: Callable[..., str], args: tuple, level: int) -> None:
        """A line `make(*args)` will give (with its end), queued as the call: made when it is
        written, off the path of whoever logs it (the access line, after the
        event's answer is on its way). `args` must not change meanwhile."""
        self._lines.append((make, args))
        self._size += 128  # about a line
        self._queued(level)

    def _queued(self, level: int) -> None:
        """A line was queued: write now, or make sure the writer thread will."""
        if not self.every or level >= logging.WARNING or self._size > self.LIMIT:
            with self.lock:
                self._write()
        elif self._writer is None:  # this process has none yet (see _forget)
            with self.lock:
                if self._writer is None:
                    self._writer = os.getpid()
                    threading.Thread(target=self._write_every, name="ttt-log-writer",
                                     daemon=True).start()

    def flush(self) -> None:
        with self.lock:
            self._write()

    def _write(self) -> None:
        """Every queued line, in one write (the lock is held). Taken one by one from the
        front: a line queued meanwhile by another thread is in this write or the next."""
        lines, batch = self._lines, []
        while lines:
            line = lines.popleft()
            if type(line) is not str:  # a line queued as its making (write_made)
                try:
                    line = line[0](*line[1])
                except Exception:
                    self.handleError(self._record)  # type: ignore[arg-type]
                    continue
            batch.append(line)
        if not batch:
            if self.stream and hasattr(self.stream, "flush"):
                self.stream.flush()
            return
        text = "".join(batch)
        self._size = 0
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:
            self.handleError(self._record)  # type: ignore[arg-type]

    def _write_every(self) -> None:
        pid = os.getpid()
        while self._writer == pid:
            time.sleep(self.every)
            with self.lock:
                if self._lines:
                    self._write()

    def _forget(self) -> None:
        """In a forked child: the parent writes what it queued; this process starts afresh."""
        self._lines, self._size, self._writer = deque(), 0, None


def info(logger: logging.Logger, msg: str, *args: Any, **extra: Any) -> None:
    """`logger.info(msg, *args, extra=extra)`, cheaper: for a line on a hot path (a game's
    end). The record is made without logging's look for the caller, and reaches the handlers
    as logging's own walk would (`deliver`)."""
    if not logger.isEnabledFor(logging.INFO):
        return
    if logging.getLogRecordFactory() is logging.LogRecord:
        record: logging.LogRecord = Record(logger.name, msg, args)
        record.__dict__.update(extra)
    else:
        record = logger.makeRecord(logger.name, logging.INFO, f"({logger.name})", 0, msg, args,
                                   None, extra=extra)
    deliver(logger, record)


def deliver(logger: logging.Logger, record: logging.LogRecord) -> None:
    """`logger.handle(record)`; straight to our handler when it is the only handler the
    record reaches and nothing filters on the way (the usual served process: logging's walk
    up the loggers was a dozen calls on every event)."""
    ours = route(logger)
    if ours is None or record.levelno < ours.level:
        logger.handle(record)
    else:
        ours.handle(record)


def route(logger: logging.Logger) -> Handler | None:
    """Our handler, when it is the one handler an INFO record of `logger` reaches (as
    logging's walk would find it) and nothing filters on the way; else None."""
    if logger.filters or logger.disabled:
        return None
    ours = None
    node: logging.Logger | None = logger
    while node is not None:
        for handler in node.handlers:
            if ours is not None or type(handler) is not Handler:
                return None
            ours = handler
        node = node.parent if node.propagate else None
    if ours is None or ours.filters or ours.level > logging.INFO:
        return None  # no handler (logging's last resort), or one that filters
    return ours


class Record(logging.LogRecord):
    """A record with every attribute `logging.LogRecord` gives, set directly (its own
    __init__ splits a source path and looks the process up for each record)."""

    def __init__(self, name: str, msg: Any, args: tuple = ()) -> None:
        created = time.time()
        self.name, self.msg, self.args = name, msg, args
        self.levelname, self.levelno = "INFO", logging.INFO
        self.pathname = self.filename = self.module = f"({name})"
        self.exc_info = self.exc_text = self.stack_info = self.funcName = None
        self.lineno = 0
        self.created = created
        self.msecs = int((created - int(created)) * 1000) + 0.0
        started = logging._startTime  # seconds; nanoseconds from Python 3.13
        self.relativeCreated = ((created - started) * 1000 if isinstance(started, float)
                                else (created * 1e9 - started) / 1e6)
        threads = logging.logThreads
        self.thread = threading.get_ident() if threads else None
        self.threadName = threading.current_thread().name if threads else None
        self.processName, self.process = _process()
        self.taskName = None


_PROCESS: list = []  # (process name, pid) of this process once known; emptied in a child


def _process() -> tuple[str | None, int | None]:
    """(processName, process) as logging sets them on a record, found once per process
    (os.getpid is a system call: one per event was one too many)."""
    if not _PROCESS:
        _PROCESS.append((_process_name(), os.getpid()))
    name, pid = _PROCESS[0]
    return (name if logging.logMultiprocessing else None,
            pid if logging.logProcesses else None)


os.register_at_fork(after_in_child=_PROCESS.clear)


def _process_name() -> str | None:
    """As logging finds it: multiprocessing's name for this process, if it was imported."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:
        return "MainProcess"
    try:
        return multiprocessing.current_process().name
    except Exception:  # as logging itself: never fail a log line over it
        return None


class Fold:
    """One warning that repeats while something is down, folded (unfolded, a 32 s Redis
    outage writes 13,324 "limits not checked" lines): the first occurrence is logged as it
    comes, then at most one line every `every` seconds with the count since the last line,
    and `ok()` logs "<what> back after N s (M times)" once the episode is over. `ok()` costs
    one attribute read while nothing is wrong: call it on every success."""

    def __init__(self, logger: logging.Logger, what: str, every: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger, self.what, self.every, self.clock = logger, what, every, clock
        self._lock = threading.Lock()
        self._since: float | None = None  # when the episode began (None: no episode)
        self._told = 0.0                  # when a line last went out
        self._count = 0                   # occurrences in the episode
        self._untold = 0                  # occurrences since the last line

    @property
    def down(self) -> bool:
        """Whether an episode is on."""
        return self._since is not None

    def failed(self, detail: Any = "", level: int = logging.WARNING) -> None:
        """One more occurrence: logged if it is the episode's first or a minute passed."""
        now = self.clock()
        with self._lock:
            first = self._since is None
            if first:
                self._since, self._count, self._untold = now, 0, 0
            self._count += 1
            self._untold += 1
            if not first and now - self._told < self.every:
                return
            self._told, untold = now, self._untold
            self._untold = 0
        if first:
            self.logger.log(level, "%s: %s", self.what, detail)
        else:
            self.logger.log(level, "%s (%d times in %.0f s, %.0f s since it began): %s",
                            self.what, untold, self.every, now - self._since, detail)

    def ok(self) -> None:
        """The thing works again: end the episode, if one is on, with one line."""
        if self._since is None:
            return
        with self._lock:
            since, count = self._since, self._count
            if since is None:
                return
            self._since = None
        self.logger.warning("%s: back after %.1f s (%d times)", self.what,
                            self.clock() - since, count)
