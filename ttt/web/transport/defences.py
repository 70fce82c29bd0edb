"""Every defence of the Socket.IO transport, installed in one call: guarded, or no start.

The list (docs/protocol.md "Refused at the transport"; tests/test_transport.py checks each
on a real server):

| defence                                        | where                                 |
|------------------------------------------------|---------------------------------------|
| body over the cap: 413, read no further         | `Guard` (WSGI, transport/guard.py)      |
| polling POST with a packet Engine.IO chokes on  | `Guard`                               |
| JSONP polling: 400                              | `Guard`                               |
| a sid with another player's cookie: 400         | `Guard`                               |
| `X-Content-Type-Options: nosniff`               | `Guard`                               |
| junk websocket frame: dropped, one log line     | `FrameCheck`, via engine_hooks        |
| session that never joins Socket.IO: closed      | `HelloTimer`, via engine_hooks        |
| client that does not read: dropped past a bound | engine_hooks.bound_unsent             |
| Engine.IO's disconnect never waits for a poll   | engine_hooks.never_wait_on_disconnect |
| an event whose name is not a string: refused    | `TextPacket.decode` (ttt/web/__init__)|

`install` checks every engine hook first (engine_hooks.check) and raises if one is missing.
Works the same under the threaded Werkzeug server and gunicorn's gevent worker: waits go
through Engine.IO's own sleep and background tasks.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from engineio import packet as eio_packet
from flask import Flask
from flask_socketio import SocketIO

from ttt.master.limits import prefix_of
from ttt.web.transport import engine_hooks
from ttt.web.transport.admission import address_of
from ttt.web.transport.budgets import Budgets
from ttt.web.transport.guard import Guard

log = logging.getLogger("ttt.guard")

#: Handed to Engine.IO's upgrade loop instead of a frame that would crash it: a NOOP
#: makes the upgrade fail cleanly (the session stays on polling).
FAILED_UPGRADE = "6"
#: Seconds an Engine.IO session has to join Socket.IO (TTT_HELLO_SECONDS; 0 turns it off).
HELLO_SECONDS = 10
#: Added to each session's deadline. Engine.IO's first ping leaves `ping_interval` (10 s, like
#: the default deadline) after the handshake, from its own thread, which raises (a traceback
#: in the log) when the session is closed under it between its check and its send.
PING_CLEARANCE = 0.5
#: First characters of a text frame that Engine.IO decodes without raising: a packet type.
PACKET_TYPES = frozenset("0123456")
#: Packets a session may have waiting to be sent before it is dropped (a spectator that never
#: reads; a live page reads each push at once), and each websocket's kernel send buffer.
MAX_UNSENT = 256
SEND_BUFFER = 64 * 1024


def install(app: Flask, socketio: SocketIO) -> Guard:
    """Check the engine hooks, install every defence, and put the WSGI guard in front.

    Call after `SocketIO(app, ...)`, so the guard wraps the middleware Flask-SocketIO
    installs and sees every Engine.IO request first. Raises engine_hooks.HookMissing.
    """
    server = socketio.server
    engine_hooks.check(server)
    eio = server.eio
    max_bytes = min(int(app.config["TTT_MAX_MESSAGE_BYTES"]), int(eio.max_http_buffer_size))
    engine_hooks.never_wait_on_disconnect(server)
    budgets = app.extensions.get("ttt_budgets")
    trusted = app.config["TTT_TRUSTED_PROXIES"]

    def prefix_for(sid: str) -> str:
        """The address prefix of an Engine.IO session (its handshake's environ, which
        python-socketio keeps by Engine.IO sid)."""
        environ = getattr(server, "environ", {}).get(sid)
        return prefix_of(address_of(environ, trusted)) if environ else ""

    engine_hooks.on_websockets(server, lambda ws, session: FrameCheck(
        engine_hooks.cap_send_buffer(ws, SEND_BUFFER), session, max_bytes,
        budgets if budgets is not None and budgets.events else None, prefix_for))

    def not_reading(sid: str) -> None:  # called where a packet is queued: dropped apart
        log.warning("dropped a client that does not read: %d packets unsent", MAX_UNSENT)
        eio.start_background_task(engine_hooks.drop, server, sid)

    engine_hooks.bound_unsent(server, int(app.config.get("TTT_MAX_UNSENT", MAX_UNSENT)),
                              not_reading)
    hello = float(app.config.get("TTT_HELLO_SECONDS",
                                 os.environ.get("TTT_HELLO_SECONDS", HELLO_SECONDS)))
    if hello > 0:
        timer = HelloTimer(server, hello)
        engine_hooks.on_session_opened(server, timer.opened)

    def live(sid: str) -> bool:
        try:
            eio.transport(sid)  # public: raises KeyError for a closed or unknown session
        except KeyError:
            return False
        return True

    guard = Guard(app.wsgi_app, app, max_bytes=max_bytes, live=live,
                  cookie_name=app.config["SESSION_COOKIE_NAME"])
    app.wsgi_app = guard  # type: ignore[method-assign]
    app.extensions["ttt_guard"] = guard
    return guard


# --- sessions that never join ---------------------------------------------------------------------

class HelloTimer:
    """Closes each Engine.IO session that has not joined Socket.IO within `seconds`.

    A websocket that only answers pings, or a polling session that only polls, holds a
    socket and (threaded) a thread for nothing. One background task runs while any wait.
    """

    def __init__(self, server: Any, seconds: float) -> None:
        self.server = server
        self.seconds = seconds
        self._lock = threading.Lock()
        self._waiting: deque[tuple[float, str]] = deque()
        self._running = False

    def opened(self, sid: str) -> None:
        """A new Engine.IO session: give it `seconds` to join."""
        with self._lock:
            self._waiting.append((time.monotonic() + self.seconds + PING_CLEARANCE, sid))
            start = not self._running
            self._running = True
        if start:
            self.server.eio.start_background_task(self._run)

    def _run(self) -> None:
        """Close each session that has not joined by its deadline; end when none wait."""
        try:
            while True:
                with self._lock:
                    if not self._waiting:
                        self._running = False
                        return
                    deadline, sid = self._waiting[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self.server.eio.sleep(wait)
                    continue
                with self._lock:
                    self._waiting.popleft()
                try:
                    self._close_if_silent(sid)
                except Exception as error:  # never let one session end the loop
                    log.warning("could not check session %s: %s", sid, error)
        except BaseException:  # killed: let the next session start another
            with self._lock:
                self._running = False
            raise

    def _close_if_silent(self, sid: str) -> None:
        if engine_hooks.joined(self.server, sid):
            return
        if engine_hooks.close(self.server, sid):
            log.info("closed session %s: no Socket.IO connect within %gs", sid, self.seconds)


# --- junk websocket frames ------------------------------------------------------------------------

def decodable(data: Any) -> bool:
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


class FrameCheck:
    """The websocket Engine.IO's loop reads from, minus the frames that would crash the loop.

    A junk frame (empty, `x...`, `-1`) escaped Engine.IO's loop and Werkzeug answered 500
    with a traceback: such frames are dropped, with one log line per connection.
    """

    def __init__(self, ws: Any, session: engine_hooks.WebSocketSession, max_bytes: int,
                 budgets: Budgets | None = None,
                 prefix_for: Callable[[str], str] | None = None) -> None:
        self._ws = ws
        self._session = session
        self._max_bytes = max_bytes
        self._noted = False
        self._budgets = budgets          # the address's event frames
        self._prefix_for = prefix_for
        self._prefix: str | None = None

    def __getattr__(self, name: str) -> Any:  # the socket Engine.IO sets a timeout on, ...
        return getattr(self._ws, name)

    def send(self, message: Any) -> Any:
        return self._ws.send(message)

    def close(self) -> Any:
        return self._ws.close()

    def wait(self) -> Any:
        while True:
            # Engine.IO decodes the upgrade's frames outside any try: there, a closed
            # connection or a bad frame must become a failed upgrade, not an exception.
            upgrading = self._session.in_upgrade
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
            if not decodable(data):
                self._note("dropped a junk websocket frame")
                continue
            if self._budgets is not None and self._past_budget(data):
                self._note("dropped events past the address's budget")
                continue
            return data

    def _past_budget(self, data: Any) -> bool:
        """Whether this frame is a Socket.IO event (not a `move`) past its address prefix's
        frame budget (ttt.web.transport.budgets.FRAME_TIMES): dropped before any decoding."""
        if not isinstance(data, str) or not data.startswith("42") or '"move"' in data[2:16]:
            return False
        if self._prefix is None:
            self._prefix = self._prefix_for(self._session.sid) if self._prefix_for else ""
        return not self._budgets.frame(self._prefix)

    def _note(self, what: str) -> None:
        if not self._noted:  # one line per connection, whatever it sends
            self._noted = True
            log.warning("%s from session %s", what, self._session.sid)
