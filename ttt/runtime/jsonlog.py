"""The JSON log line (TTT_LOG_FORMAT=json), standard library only: gunicorn's master loads it
through deploy/gunicorn.conf.py before it forks, and must not import the web app (gevent
patches the standard library in the worker; anything imported earlier stays unpatched).
ttt.web.ops.logs sets it up for the app."""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any

ACCESS = logging.getLogger("ttt.access")
FIELDS = ("event", "game", "result", "ms", "seat", "cell", "rev", "conn", "player", "mode",
          "variant", "winner", "status", "request")
# The front's request id (nginx's `$request_id`, sent as X-Request-Id) of the HTTP request
# being served, set by the app for each request: every line logged while it is served
# carries it as `request`, the key to nginx's JSON access line.
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("ttt_request_id",
                                                                       default=None)
_REQUEST_ID = re.compile(r"[0-9A-Za-z._-]{1,64}", re.ASCII)


def request_id(header: object) -> str | None:
    """The X-Request-Id header's value when it is a plain id, else None (never a client's
    arbitrary bytes in the log)."""
    return header if isinstance(header, str) and _REQUEST_ID.fullmatch(header) else None
# The key of the players' hashes in log lines (`key_players`, from the app's secret key): the
# same player has the same hash on every process and across connections, and nobody without
# the key can tell which player id it is.
_player_key = b""


def key_players(secret: str) -> None:
    """Key the players' hashes with the app's secret (every process shares it)."""
    global _player_key
    _player_key = hashlib.sha256(b"ttt log player\0" + str(secret).encode()).digest()


def player_hash(player: str) -> str:
    """A short, stable, keyed hash of a player id, to follow one player through the log."""
    return hashlib.blake2b(player.encode(), key=_player_key, digest_size=6).hexdigest()


def connection_id(sid: str) -> str:
    """A short stable id for a connection's log lines; the socket id itself stays secret."""
    return hashlib.blake2b(sid.encode(), digest_size=6).hexdigest()


def _event_fields(record: logging.LogRecord) -> dict[str, Any]:
    """Seat, cell, rev and connection of an access line, from what the event carried."""
    fields: dict[str, Any] = {}
    sid, payload, answer = (getattr(record, k, None) for k in ("sid", "payload", "answer"))
    if isinstance(sid, str):
        fields["conn"] = connection_id(sid)
    player = getattr(getattr(record, "who", None), "player", None)  # the sid's connection
    if isinstance(player, str):
        fields["player"] = player_hash(player)
    if isinstance(payload, dict):
        cell = payload.get("cell")
        if type(cell) is int and 0 <= cell < 81:  # never a client's raw value in the log
            fields["cell"] = cell
    if isinstance(answer, dict):
        game = answer.get("game")
        game = game if isinstance(game, dict) else {}
        seat = answer.get("you", game.get("you"))
        if seat in ("X", "O", "spectator"):
            fields["seat"] = seat
        if type(game.get("rev")) is int:  # the store's revision of the game after the event
            fields["rev"] = game["rev"]
    return fields


class Seconds:
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


class JsonFormatter(logging.Formatter):
    """One JSON object a line, with the access fields as keys of their own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._seconds = Seconds("%Y-%m-%dT%H:%M:%S", time.gmtime)

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": f"{self._seconds(record.created)}.{int(record.msecs):03d}Z",
                "level": record.levelname, "logger": record.name, "message": record.getMessage(),
                "process": record.process}
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):  # an access line: its fields as keys of their own
            line.update(fields)
        if record.name == ACCESS.name:
            line.update(_event_fields(record))
        elif (request := REQUEST_ID.get()) is not None:  # logged while an HTTP request runs
            line["request"] = request
        for key in FIELDS:
            if hasattr(record, key):
                line[key] = getattr(record, key)
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=True, default=str)


