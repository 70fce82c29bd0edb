"""Logging for a served process, set up in one place: text by default, JSON lines on request.

`TTT_LOG_FORMAT=json` writes one JSON object a line, every line of the process: the app's,
Werkzeug's, python-socketio's and python-engineio's (their loggers get a level here, so they
never add the bare handler of their own), Python warnings (`logging.captureWarnings`), and
gunicorn's own (deploy/gunicorn.conf.py points its `logconfig_dict` at `JsonFormatter`).
`TTT_LOG_LEVEL` (INFO) sets the level.

Every event handled gives one line on the `ttt.access` logger (see `access`): the event, the
game id, the result code and the duration; in JSON also the seat, the cell, the game's
version (`rev`), the process id and a connection id (a hash of the socket id, never the id
itself). Never a cookie, a token or a player's name. The fields are worked out when the line
is written, not when the event is handled (nothing is done for a level that is off).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from ttt.jsonlog import ACCESS, JsonFormatter, connection_id

__all__ = ["ACCESS", "JsonFormatter", "access", "configure", "connection_id"]
# Libraries that add a bare StreamHandler of their own to a logger whose level is unset.
LIBRARIES = ("engineio.server", "socketio.server", "engineio.client", "socketio.client")


class _Ours(logging.StreamHandler):
    """The handler this module installed (so a second call changes nothing)."""


def configure(fmt: str | None = None, level: str | None = None) -> None:
    """Send every logger's records to stderr in the chosen format, once per process."""
    root = logging.getLogger()
    if any(isinstance(h, _Ours) for h in root.handlers):
        return
    fmt = (fmt or os.environ.get("TTT_LOG_FORMAT") or "text").lower()
    handler = _Ours(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s"))
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


def _log_uncaught(kind: type[BaseException], error: BaseException, tb: Any) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, error, tb)
        return
    logging.getLogger("ttt").critical("stopped by %s: %s", kind.__name__, error,
                                      exc_info=(kind, error, tb))


def access(event: str, game: str | None, result: str, seconds: float, sid: str | None = None,
           payload: Any = None, answer: Any = None) -> None:
    """The line for one event handled (seat, cell, rev and connection read when written)."""
    if not ACCESS.isEnabledFor(logging.INFO):
        return
    ms = round(seconds * 1000, 2)
    ACCESS.info("event=%s game=%s result=%s ms=%s", event, game or "-", result, ms,
                extra={"event": event, "game": game, "result": result, "ms": ms, "sid": sid,
                       "payload": payload, "answer": answer})
