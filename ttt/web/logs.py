"""Logging for a served process, set up in one place: text by default, JSON lines on request.

`TTT_LOG_FORMAT=json` writes one JSON object a line; `TTT_LOG_LEVEL` (INFO) sets the level.
Every event handled gives one line on the `ttt.access` logger (see `access`): the event, the
game id, the result code and the duration, and any more fields its caller names; never a
cookie, a token or a player's name.

The access line is on every event's path, so it is cheap (issue 28): its fields travel as one
dict (`record.fields`), formatted only by the handler that writes them (`key=value` text or
JSON keys of their own), the record is made without the caller lookup (the line says where
it comes from: its logger), and our handler formats outside its lock, holding it only for
the write, so threads serving other events do not queue behind a formatter.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

ACCESS = logging.getLogger("ttt.access")
FIELDS = ("event", "game", "result", "ms")


class Fields(dict):
    """An access line's fields; as text (`str`) the `key=value` pairs of the text format."""

    __slots__ = ()

    def __str__(self) -> str:
        return " ".join(f"{key}={'-' if value is None else value}"
                        for key, value in self.items())


class _Seconds:
    """A timestamp's text to the second, made once a second (every line of a busy second
    shares it). The pair is swapped whole, so threads never see one second's text for
    another's."""

    def __init__(self, pattern: str, convert: Callable[[float], time.struct_time]) -> None:
        self.pattern, self.convert = pattern, convert
        self._last: tuple[int, str] = (-1, "")

    def __call__(self, created: float) -> str:
        second = int(created)
        last = self._last
        if last[0] != second:
            last = self._last = (second, time.strftime(self.pattern, self.convert(created)))
        return last[1]


class TextFormatter(logging.Formatter):
    """`asctime level logger message`, the time as logging's default one (local, with
    milliseconds), its text to the second made once a second."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")
        self._seconds = _Seconds("%Y-%m-%d %H:%M:%S", self.converter)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        return f"{self._seconds(record.created)},{int(record.msecs):03d}"


class JsonFormatter(logging.Formatter):
    """One JSON object a line, with the access fields as keys of their own."""

    def __init__(self) -> None:
        super().__init__()
        self._seconds = _Seconds("%Y-%m-%dT%H:%M:%S", time.gmtime)

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": f"{self._seconds(record.created)}.{int(record.msecs):03d}Z",
                "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=True)


class _Ours(logging.StreamHandler):
    """The handler this module installed (so a second call changes nothing).

    It formats a record before taking its lock and holds the lock only to write the line.
    """

    def handle(self, record: logging.LogRecord) -> logging.LogRecord | bool:
        rv = self.filter(record)
        if isinstance(rv, logging.LogRecord):
            record = rv
        if rv:
            try:
                line = self.format(record) + self.terminator
            except Exception:  # as StreamHandler.emit does: say so on stderr, go on
                self.handleError(record)
                return rv
            with self.lock:
                try:
                    self.stream.write(line)
                    self.flush()
                except Exception:
                    self.handleError(record)
        return rv


def configure(fmt: str | None = None, level: str | None = None) -> None:
    """Send every logger's records to stderr in the chosen format, once per process."""
    root = logging.getLogger()
    if any(isinstance(h, _Ours) for h in root.handlers):
        return
    fmt = (fmt or os.environ.get("TTT_LOG_FORMAT") or "text").lower()
    handler = _Ours(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel((level or os.environ.get("TTT_LOG_LEVEL") or "INFO").upper())


def access(event: str, game: str | None, result: str, seconds: float, **more: Any) -> None:
    """The line for one event handled; `more`: further fields (ids, never names or secrets).

    Nothing is built when INFO is off for ttt.access. The message is the fields themselves
    (`str` gives the text), formatted only when a handler writes the record.
    """
    if not ACCESS.isEnabledFor(logging.INFO):
        return
    fields = Fields(event=event, game=game, result=result, ms=round(seconds * 1000, 2), **more)
    if logging.getLogRecordFactory() is logging.LogRecord:
        record: logging.LogRecord = AccessRecord(fields)
    else:  # somebody's own factory: theirs makes every record, this one too
        record = ACCESS.makeRecord(ACCESS.name, logging.INFO, "(access)", 0, fields, (), None,
                                   extra={"fields": fields})
    ACCESS.handle(record)


class AccessRecord(logging.LogRecord):
    """An access line's record: every attribute `logging.LogRecord` gives, set directly (its
    own __init__ splits a source path and looks the process up for each record)."""

    def __init__(self, fields: Fields) -> None:
        created = time.time()
        self.name, self.msg, self.args = ACCESS.name, fields, ()
        self.levelname, self.levelno = "INFO", logging.INFO
        self.pathname = self.filename = self.module = "(access)"
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
        self.processName = _process_name() if logging.logMultiprocessing else None
        self.process = os.getpid() if logging.logProcesses else None
        self.taskName = None
        self.fields = fields


def _process_name() -> str | None:
    """As logging finds it: multiprocessing's name for this process, if it was imported."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is None:
        return "MainProcess"
    try:
        return multiprocessing.current_process().name
    except Exception:  # as logging itself: never fail a log line over it
        return None
