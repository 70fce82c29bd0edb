"""A WSGI layer in front of the Engine.IO endpoint: what python-engineio does not refuse itself.

Found by attacking this server (issue 11), on python-engineio 4.15:

- A long-polling POST that Engine.IO turns into a disconnect (a body over
  `max_http_buffer_size`, or a packet it does not take from a client, such as a
  PING) while no GET is pending closes the session and then waits for a poll
  that never comes: the thread or greenlet and its socket stay for good. The
  guard reads at most the cap (413 over it, whether `Content-Length` says so or
  a chunked body runs long), refuses packets Engine.IO would choke on (400),
  and hands Engine.IO the bounded body. The cap is Engine.IO's own limit, with
  no slack for framing: a body between the two would leak again. Engine.IO's
  own disconnect of one session is made not to wait for that poll either.
- JSONP polling (`j=` in the query) skips the Origin check: refused with 400.
- After the handshake the sid alone drives a session. Every request naming a
  sid must carry the session cookie of the player that opened it, else 400.
- A junk websocket frame (empty, `x...`, `-1`) escaped Engine.IO's websocket
  loop: Werkzeug answered 500 with a traceback. Such frames are dropped, with
  one log line per connection.
- An Engine.IO session that has not joined Socket.IO within
  `TTT_HELLO_SECONDS` (default 10) is closed: a websocket that only answers
  pings holds nothing for long.
- Every answer of the endpoint says `X-Content-Type-Options: nosniff`.

Works the same under the threaded Werkzeug server and gunicorn's gevent
worker: waits go through Engine.IO's own sleep and background tasks.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import logging
import os
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from engineio import packet as eio_packet
from engineio import payload as eio_payload
from werkzeug.http import parse_cookie

log = logging.getLogger("ttt.guard")

#: Packets Engine.IO's polling POST handles without raising (a PING or NOOP from a client
#: raises UnknownPacketError, which makes Engine.IO disconnect and wait for a poll).
CLIENT_PACKETS = frozenset({eio_packet.CLOSE, eio_packet.PONG, eio_packet.MESSAGE,
                            eio_packet.UPGRADE})
#: Handed to Engine.IO's upgrade loop instead of a frame that would crash it: a NOOP
#: makes the upgrade fail cleanly (the session stays on polling).
FAILED_UPGRADE = "6"
#: Sessions remembered at most; beyond it the oldest are forgotten (and then refused).
MAX_SESSIONS = 200_000
#: Seconds an Engine.IO session has to join Socket.IO (TTT_HELLO_SECONDS; 0 turns it off).
HELLO_SECONDS = 10

StartResponse = Callable[..., Any]


class Guard:
    """WSGI middleware for the Engine.IO endpoint of one Flask-SocketIO app.

    Wrap it outside the middleware Flask-SocketIO installs, after `SocketIO(app, ...)`:
    `app.wsgi_app = Guard(app.wsgi_app, max_body, cookie_name)`. It finds the Socket.IO
    server and the Flask app through that middleware.
    """

    def __init__(self, wsgi_app: Callable, max_body: int | None = None,
                 cookie_name: str | None = None) -> None:
        self.wsgi_app = wsgi_app
        self.app = getattr(wsgi_app, "flask_app", None)          # Flask-SocketIO's middleware
        self.server = getattr(wsgi_app, "engineio_app", None)    # python-socketio
        if self.server is None or self.app is None:
            raise TypeError("wrap the middleware that SocketIO(app) puts in app.wsgi_app")
        self.eio = self.server.eio                               # python-engineio
        self.path = getattr(wsgi_app, "engineio_path", "/socket.io/")
        # Never above Engine.IO's own limit: a POST between the two is what leaked.
        limit = int(self.eio.max_http_buffer_size)
        self.max_bytes = min(limit, max_body) if max_body else limit
        self.cookie_name = cookie_name
        hello = self.app.config.get("TTT_HELLO_SECONDS",
                                    os.environ.get("TTT_HELLO_SECONDS", HELLO_SECONDS))
        self.hello_seconds = float(hello)
        self._lock = threading.Lock()
        self._owners: dict[str, bytes] = {}       # Engine.IO sid -> digest of its owner
        self._sweep_at = 1024
        self._hello: deque[tuple[float, str]] = deque()
        self._reaping = False
        self._hook_sessions()
        self._check_websocket_frames()
        self._never_wait_on_disconnect()

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
        # The sid exactly as Engine.IO reads it (same parser, blank values dropped).
        query = urllib.parse.parse_qs(text)
        sid = query["sid"][0] if "sid" in query else None
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

    # --- who owns a session ---------------------------------------------------------------------

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

    def _hook_sessions(self) -> None:
        """Learn each session's owner at the handshake, forget it at the disconnect."""
        handlers = self.eio.handlers
        connect, disconnect = handlers["connect"], handlers["disconnect"]

        def on_connect(sid: str, environ: dict) -> Any:
            self._remember(sid, self._owner(environ))
            result = connect(sid, environ)
            if result is not None and result is not True:  # refused: Engine.IO drops it
                self._forget(sid)
            return result

        def on_disconnect(sid: str, *args: Any) -> Any:
            self._forget(sid)
            return disconnect(sid, *args)

        handlers["connect"], handlers["disconnect"] = on_connect, on_disconnect

    def _remember(self, sid: str, owner: bytes) -> None:
        start = False
        with self._lock:
            self._owners[sid] = owner
            if len(self._owners) > self._sweep_at:
                self._sweep()
            if self.hello_seconds > 0:
                self._hello.append((time.monotonic() + self.hello_seconds, sid))
                start = not self._reaping
                self._reaping = True
        if start:
            self.eio.start_background_task(self._reap)

    def _sweep(self) -> None:
        """Forget sessions Engine.IO no longer has (a missed disconnect); keep the map bounded."""
        live = self.eio.sockets
        for sid in [sid for sid in self._owners if sid not in live]:
            del self._owners[sid]
        while len(self._owners) > MAX_SESSIONS:  # fail closed: a forgotten sid is refused
            del self._owners[next(iter(self._owners))]
        self._sweep_at = max(1024, 2 * len(self._owners))

    def _forget(self, sid: str) -> None:
        with self._lock:
            self._owners.pop(sid, None)

    def sessions(self) -> int:
        """How many sessions the guard remembers (for tests and curiosity)."""
        with self._lock:
            return len(self._owners)

    # --- sessions that never join ---------------------------------------------------------------

    def _reap(self) -> None:
        """Close each session that has not joined Socket.IO by its deadline; end when none wait."""
        try:
            while True:
                with self._lock:
                    if not self._hello:
                        self._reaping = False
                        return
                    deadline, sid = self._hello[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self.eio.sleep(wait)
                    continue
                with self._lock:
                    self._hello.popleft()
                try:
                    self._close_if_silent(sid)
                except Exception as error:  # never let one session end the loop
                    log.warning("could not check session %s: %s", sid, error)
        except BaseException:  # killed: let the next session start another
            with self._lock:
                self._reaping = False
            raise

    def _close_if_silent(self, sid: str) -> None:
        socket = self.eio.sockets.get(sid)
        if socket is None or socket.closed or socket.closing:
            return
        manager = self.server.manager
        namespaces = list(manager.get_namespaces()) or ["/"]
        if any(manager.sid_from_eio_sid(sid, ns) is not None for ns in namespaces):
            return
        log.info("closed session %s: no Socket.IO connect within %gs", sid, self.hello_seconds)
        socket.close(wait=False, abort=False, reason=self.eio.reason.SERVER_DISCONNECT)

    # --- Engine.IO's weak spots ---------------------------------------------------------------

    def _check_websocket_frames(self) -> None:
        """Hand Engine.IO's websocket loop only frames it can decode."""
        original = self.eio._async.get("websocket")
        if original is None:  # no websocket support in this async mode
            return
        guard = self

        def websocket(handler: Callable, server: Any, **kwargs: Any) -> Any:
            socket = getattr(handler, "__self__", None)  # the Engine.IO Socket

            def checked(ws: Any) -> Any:
                return handler(_CheckedWebSocket(ws, socket, guard.max_bytes))

            return original(checked, server, **kwargs)

        # A copy: the async driver's table is shared by every server in the process.
        self.eio._async = {**self.eio._async, "websocket": websocket}

    def _never_wait_on_disconnect(self) -> None:
        """Engine.IO's disconnect of one session waits until a poll drains it; do not wait.

        It is what python-engineio calls on an oversized or unexpected POST: with no GET
        pending the wait never ends and holds the thread or greenlet and its socket.
        """
        eio = self.eio
        original = eio.disconnect

        def disconnect(sid: str | None = None) -> None:
            if sid is None:
                return original()
            socket = eio.sockets.pop(sid, None)
            if socket is not None:
                socket.close(wait=False, reason=eio.reason.SERVER_DISCONNECT)
            return None

        eio.disconnect = disconnect


#: First characters of a text frame that Engine.IO decodes without raising: a packet type.
PACKET_TYPES = frozenset("0123456")


def _decodable(data: Any) -> bool:
    """Whether Engine.IO can decode this frame. A text frame's packet type is checked by its
    first character (decoding the whole would parse every message's JSON a second time); the
    rare base64 text frame (`b...`) is decoded in full."""
    if isinstance(data, (bytes, bytearray)):
        return True
    if not isinstance(data, str) or not data:
        return False
    if data[0] in PACKET_TYPES:
        return True
    if data[0] != "b":
        return False
    try:
        eio_packet.Packet(encoded_packet=data)
    except Exception:
        return False
    return True


class _CheckedWebSocket:
    """The websocket Engine.IO's loop reads from, minus the frames that would crash the loop."""

    def __init__(self, ws: Any, socket: Any, max_bytes: int) -> None:
        self._ws = ws
        self._socket = socket
        self._max_bytes = max_bytes
        self._noted = False

    def __getattr__(self, name: str) -> Any:  # _sock, socket, ...: the real ones
        return getattr(self._ws, name)

    def send(self, message: Any) -> Any:
        return self._ws.send(message)

    def close(self) -> Any:
        return self._ws.close()

    def wait(self) -> Any:
        while True:
            # Engine.IO decodes the upgrade's frames outside any try: there, a closed
            # connection or a bad frame must become a failed upgrade, not an exception.
            upgrading = bool(getattr(self._socket, "upgrading", False))
            try:
                data = self._ws.wait()
            except Exception:
                if upgrading:
                    return FAILED_UPGRADE
                raise
            if data is None:
                return FAILED_UPGRADE if upgrading else None
            if len(data) > self._max_bytes:
                self._note("an oversized websocket message closed the connection")
                return FAILED_UPGRADE if upgrading else None
            if not _decodable(data):
                self._note("dropped a junk websocket frame")
                continue
            return data

    def _note(self, what: str) -> None:
        if not self._noted:  # one line per connection, whatever it sends
            self._noted = True
            log.warning("%s from session %s", what, getattr(self._socket, "sid", "?"))
