"""A plain WSGI middleware in front of Engine.IO: what python-engineio does not refuse itself.

It reads nothing of python-engineio beyond its public packet and payload decoders and the
answers it sends; the defences that need Engine.IO's internals are in ttt/web/transport/defences.py,
on top of ttt/web/transport/engine_hooks.py. Found by attacking this server, on
python-engineio 4.15:

- A long-polling POST that Engine.IO turns into a disconnect (a body over
  `max_http_buffer_size`, or a packet it does not take from a client, such as a
  PING) while no GET is pending closes the session and then waits for a poll
  that never comes: the thread or greenlet and its socket stay for good. The
  guard reads at most the cap (413 over it, whether `Content-Length` says so or
  a chunked body runs long), refuses packets Engine.IO would choke on (400),
  and hands Engine.IO the bounded body. The cap is Engine.IO's own limit, with
  no slack for framing: a body between the two would leak again.
- JSONP polling (`j=` in the query) skips the Origin check: refused with 400.
- After the handshake the sid alone drives a session. The guard reads each polling
  handshake's answer (the sid Engine.IO hands out) and binds the sid to the player the
  session cookie names; every later request naming that sid must carry that player's
  cookie, else 400. A sid the guard did not see handed out (a websocket-only session's,
  or a forgotten one) is refused: it fails closed.
- Every answer of the endpoint says `X-Content-Type-Options: nosniff`.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from engineio import packet as eio_packet
from engineio import payload as eio_payload
from flask import Flask
from werkzeug.http import parse_cookie

#: Packets Engine.IO's polling POST handles without raising (a PING or NOOP from a client
#: raises UnknownPacketError, which makes Engine.IO disconnect and wait for a poll).
CLIENT_PACKETS = frozenset({eio_packet.CLOSE, eio_packet.PONG, eio_packet.MESSAGE,
                            eio_packet.UPGRADE})
#: Sessions remembered at most; beyond it the oldest are forgotten (and then refused).
MAX_SESSIONS = 200_000
#: A handshake answer is one OPEN packet of about 150 bytes; more is not read for the sid.
MAX_HANDSHAKE = 4096

StartResponse = Callable[..., Any]


class Guard:
    """WSGI middleware for the Engine.IO endpoint (`path`) of one Flask-SocketIO app.

    `max_bytes` is Engine.IO's `max_http_buffer_size` (never above it); `live(sid)` says
    whether Engine.IO still has a session (the public `eio.transport`), to forget the
    others; `cookie_name` is the Flask session cookie that names the player.
    """

    def __init__(self, wsgi_app: Callable, app: Flask, *, max_bytes: int,
                 live: Callable[[str], bool], cookie_name: str | None = None,
                 path: str = "/socket.io/") -> None:
        self.wsgi_app = wsgi_app
        self.app = app
        self.max_bytes = max_bytes
        self.live = live
        self.cookie_name = cookie_name
        self.path = path
        self._lock = threading.Lock()
        self._owners: dict[str, bytes] = {}       # Engine.IO sid -> digest of its owner
        self._sweep_at = 1024

    # --- WSGI ---------------------------------------------------------------------------------

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or ""
        if not path.startswith(self.path):
            return self.wsgi_app(environ, start_response)

        def start(status: str, headers: list, exc_info: Any = None) -> Any:
            if not any(name.lower() == "x-content-type-options" for name, _ in headers):
                headers = [*headers, ("X-Content-Type-Options", "nosniff")]
            return start_response(status, headers, exc_info)

        refusal = self._check(environ)
        if refusal is not None:
            status, text = refusal
            body = text.encode()
            start(status, [("Content-Type", "text/plain; charset=utf-8"),
                           ("Content-Length", str(len(body))), ("Cache-Control", "no-store")])
            return [body]
        if self._is_polling_handshake(environ):
            return self._handshake(environ, start)
        return self.wsgi_app(environ, start)

    def _check(self, environ: dict) -> tuple[str, str] | None:
        """Why this request is refused, or None. May hand it a bounded copy of its body."""
        text = environ.get("QUERY_STRING", "")
        if "j" in urllib.parse.parse_qs(text, keep_blank_values=True):
            return "400 Bad Request", "JSONP polling is not served."
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        length = None
        if environ.get("CONTENT_LENGTH") and not chunked:
            try:
                length = int(environ["CONTENT_LENGTH"])
            except ValueError:
                return "400 Bad Request", "Bad Content-Length."
            if length < 0:
                return "400 Bad Request", "Bad Content-Length."
            if length > self.max_bytes:
                return "413 Content Too Large", "The body is over the message limit."
        sid = _sid(environ)
        if sid is not None:
            with self._lock:
                owner = self._owners.get(sid)
            if owner is None or not hmac.compare_digest(owner, self._owner(environ)):
                return "400 Bad Request", "Unknown session, or not this cookie's session."
        if environ.get("REQUEST_METHOD") != "POST":
            return None
        if sid is None:
            return "400 Bad Request", "A POST needs a session."
        body = self._read(environ, length, chunked)
        if body is None:
            return "413 Content Too Large", "The body is over the message limit."
        try:
            packets = eio_payload.Payload(encoded_payload=body.decode("utf-8")).packets
        except Exception:  # whatever Engine.IO's own decoder chokes on
            return "400 Bad Request", "Malformed payload."
        if any(pkt.packet_type not in CLIENT_PACKETS for pkt in packets):
            return "400 Bad Request", "Unexpected packet."
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return None

    def _read(self, environ: dict, length: int | None, chunked: bool) -> bytes | None:
        """The body, read up to the cap; None when it runs over (nothing more is read)."""
        stream = environ.get("wsgi.input")
        if stream is None:
            return b""
        if length is None and not chunked and not environ.get("wsgi.input_terminated"):
            return b""  # no length, not chunked: HTTP says there is no body
        want = self.max_bytes + 1 if length is None else length
        parts: list[bytes] = []
        got = 0
        while got < want:
            part = stream.read(want - got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        if got > self.max_bytes:
            return None
        return b"".join(parts)

    # --- the handshake: who owns a session -----------------------------------------------------

    @staticmethod
    def _is_polling_handshake(environ: dict) -> bool:
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        return (environ.get("REQUEST_METHOD") == "GET" and "sid" not in query
                and query.get("transport", ["polling"])[0] == "polling")

    def _handshake(self, environ: dict, start: StartResponse) -> Iterable[bytes]:
        """Pass a polling handshake on, and bind the sid its answer hands out to this cookie.

        The binding is made before the answer leaves, so no request can name the sid first.
        """
        environ.pop("HTTP_ACCEPT_ENCODING", None)  # the answer is read here: never compressed
        answer = self.wsgi_app(environ, start)
        try:
            body = b"".join(answer)
        finally:
            if hasattr(answer, "close"):
                answer.close()
        sid = _opened_sid(body)
        if sid is not None:
            self._remember(sid, self._owner(environ))
        return [body]

    def _owner(self, environ: dict) -> bytes:
        """A digest of the player the session cookie names (or of the raw cookie, or of none).

        The player, not the cookie's bytes: Flask signs the cookie again on every page load,
        which must not cut a polling session that another tab refreshed.
        """
        name = self.cookie_name or self.app.config["SESSION_COOKIE_NAME"]
        value = parse_cookie(environ).get(name)
        if not value:
            identity = "none:"
        else:
            identity = "cookie:" + value
            interface = self.app.session_interface
            serializer = getattr(interface, "get_signing_serializer", None)
            signer = serializer(self.app) if serializer else None
            if signer is not None:
                try:
                    data = signer.loads(
                        value, max_age=int(self.app.permanent_session_lifetime.total_seconds()))
                except Exception:  # a bad signature or an expired cookie: the raw value
                    data = None
                if isinstance(data, dict) and isinstance(data.get("pid"), str):
                    identity = "pid:" + data["pid"]
        return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).digest()

    def _remember(self, sid: str, owner: bytes) -> None:
        with self._lock:
            self._owners[sid] = owner
            if len(self._owners) > self._sweep_at:
                self._sweep()

    def _sweep(self) -> None:
        """Forget sessions Engine.IO no longer has; keep the map bounded (under the lock)."""
        for sid in [sid for sid in self._owners if not self.live(sid)]:
            del self._owners[sid]
        while len(self._owners) > MAX_SESSIONS:  # fail closed: a forgotten sid is refused
            del self._owners[next(iter(self._owners))]
        self._sweep_at = max(1024, 2 * len(self._owners))

    def sessions(self) -> int:
        """How many live sessions the guard holds an owner for (for tests and curiosity)."""
        with self._lock:
            self._sweep()
            return len(self._owners)


def _sid(environ: dict) -> str | None:
    """The sid exactly as Engine.IO reads it (same parser, blank values dropped)."""
    query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
    return query["sid"][0] if "sid" in query else None


def _opened_sid(body: bytes) -> str | None:
    """The sid of the OPEN packet an Engine.IO handshake answer starts with, if it is one."""
    if not body.startswith(b"0{") or len(body) > MAX_HANDSHAKE:
        return None
    first = body.split(b"\x1e", 1)[0]
    try:
        opened = json.loads(first[1:])
    except ValueError:
        return None
    sid = opened.get("sid") if isinstance(opened, dict) else None
    return sid if isinstance(sid, str) and sid else None
