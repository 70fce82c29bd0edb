"""The one adapter to python-engineio's and python-socketio's internals, checked at start-up.

Everything in ttt that reads or writes a part of those libraries beyond their public API
goes through this module, and nothing else does (tests/test_transport.py greps for it).
`check` runs before any hook is installed: when an upgrade has renamed or removed one,
the server refuses to start, naming the hook and the versions these were written against,
rather than running with a defence silently off.

Public, and used freely elsewhere: `socketio.server`, `server.eio`, `server.on`, `emit`,
`enter_room`, `leave_room`, `rooms(sid)`, `server.manager.is_connected`,
`eio.transport(sid)`, `eio.max_http_buffer_size`, `eio.reason`, `eio.sleep`,
`eio.start_background_task`, and a `serializer` Packet subclass with its own `decode`
(documented as the way to change how packets are read).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import socket as net
import time
from collections.abc import Callable, Collection
from importlib import metadata
from typing import Any

from engineio import socket as eio_socket
from socketio import Manager, PubSubManager, RedisManager

#: The minor versions the hooks were written against (pyproject.toml pins them with ~=).
WRITTEN_FOR = {"python-engineio": "4.15", "python-socketio": "5.18"}


class HookMissing(RuntimeError):
    """The installed python-engineio or python-socketio lacks a hook the guard needs."""


def _has_dict(obj: Any, name: str, *keys: str) -> bool:
    table = getattr(obj, name, None)
    return isinstance(table, dict) and all(callable(table.get(key)) for key in keys)


def _takes(function: Any, *names: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return all(name in parameters for name in names)


def _probe_socket(eio: Any) -> Any:
    """An Engine.IO session object as the server builds one, never registered anywhere."""
    return eio_socket.Socket(eio, "ttt-hook-probe")


#: Every hook, as (library, what, present?). What each is for is said where it is used.
HOOKS: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    ("python-engineio", "Server.handlers['connect']",
     lambda server: _has_dict(server.eio, "handlers", "connect")),
    ("python-engineio", "Server._async['websocket']",
     lambda server: _has_dict(server.eio, "_async", "websocket")),
    ("python-engineio", "Server.sockets",
     lambda server: isinstance(getattr(server.eio, "sockets", None), dict)),
    ("python-engineio", "Server.disconnect(sid)",
     lambda server: _takes(getattr(server.eio, "disconnect", None), "sid")),
    ("python-engineio", "Socket._websocket_handler",
     lambda server: callable(getattr(eio_socket.Socket, "_websocket_handler", None))),
    ("python-engineio", "Socket.upgrading/closing/closed",
     lambda server: all(hasattr(_probe_socket(server.eio), name)
                        for name in ("upgrading", "closing", "closed"))),
    ("python-engineio", "Socket.send/queue.qsize",
     lambda server: callable(getattr(eio_socket.Socket, "send", None))
     and callable(getattr(getattr(_probe_socket(server.eio), "queue", None), "qsize", None))),
    ("python-engineio", "Socket.close(wait, abort, reason)",
     lambda server: _takes(getattr(eio_socket.Socket, "close", None),
                           "wait", "abort", "reason")),
    ("python-socketio", "BaseManager.rooms",
     lambda server: isinstance(getattr(server.manager, "rooms", None), dict)),
    ("python-socketio", "PubSubManager._handle_emit",
     lambda server: callable(getattr(PubSubManager, "_handle_emit", None))),
    ("python-socketio", "Server.manager_initialized",
     lambda server: isinstance(getattr(server, "manager_initialized", None), bool)),
    ("python-socketio", "BaseManager.sid_from_eio_sid/get_namespaces",
     lambda server: callable(getattr(server.manager, "sid_from_eio_sid", None))
     and callable(getattr(server.manager, "get_namespaces", None))),
    ("python-socketio", "RedisManager._redis_listen_with_retries/_redis_connect",
     lambda server: _redis_listener_hook()),
    ("python-socketio", "BaseManager.get_participants yields (sid, eio_sid)",
     lambda server: _participants_hook(server)),
    ("python-socketio", "PubSubManager.emit(ignore_queue=True)",
     lambda server: _ignore_queue_hook(server)),
    ("python-socketio", "Server._handle_connect/_handle_eio_message",
     lambda server: all(callable(getattr(server, name, None)) for name in STEPS)),
    ("python-socketio", "PubSubManager._publish/_listen/basic_*_room (room_queue's)",
     lambda server: all(callable(getattr(PubSubManager, name, None)) for name in (
         "_publish", "_listen", "basic_enter_room", "basic_leave_room", "is_sid_room"))),
)

#: python-socketio's steps a traceback may end in (`failed_step`), by their functions' names.
STEPS = {"_handle_connect": "connect", "_handle_eio_message": "dispatch"}


def failed_step(tb: Any) -> str | None:
    """The step of python-socketio (STEPS) a traceback's innermost frame is in, or None."""
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or "socketio" not in tb.tb_frame.f_code.co_filename:
        return None
    return STEPS.get(tb.tb_frame.f_code.co_name)


def _participants_hook(server: Any) -> bool:
    """`get_participants` is public, but the pairs it yields are its bidict's items: a
    connection joined on a probe manager must come back as (its sid, its Engine.IO sid)."""
    manager_class = type(server.manager)
    if getattr(manager_class, "get_participants", None) is not Manager.get_participants:
        return False  # the server's manager answers in its own way: not the one probed
    probe = Manager()
    probe.set_server(server)
    sid = probe.connect("ttt-hook-probe", "/")
    return list(probe.get_participants("/", None)) == [(sid, "ttt-hook-probe")]


class _QueueProbe(PubSubManager):
    """A message-queue manager that publishes into a list (never to a real queue)."""

    def __init__(self) -> None:
        super().__init__(channel="ttt-hook-probe", write_only=True)
        self.published: list[Any] = []

    def _publish(self, data: Any) -> None:
        self.published.append(data)


def _ignore_queue_hook(server: Any) -> bool:
    """`PubSubManager.emit` reads the undocumented `ignore_queue` from its **kwargs: with it,
    an emit stays in this process; without it, it goes to the queue."""
    probe = _QueueProbe()
    probe.set_server(server)
    probe.emit("probe", {}, "/", room="ttt-hook-probe", ignore_queue=True)
    kept_here = probe.published == []
    probe.emit("probe", {}, "/", room="ttt-hook-probe")
    return kept_here and len(probe.published) == 1


def _redis_listener_hook() -> bool:
    """The queue listener's retry loop and what it uses, as `on_queue_recovered` replaces it."""
    probe = RedisManager("redis://127.0.0.1:1/0")  # connects to nothing until initialized
    return (inspect.isgeneratorfunction(getattr(RedisManager, "_redis_listen_with_retries",
                                                None))
            and callable(getattr(RedisManager, "_redis_connect", None))
            and all(hasattr(probe, name) for name in ("pubsub", "channel")))


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def check(server: Any) -> None:
    """Raise HookMissing, naming the hook, unless every hook below is where it is expected."""
    for package, hook, present in HOOKS:
        try:
            ok = bool(present(server))
        except Exception:  # a probe that cannot even run: the hook is not what it was
            ok = False
        if not ok:
            raise HookMissing(
                f"ttt: {package} {_version(package)} lacks hook {hook}; the transport guard "
                f"cannot run: pin {package}~={WRITTEN_FOR[package]} (pyproject.toml) or "
                f"port ttt/web/transport/engine_hooks.py to this version")


# --- Engine.IO sessions: their start and end -----------------------------------------------------

def on_session_opened(server: Any, opened: Callable[[str], None]) -> None:
    """Call opened(sid) when Engine.IO accepts a new session, whatever its transport.

    Engine.IO has one handler per event and python-socketio holds it: it is wrapped.
    """
    handlers = server.eio.handlers
    connect = handlers["connect"]

    def on_connect(sid: str, environ: dict) -> Any:
        result = connect(sid, environ)
        if result is None or result is True:  # accepted: Engine.IO keeps it
            opened(sid)
        return result

    handlers["connect"] = on_connect


def joined(server: Any, sid: str) -> bool:
    """Whether Engine.IO session `sid` has joined any Socket.IO namespace."""
    manager = server.manager
    namespaces = list(manager.get_namespaces()) or ["/"]
    return any(manager.sid_from_eio_sid(sid, ns) is not None for ns in namespaces)


def sessions(server: Any) -> dict[str, Any]:
    """This process's Engine.IO sessions now, by sid (a copy)."""
    return dict(server.eio.sockets)


def drop(server: Any, sid: str) -> bool:
    """End one Engine.IO session by dropping its transport, with no CLOSE packet: a client
    told "closed by the server" may take it as final (python-socketio does); a dropped
    transport it always retries. False if it was gone already."""
    return close(server, sid, abort=True)


def close(server: Any, sid: str, abort: bool = False) -> bool:
    """Close one Engine.IO session now, without waiting for a poll to drain it; False if gone.

    Engine.IO's own `disconnect(sid)` waits until a GET takes the close packet: with none
    pending (a polling client that stopped polling) it waits for good.
    """
    eio = server.eio
    socket = eio.sockets.pop(sid, None)
    if socket is None or socket.closed or socket.closing:
        return False
    socket.close(wait=False, abort=abort, reason=eio.reason.SERVER_DISCONNECT)
    return True


def never_wait_on_disconnect(server: Any) -> None:
    """Make Engine.IO's `disconnect(sid)` close without waiting (see `close`).

    It is what python-engineio calls itself on an oversized or unexpected POST; the WSGI
    guard refuses those first, this keeps any other path from holding a thread for good.
    """
    eio = server.eio
    original = eio.disconnect

    def disconnect(sid: str | None = None) -> None:
        if sid is None:
            return original()
        close(server, sid)
        return None

    eio.disconnect = disconnect


# --- clients that do not read ---------------------------------------------------------------------

def bound_unsent(server: Any, limit: int, over: Callable[[str], None]) -> None:
    """Call `over(sid)`, once, when more than `limit` packets of a session wait to be sent
    (a client that does not read: Engine.IO's queue of a session is unbounded, and its writer
    blocks on the full socket). Checked where a packet is queued, whatever the transport and
    the async mode."""
    eio = server.eio

    def opened(sid: str) -> None:
        session = eio.sockets.get(sid)
        if session is None:
            return
        send, told = session.send, []

        def bounded(pkt: Any) -> None:
            send(pkt)
            if not told and session.queue.qsize() > limit:
                told.append(True)
                over(sid)

        session.send = bounded

    on_session_opened(server, opened)


def cap_send_buffer(ws: Any, size: int) -> Any:
    """The websocket `ws` with its kernel send buffer capped at `size` bytes (autotuned, one
    that never read held ~3 MB unsent): simple-websocket's socket, inside Engine.IO's wrapper
    of it (threading and gevent)."""
    sock = getattr(ws, "sock", None) or getattr(getattr(ws, "ws", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError, AttributeError, ValueError):
            sock.setsockopt(net.SOL_SOCKET, net.SO_SNDBUF, size)
    return ws


# --- websockets ----------------------------------------------------------------------------------

class WebSocketSession:
    """What a websocket wrapper may know of its Engine.IO session."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self.sid: str = getattr(socket, "sid", "?")

    @property
    def in_upgrade(self) -> bool:
        """Whether Engine.IO is in the middle of upgrading this polling session to websocket
        (there it decodes frames outside any try)."""
        return bool(self._socket.upgrading)


def on_websockets(server: Any, wrap: Callable[[Any, WebSocketSession], Any]) -> None:
    """Hand Engine.IO's websocket loop `wrap(ws, session)` instead of each simple-websocket."""
    eio = server.eio
    original = eio._async["websocket"]

    def websocket(handler: Callable, engine: Any, **kwargs: Any) -> Any:
        session = WebSocketSession(handler.__self__)  # the bound Socket._websocket_handler

        def wrapped(ws: Any) -> Any:
            return handler(wrap(ws, session))

        return original(wrapped, engine, **kwargs)

    # A copy: the async driver's table is shared by every server in the process.
    eio._async = {**eio._async, "websocket": websocket}


# --- rooms ---------------------------------------------------------------------------------------

def connection_counts(server: Any, namespace: str = "/") -> tuple[int, int]:
    """(Socket.IO connections, players with one) in this process: the members of the
    namespace, and the rooms named `p:<player>`."""
    rooms = server.manager.rooms.get(namespace, {})  # None: every connection of it
    return (len(rooms.get(None, ())),
            sum(1 for name in rooms if isinstance(name, str) and name.startswith("p:")))


def room_members(server: Any, room: str, namespace: str = "/") -> Collection[str]:
    """The sids in a room of this process (no message queue: that is every member)."""
    return server.manager.rooms.get(namespace, {}).get(room, {})


def connections_by_session(server: Any, namespace: str = "/") -> dict[str, str]:
    """This process's Socket.IO connections of a namespace, {Engine.IO sid: Socket.IO sid}
    (what the drain needs to close a session once its connection's event is answered)."""
    return {eio_sid: sid for sid, eio_sid in server.manager.get_participants(namespace, None)}


# --- the message queue ---------------------------------------------------------------------------

def on_queue_emit(server: Any, heard: Callable[[dict], bool]) -> None:
    """Call heard(message) for every emit this process's message-queue listener receives,
    before python-socketio hands it to the local rooms; a True answer means "handled"."""
    manager = server.manager
    handle = manager._handle_emit

    def hear(message: dict) -> Any:
        return None if heard(message) else handle(message)

    manager._handle_emit = hear


def emit_here(server: Any, event: str, data: Any, room: str, skip_sid: list[str]) -> None:
    """Emit to this process's members of a room only, never through the message queue: a
    push heard from the queue and re-sent here in each member's protocol form must not go
    round the queue again. With no queue, a plain emit is already local."""
    manager = server.manager
    local = {"ignore_queue": True} if isinstance(manager, PubSubManager) else {}
    manager.emit(event, data, "/", room=room, skip_sid=skip_sid, **local)


def local_rooms(server: Any, namespace: str = "/") -> list[str]:
    """The named rooms with a member in this process."""
    return [name for name, members in server.manager.rooms.get(namespace, {}).items()
            if isinstance(name, str) and members]


def emit_as_heard(server: Any, event: str, data: dict, room: str) -> None:
    """Hand an emit to this process's rooms only, as if the queue listener had heard it (so
    `on_queue_emit`'s hearer sees it too: the bot streams, each protocol's copy)."""
    server.manager._handle_emit({"method": "emit", "event": event, "data": [data],
                                 "namespace": "/", "room": room, "skip_sid": None,
                                 "callback": None})


def queue_watch(server: Any) -> QueueWatch | None:
    """The watch `on_queue_recovered` put on this server's queue listener, if any."""
    return getattr(server.manager, "ttt_queue_watch", None)


def _listen_connect(manager: Any) -> None:
    """Connect the queue listener and subscribe: every held room too, with the room queue."""
    connect = getattr(manager, "listen_connect", None)
    if connect is not None:
        connect()
    else:
        manager._redis_connect()
        manager.pubsub.subscribe(manager.channel)


def start_queue_listener(server: Any) -> None:
    """Start the message-queue listener now (python-socketio starts it on the first Socket.IO
    connection; a process serving only bot streams would otherwise hear nothing)."""
    if not server.manager_initialized:
        server.manager_initialized = True
        server.manager.initialize()


class QueueWatch:
    """What this process knows of its message-queue listener: cut (since when) or listening."""

    def __init__(self) -> None:
        self.cut_since: float | None = None   # monotonic time the listener lost Redis
        self.listening = False                # subscribed now
        self.recoveries = 0                   # times it came back after a cut

    @property
    def up(self) -> bool:
        """Whether the listener hears the queue, or has not needed to yet (never started)."""
        return self.cut_since is None


QUEUE_RETRY_CAP = 0.5  # a cut listener's longest wait (python-socketio's: 60 s, PITFALLS)


def on_queue_recovered(server: Any, recovered: Callable[[], None],
                       cap: float = QUEUE_RETRY_CAP) -> QueueWatch | None:
    """Cap the Redis queue listener's back-off at `cap` seconds and call recovered() (in a
    background task) each time it subscribes again after being cut. None when the manager is
    not python-socketio's RedisManager (no queue, or another kind): nothing is changed."""
    manager = server.manager
    if not isinstance(manager, RedisManager):
        return None
    watch = QueueWatch()
    log = logging.getLogger("ttt.queue")

    def listen_with_retries() -> Any:  # python-socketio's loop, its wait capped
        wait = 0.05
        while True:
            try:
                _listen_connect(manager)
                watch.listening = True
                if watch.cut_since is not None:
                    log.warning("message queue back after %.1f s: re-sending this process's "
                                "rooms", time.monotonic() - watch.cut_since)
                    watch.cut_since = None
                    watch.recoveries += 1
                    server.start_background_task(recovered)
                wait = 0.05
                yield from manager.pubsub.listen()
            except Exception as error:
                watch.listening = False
                if watch.cut_since is None:
                    watch.cut_since = time.monotonic()
                    log.warning("message queue listener cut (%s); retrying every %.1f s at "
                                "most", error, cap)
                time.sleep(wait)  # gevent's under gunicorn (patched), a thread's otherwise
                wait = min(wait * 2, cap)

    manager._redis_listen_with_retries = listen_with_retries
    manager.ttt_queue_watch = watch
    return watch
