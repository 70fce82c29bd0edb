"""Logging for a served process, set up in one place: text by default, JSON lines on request.

`TTT_LOG_FORMAT=json` writes one JSON object a line, every line of the process: the app's,
Werkzeug's, python-socketio's and python-engineio's (their loggers get a level here, so they
never add the bare handler of their own), Python warnings (`logging.captureWarnings`), and
gunicorn's own (deploy/gunicorn.conf.py points its `logconfig_dict` at `JsonFormatter`).
`TTT_LOG_LEVEL` (INFO) sets the level.

Every event handled gives one line on the `ttt.access` logger (see `access`): the event, the
game id, the result code and the duration, and any more fields its caller names; in JSON also
the seat, the cell, the game's version (`rev`), the process id and a connection id (a hash of
the socket id, never the id itself). Never a cookie, a token or a player's name.

The access line is on every event's path, so it is cheap: its fields travel as one
dict, formatted only by the handler that writes them (`key=value` text or JSON keys of their
own; seat, cell, rev and connection are worked out then, from what the event carried). In the
served case (our handler alone, text format) the line is made as text directly, with no
record; otherwise a record is made without logging's caller lookup (ttt.runtime.loglines). Our
handler formats outside its lock and writes INFO lines in batches (`TTT_LOG_FLUSH_SECONDS`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from ttt.runtime.jsonlog import (
    ACCESS,
    REQUEST_ID,
    JsonFormatter,
    Seconds,
    connection_id,
    request_id,
)
from ttt.runtime.loglines import Handler, Record, deliver, route

_Ours = Handler  # the name the tests and the benches know

__all__ = ["ACCESS", "JsonFormatter", "access", "configure", "connection_id",
           "connection_request", "follow_request", "forget_request"]
# Libraries that add a bare StreamHandler of their own to a logger whose level is unset.
LIBRARIES = ("engineio.server", "socketio.server", "engineio.client", "socketio.client")


class Fields(dict):
    """An access line's fields; as text (`str`) the `key=value` pairs of the text format."""

    __slots__ = ()

    def __str__(self) -> str:
        return " ".join([f"{key}={'-' if value is None else value}"
                         for key, value in self.items()])


class TextFormatter(logging.Formatter):
    """`asctime level logger message`, the time as logging's default one (local, with
    milliseconds), its text to the second made once a second."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")
        self._seconds = Seconds("%Y-%m-%d %H:%M:%S", self.converter)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        return self.stamp(record.created)

    def stamp(self, created: float) -> str:
        """`asctime` of a record made at `created` (its milliseconds as logging's `msecs`)."""
        return f"{self._seconds(created)},{int((created - int(created)) * 1000):03d}"

    def format(self, record: logging.LogRecord) -> str:
        if type(record) is AccessRecord and not record.exc_info:
            # The line logging's own format makes of it, made directly: one per event.
            return f"{self.stamp(record.created)} INFO {record.name} {record.fields}"
        return super().format(record)


def configure(fmt: str | None = None, level: str | None = None) -> None:
    """Send every logger's records to stderr in the chosen format, once per process."""
    root = logging.getLogger()
    if any(isinstance(h, _Ours) for h in root.handlers):
        return
    fmt = (fmt or os.environ.get("TTT_LOG_FORMAT") or "text").lower()
    handler = _Ours(sys.stderr, float(os.environ.get("TTT_LOG_FLUSH_SECONDS") or 0.1))
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel((level or os.environ.get("TTT_LOG_LEVEL") or "INFO").upper())
    for name in LIBRARIES:  # their warnings and errors through our handler, not a bare one
        library = logging.getLogger(name)
        if library.level == logging.NOTSET:
            library.setLevel(logging.WARNING)
        for bare in [h for h in library.handlers if type(h) is logging.StreamHandler]:
            library.removeHandler(bare)
    logging.captureWarnings(True)
    if fmt == "json":  # a crash (a store too new at start-up, a bug) is one JSON line too
        sys.excepthook = _log_uncaught


def follow_request() -> None:
    """Flask's before_request: the front's X-Request-Id (nginx's `$request_id`) for every line
    logged while this request is served (JSON: `request`); reset on each request, since one
    keep-alive connection serves many."""
    from flask import request

    REQUEST_ID.set(request_id(request.headers.get("X-Request-Id")))


def forget_request(_error: BaseException | None = None) -> None:
    """Flask's teardown_request: lines logged after the request (between two requests of a
    keep-alive connection, or by Socket.IO on it) carry no page's id."""
    REQUEST_ID.set(None)


def connection_request(environ: dict | None) -> str | None:
    """The front's id of the request that opened a Socket.IO connection (its handshake, or
    the websocket's upgrade), from that request's environ; worked out once per connection."""
    if environ is None:
        return None
    found = environ.get("ttt.request_id", False)
    if found is False:
        found = environ["ttt.request_id"] = request_id(environ.get("HTTP_X_REQUEST_ID"))
    return found


def _log_uncaught(kind: type[BaseException], error: BaseException, tb: Any) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, error, tb)
        return
    logging.getLogger("ttt").critical("stopped by %s: %s", kind.__name__, error,
                                      exc_info=(kind, error, tb))


def access(event: str, game: str | None, result: str, seconds: float, sid: str | None = None,
           payload: Any = None, answer: Any = None, who: Any = None, **more: Any) -> None:
    """The line for one event handled; `more`: further fields (ids, never names or secrets).
    `sid`, `payload`, `answer` and `who` (the sid's presence Connection) are kept on the record
    as they are: the JSON line reads the connection, seat, cell, rev and the player's keyed
    hash from them when it is written.

    Nothing is built when INFO is off for ttt.access. The message is the fields themselves
    (`str` gives the text), formatted only when a handler writes the record.
    """
    if not ACCESS.isEnabledFor(logging.INFO):
        return
    ours = route(ACCESS)
    if ours is not None and type(ours.formatter) is TextFormatter:
        # The served process's usual case: the text line itself, as TextFormatter would
        # make it of the record, with no record made, and made when it is written, after
        # the answer went (one line per event).
        ours.write_made(_text_line, (ours.formatter.stamp, time.time(), event, game, result,
                                     seconds, more), logging.INFO)
        return
    fields = Fields(event=event, game=game, result=result, ms=round(seconds * 1000, 2), **more)
    carried = {"sid": sid, "payload": payload, "answer": answer, "who": who}
    if logging.getLogRecordFactory() is logging.LogRecord:
        record: logging.LogRecord = AccessRecord(fields)
        record.__dict__.update(carried)
    else:  # somebody's own factory: theirs makes every record, this one too
        record = ACCESS.makeRecord(ACCESS.name, logging.INFO, "(access)", 0, fields, (), None,
                                   extra={"fields": fields, **carried})
    deliver(ACCESS, record)


def _text_line(stamp: Callable[[float], str], now: float, event: str, game: str | None,
               result: str, seconds: float, more: dict[str, Any]) -> str:
    """The access line in the text format, as TextFormatter makes it of an AccessRecord."""
    fields = Fields(event=event, game=game, result=result, ms=round(seconds * 1000, 2), **more)
    return f"{stamp(now)} INFO {ACCESS.name} {fields}\n"


class AccessRecord(Record):
    """An access line's record: its message is its fields."""

    def __init__(self, fields: Fields) -> None:
        super().__init__(ACCESS.name, fields)
        self.pathname = self.filename = self.module = "(access)"
        self.fields = fields
