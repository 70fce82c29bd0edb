"""A small WSGI layer in front of Engine.IO that refuses what python-engineio handles badly.

- A request body over the cap is refused with 413 before Engine.IO reads it: a long-polling
  POST over `max_http_buffer_size` with no GET pending made python-engineio (through 4.15)
  close the session and then wait for ever, holding a thread and a socket per request.
- JSONP polling (`j=` in the query) is refused with 400: a `<script>` load sends no Origin,
  so the origin check never runs, and the answer would hand the session id to the page.
- Every later request of an Engine.IO session must carry the session cookie of the request
  that opened it (else 400): a session id alone, copied from a log or leaked, drives nothing.
- A websocket that sends junk (an empty frame, `x…`, `-1`) ends quietly with one log line
  instead of a 500 and a traceback.
- Socket.IO answers say `X-Content-Type-Options: nosniff` like every other answer.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

log = logging.getLogger("ttt.guard")
PREFIX = "/socket.io"
FRAMING = 64            # a polling POST may carry a little framing beyond one message
REMEMBERED = 100_000    # sessions whose cookie is remembered, oldest forgotten first


def _refuse(start_response: Callable, status: str, text: str) -> list[bytes]:
    body = text.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"),
                            ("Content-Length", str(len(body))),
                            ("X-Content-Type-Options", "nosniff")])
    return [body]


class Guard:
    """WSGI middleware for the Engine.IO endpoint; every other path passes untouched."""

    def __init__(self, app: Callable, max_body: int, cookie_name: str) -> None:
        self.app = app
        self.max_body = max_body + FRAMING
        self.cookie_name = cookie_name
        self._owners: OrderedDict[str, str] = OrderedDict()  # sid -> hash of its cookie
        self._lock = threading.Lock()

    def _cookie(self, environ: dict) -> str:
        """A hash of the request's session cookie ('' without one): the binding, not the key."""
        for part in environ.get("HTTP_COOKIE", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.cookie_name:
                return hashlib.sha256(value.encode()).hexdigest()
        return ""

    def _remember(self, sid: str, owner: str) -> None:
        with self._lock:
            self._owners[sid] = owner
            while len(self._owners) > REMEMBERED:
                self._owners.popitem(last=False)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if not environ.get("PATH_INFO", "").startswith(PREFIX):
            return self.app(environ, start_response)
        query = parse_qs(environ.get("QUERY_STRING", ""))
        if "j" in query:
            return _refuse(start_response, "400 Bad Request", "JSONP polling is not served")
        owner = self._cookie(environ)
        sid = (query.get("sid") or [None])[0]
        if sid is not None:
            with self._lock:
                expected = self._owners.get(sid)
            if expected is not None and expected != owner:
                return _refuse(start_response, "400 Bad Request",
                               "this session belongs to another cookie")
        refused = self._bound_body(environ, start_response)
        if refused is not None:
            return refused
        secured = self._with_nosniff(start_response)
        if environ.get("HTTP_UPGRADE", "").lower() == "websocket":
            return self._websocket(environ, secured)
        answer = self.app(environ, secured)
        if sid is None and environ.get("REQUEST_METHOD") == "GET":
            return self._learn_sid(answer, owner)
        return answer

    def _bound_body(self, environ: dict, start_response: Callable) -> list[bytes] | None:
        """413 for a body over the cap; a body of unknown length is read, at most cap + 1."""
        if environ.get("REQUEST_METHOD") not in ("POST", "PUT"):
            return None
        length = environ.get("CONTENT_LENGTH")
        if length:
            try:
                size = int(length)
            except ValueError:
                return _refuse(start_response, "400 Bad Request", "bad Content-Length")
            if size > self.max_body:
                return _refuse(start_response, "413 Request Entity Too Large",
                               "a message is at most 4 KB")
            return None
        body = environ["wsgi.input"].read(self.max_body + 1)
        if len(body) > self.max_body:
            return _refuse(start_response, "413 Request Entity Too Large",
                           "a message is at most 4 KB")
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return None

    @staticmethod
    def _with_nosniff(start_response: Callable) -> Callable:
        def start(status: str, headers: list, *rest: Any):
            if not any(name.lower() == "x-content-type-options" for name, _ in headers):
                headers = [*headers, ("X-Content-Type-Options", "nosniff")]
            return start_response(status, headers, *rest)

        return start

    def _websocket(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        """Run a websocket; a client's junk frame ends it with one line, not a traceback."""
        try:
            return self.app(environ, start_response)
        except (ValueError, TypeError, IndexError, KeyError) as error:
            log.warning("closed a websocket that sent a malformed packet: %s: %.100s",
                        type(error).__name__, error)
            try:
                return _refuse(start_response, "400 Bad Request", "malformed packet")
            except AssertionError:  # the server already answered the upgrade
                return []

    def _learn_sid(self, answer: Iterable[bytes], owner: str) -> Iterable[bytes]:
        """Remember which cookie opened the session whose handshake this answer carries."""
        chunks = list(answer)
        if hasattr(answer, "close"):
            answer.close()
        body = b"".join(chunks)
        if body[:1] == b"0":  # the Engine.IO open packet: 0{"sid": ...}
            try:
                sid = json.loads(body[1:].split(b"\x1e", 1)[0])["sid"]
            except (ValueError, KeyError, TypeError):
                sid = None
            if isinstance(sid, str):
                self._remember(sid, owner)
        return chunks
