"""The Socket.IO server of an app: packets, its events, the drain, the guard, the bot API."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from flask import Flask
from flask_socketio import SocketIO
from socketio import packet as socketio_packet

from ttt.web.extensions import keep_socketio
from ttt.web.ops.metrics import refused_connection
from ttt.web.transport import engine_hooks, room_queue
from ttt.web.transport.admission import Admission


class OrJson:
    """The `json` a packet encodes and decodes with: orjson, about ten times faster than the
    json module on an answer. The same JSON for every payload the server sends
    (non-string keys become strings, as json makes them; text stays UTF-8 rather than
    `\\u` escapes); a client's packet is held to orjson's stricter reading (no NaN, integers
    within 64 bits: engine.io's json also refused huge integers)."""

    @staticmethod
    def dumps(obj: Any, **_: Any) -> str:
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()

    @staticmethod
    def loads(text: str | bytes) -> Any:
        return orjson.loads(text)


class TextPacket(socketio_packet.Packet):
    """A Socket.IO packet that is never binary: the server sends only JSON, so the walk over
    every payload looking for bytes (python-socketio's default) is skipped."""

    uses_binary_events = False
    json = OrJson

    def decode(self, encoded_packet: Any) -> int:
        """Decode a client's packet; refuse an event whose name is not a string.

        A packet like `42[["move"],{}]` makes python-socketio hash a list as the event name
        and die with a traceback; raised here, it is one log line (`_NoClientTracebacks`).
        """
        attachments = super().decode(encoded_packet)
        if self.packet_type in (socketio_packet.EVENT, socketio_packet.BINARY_EVENT) and not (
                isinstance(self.data, list) and self.data and isinstance(self.data[0], str)):
            raise ValueError("an event with no name")
        return attachments


class _NoClientTracebacks(logging.Filter):
    """A malformed packet from a client is the client's fault: one line, never a traceback.
    Any other error in a handler is ours (a KeyError during the drain was once logged as a
    malformed packet): it keeps its name and its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and str(record.msg).endswith("handler error"):
            error = record.exc_info[1]
            if _in_decode(record.exc_info[2]):
                record.msg = "refused a malformed packet: %s: %.200s"
                record.args = (type(error).__name__, error)
                record.levelno, record.levelname = logging.WARNING, "WARNING"
                record.exc_info, record.exc_text = None, None
            elif _closed_while_connecting(error, record.exc_info[2]):
                # python-socketio reads the session's environ, which a close (a drain sending
                # every client elsewhere, a client that left) has just removed: the client is
                # gone, nothing is ours to mend. One line, no traceback, no error counted.
                record.msg = "a connection closed while its connect packet was handled (%s)"
                record.args = (type(error).__name__,)
                record.levelno, record.levelname = logging.INFO, "INFO"
                record.exc_info, record.exc_text = None, None
            else:
                record.msg = "unexpected error handling a client's packet: %s: %.200s"
                record.args = (type(error).__name__, error)
                from ttt.web.ops.metrics import unhandled

                unhandled("socketio")
        return True


def _closed_while_connecting(error: BaseException, tb: Any) -> bool:
    """A KeyError raised in python-socketio's own connect handling: the session it looked up
    was closed meanwhile."""
    return isinstance(error, KeyError) and engine_hooks.failed_step(tb) == "connect"


def _in_decode(tb: Any) -> bool:
    """Whether the exception was raised while decoding a packet (the client's bytes), or
    raised by python-socketio's packet dispatch itself for a packet type a client may not
    send (a CONNECT_ERROR, an unknown type): both are the client's bytes, not our bug."""
    if engine_hooks.failed_step(tb) == "dispatch":
        return True
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "decode":
            return True
        tb = tb.tb_next
    return False


def _quiet_client_errors() -> None:
    for name in ("engineio.server", "socketio.server"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _NoClientTracebacks) for f in logger.filters):
            logger.addFilter(_NoClientTracebacks())


def init_app(app: Flask) -> SocketIO:
    """One SocketIO for the app (kept in app.extensions), its handlers and its WSGI layers."""
    from ttt.web.realtime import events
    from ttt.web.transport import defences, drain

    socketio = SocketIO(
        app,
        # Explicit, never auto-detected: eventlet must not be picked up by accident.
        async_mode=app.config["TTT_ASYNC_MODE"],
        **room_queue.queue_manager(app.config["TTT_MESSAGE_QUEUE"],
                                     app.config["TTT_QUEUE_BY_ROOM"]),
        max_http_buffer_size=app.config["TTT_MAX_MESSAGE_BYTES"],
        ping_interval=10,
        ping_timeout=10,
        serializer=TextPacket,
        # One connection's events are handled in order on the thread (or greenlet) that reads
        # its websocket, not on a new thread each: that spawn was a tenth of a move's server
        # CPU. A slow handler (the ultimate AI thinking) delays only its own connection;
        # other players' games are guarded by the store's compare-and-set as before.
        async_handlers=False,
        # cors_allowed_origins left at its default: same origin only.
    )
    room_queue.count_heard(socketio.server.manager, app.extensions["ttt_metrics"].registry)
    table = app.extensions["ttt_table"]
    publisher = app.extensions["ttt_publisher"]  # built by create_app: the pushes' door
    publisher.bind(socketio)
    events.register(socketio, table, publisher, app.config,
                    watch=drain.install(app, socketio).watch,
                    budgets=app.extensions.get("ttt_budgets"))
    defences.install(app, socketio)  # refuses to start unguarded (engine_hooks.HookMissing)
    # Outermost: a flood is refused before the guard or Engine.IO does any work for it.
    app.wsgi_app = app.extensions["ttt_admission"] = Admission(  # type: ignore[method-assign]
        app.wsgi_app, trusted=app.config["TTT_TRUSTED_PROXIES"],
        per_address=app.config["TTT_MAX_CONNECTIONS_PER_ADDRESS"],
        max_open=app.config["TTT_MAX_OPEN_CONNECTIONS"],
        held=app.extensions["ttt_presence"].connections_of, origin=table.origin,
        counted=refused_connection)
    _quiet_client_errors()
    keep_socketio(app, socketio)
    return socketio
