"""Logging for a served process, set up in one place: text by default, JSON lines on request.

`TTT_LOG_FORMAT=json` writes one JSON object a line; `TTT_LOG_LEVEL` (INFO) sets the level.
Every event handled gives one line on the `ttt.access` logger (see `access`): the event, the
game id, the result code and the duration; never a cookie, a token or a player's name.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

ACCESS = logging.getLogger("ttt.access")
FIELDS = ("event", "game", "result", "ms")


class JsonFormatter(logging.Formatter):
    """One JSON object a line, with the access fields as keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                + f".{int(record.msecs):03d}Z",
                "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        for key in FIELDS:
            if hasattr(record, key):
                line[key] = getattr(record, key)
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=True)


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


def access(event: str, game: str | None, result: str, seconds: float) -> None:
    """The line for one event handled."""
    ms = round(seconds * 1000, 2)
    ACCESS.info("event=%s game=%s result=%s ms=%s", event, game or "-", result, ms,
                extra={"event": event, "game": game, "result": result, "ms": ms})
