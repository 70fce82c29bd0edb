"""The transport's defences: each one live on a real server, none of them silently off.

`DEFENCES` is the one list of what the server refuses at the transport (docs/protocol.md
"Refused at the transport"; ttt/web/transport/defences.py says where each lives); the detailed
attacks are in test_security.py, test_hardening.py and test_abuse.py. The one defence no
request from outside can reach while the others hold (Engine.IO's disconnect not waiting
for a poll) is checked in process: test_engineio_disconnect_does_not_wait_for_a_poll
(test_security.py).

Then: a missing engine hook stops the server from starting, and no module of ttt but
ttt/web/transport/engine_hooks.py touches python-engineio's or python-socketio's internals.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import engineio.async_drivers.threading as threading_driver
import pytest
import requests
import socketio
import websocket
from engineio import base_socket
from engineio import socket as eio_socket
from socketio import base_manager

from tests.support.servers import ROOT, Log, Server
from tests.support.waiting import eventually
from ttt.web import create_app
from ttt.web.transport import engine_hooks
from ttt.web.transport.engine_hooks import HOOKS, HookMissing

SECRET = "transport-test-secret"
HELLO_SECONDS = 2
CAP = 4096
EIO = "/socket.io/?EIO=4&transport=polling"


# --- one real server, every defence -------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("transport") / "server.log"
    srv = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": SECRET, "TTT_RATE_LIMIT": "0",
                  "TTT_HELLO_SECONDS": str(HELLO_SECONDS)}, log=log).start(timeout=120)
    yield srv
    srv.stop()


def cookie_of(base: str) -> str:
    http = requests.Session()
    http.get(base + "/", timeout=10).raise_for_status()
    return http.cookies["session"]


def opened_session(base: str, cookie: str) -> tuple[str, dict]:
    """A polling session of this cookie: its URL and the headers that drive it."""
    headers = {"Cookie": f"session={cookie}"}
    answer = requests.get(base + EIO, headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    sid = json.loads(answer.text[1:].split("\x1e")[0])["sid"]
    return f"{base}{EIO}&sid={sid}", headers


def wait_for_line(log: Log, mark: int, needle: str, timeout: float = 30) -> str:
    def holding() -> str:
        text = log.since(mark)
        return text if needle in text else ""

    return eventually(holding, timeout,
                      lambda: f"no {needle!r} in the log: {log.since(mark)[-1500:]}")


def websocket_of(base: str, cookie: str) -> websocket.WebSocket:
    url = base.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
    ws = websocket.create_connection(url, header=[f"Cookie: session={cookie}"], timeout=10)
    assert ws.recv().startswith("0{")  # Engine.IO open
    return ws


def joined_websocket(base: str, cookie: str) -> websocket.WebSocket:
    ws = websocket_of(base, cookie)
    ws.send("40")
    assert ws.recv().startswith("40{")  # Socket.IO connect
    return ws


def answers_join(ws: websocket.WebSocket) -> bool:
    """Whether the connection still answers a join, in order after what was sent before."""
    ws.send('4277["join",{}]')
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        message = ws.recv()
        if message == "2":
            ws.send("3")
        elif message.startswith("4377["):
            return json.loads(message[4:])[0]["ok"] is True
    return False


def shut(ws: websocket.WebSocket) -> None:
    with contextlib.suppress(Exception):
        ws.close(timeout=1)
    ws.shutdown()


def oversized_post_is_413(server: Server, log: Log) -> None:
    url, headers = opened_session(server.url, cookie_of(server.url))
    answer = requests.post(url, data="4" + "x" * CAP, headers=headers, timeout=10)
    assert answer.status_code == 413


def unexpected_polling_packet_is_400(server: Server, log: Log) -> None:
    url, headers = opened_session(server.url, cookie_of(server.url))
    assert requests.post(url, data="2", headers=headers, timeout=10).status_code == 400  # PING


def jsonp_is_400(server: Server, log: Log) -> None:
    answer = requests.get(server.url + EIO + "&j=0", timeout=10,
                          headers={"Cookie": f"session={cookie_of(server.url)}"})
    assert answer.status_code == 400 and '"sid"' not in answer.text


def another_cookie_is_400(server: Server, log: Log) -> None:
    url, mine = opened_session(server.url, cookie_of(server.url))
    other = {"Cookie": f"session={cookie_of(server.url)}"}
    assert requests.post(url, data="40", headers=other, timeout=10).status_code == 400
    assert requests.get(url, headers={}, timeout=10).status_code == 400
    assert requests.post(url, data="40", headers=mine, timeout=10).status_code == 200


def answers_say_nosniff(server: Server, log: Log) -> None:
    for answer in (requests.get(server.url + EIO, timeout=10),             # served
                   requests.get(server.url + EIO + "&sid=x", timeout=10)):  # refused
        assert answer.headers["X-Content-Type-Options"] == "nosniff"


def junk_websocket_frame_is_dropped(server: Server, log: Log) -> None:
    mark = log.size()
    ws = joined_websocket(server.url, cookie_of(server.url))
    try:
        ws.send("x")
        assert answers_join(ws)
    finally:
        shut(ws)
    text = wait_for_line(log, mark, "dropped a junk websocket frame")
    assert "Traceback" not in text and '" 500 ' not in text, text[-1500:]


def unnamed_event_is_refused(server: Server, log: Log) -> None:
    mark = log.size()
    ws = joined_websocket(server.url, cookie_of(server.url))
    try:
        ws.send('4278[["move"],{}]')
        assert answers_join(ws)
    finally:
        shut(ws)
    text = wait_for_line(log, mark, "an event with no name")
    assert "Traceback" not in text and "4378" not in text, text[-1500:]


def silent_session_is_closed(server: Server, log: Log) -> None:
    ws = websocket_of(server.url, cookie_of(server.url))  # never sends a Socket.IO connect
    started = time.monotonic()
    try:
        while True:
            assert time.monotonic() - started < HELLO_SECONDS + 30, "still open"
            try:
                message = ws.recv()
            except (websocket.WebSocketException, OSError):
                break
            if message == "2":
                ws.send("3")  # answering pings does not keep it: only joining does
            elif message in ("", "1"):  # a close frame, or Engine.IO's close packet
                break
    finally:
        shut(ws)
    assert time.monotonic() - started >= HELLO_SECONDS * 0.9  # closed by the timer, not at once


DEFENCES: dict[str, Callable[[Server, Log], None]] = {
    "body over the cap: 413": oversized_post_is_413,
    "polling POST of a packet Engine.IO would choke on: 400": unexpected_polling_packet_is_400,
    "JSONP polling: 400": jsonp_is_400,
    "a sid with another player's cookie, or none: 400": another_cookie_is_400,
    "every /socket.io/ answer says nosniff": answers_say_nosniff,
    "junk websocket frame: dropped, no 500, the connection goes on":
        junk_websocket_frame_is_dropped,
    "an event whose name is not a string: refused, no traceback": unnamed_event_is_refused,
    "an Engine.IO session that never joins Socket.IO: closed": silent_session_is_closed,
}


@pytest.mark.server
@pytest.mark.parametrize("defence", list(DEFENCES))
def test_every_defence_is_live(server, defence):
    DEFENCES[defence](server, Log(server.log))


# --- a missing hook stops the server --------------------------------------------------------------

def _without_socket_state(monkeypatch) -> None:
    init = base_socket.BaseSocket.__init__

    def init_without_upgrading(self, *args):
        init(self, *args)
        del self.upgrading

    monkeypatch.setattr(base_socket.BaseSocket, "__init__", init_without_upgrading)


#: How a future python-engineio or python-socketio could lose each hook.
LOSE: dict[str, Callable[[pytest.MonkeyPatch, socketio.Server], None]] = {
    "Server.handlers['connect']": lambda mp, s: mp.setattr(s.eio, "handlers", {}),
    "Server._async['websocket']": lambda mp, s: mp.setattr(
        s.eio, "_async", {k: v for k, v in s.eio._async.items() if k != "websocket"}),
    "Server.sockets": lambda mp, s: mp.delattr(s.eio, "sockets"),
    "Server.disconnect(sid)": lambda mp, s: mp.setattr(s.eio, "disconnect", lambda: None),
    "Socket._websocket_handler": lambda mp, s: mp.delattr(eio_socket.Socket,
                                                          "_websocket_handler"),
    "Socket.upgrading/closing/closed": lambda mp, s: _without_socket_state(mp),
    "Socket.send/queue.qsize": lambda mp, s: mp.delattr(eio_socket.Socket, "send"),
    "Socket.close(wait, abort, reason)": lambda mp, s: mp.setattr(eio_socket.Socket, "close",
                                                                  lambda self: None),
    "BaseManager.rooms": lambda mp, s: mp.delattr(s.manager, "rooms"),
    "PubSubManager._handle_emit": lambda mp, s: mp.delattr(socketio.PubSubManager,
                                                           "_handle_emit"),
    "Server.manager_initialized": lambda mp, s: mp.delattr(s, "manager_initialized"),
    "BaseManager.sid_from_eio_sid/get_namespaces": lambda mp, s: mp.delattr(
        base_manager.BaseManager, "sid_from_eio_sid"),
    "RedisManager._redis_listen_with_retries/_redis_connect": lambda mp, s: mp.delattr(
        socketio.RedisManager, "_redis_listen_with_retries"),
    # A version whose get_participants yields the sids alone (the drain would map nothing).
    "BaseManager.get_participants yields (sid, eio_sid)": lambda mp, s: mp.setattr(
        base_manager.BaseManager, "get_participants",
        lambda self, namespace, room: iter(list(self.rooms.get(namespace, {}).get(room, {})))),
    # A version whose emit no longer reads ignore_queue (the hub's split pushes would go
    # round the queue again, to every process).
    "PubSubManager.emit(ignore_queue=True)": lambda mp, s: _queue_emit_without_ignore(mp),
    # A version whose frames are named otherwise (a client's bad packet logged as our bug).
    "Server._handle_connect/_handle_eio_message": lambda mp, s: mp.delattr(
        socketio.Server, "_handle_connect"),
    "PubSubManager._publish/_listen/basic_*_room (room_queue's)": lambda mp, s: mp.delattr(
        socketio.PubSubManager, "_listen"),
}


def _queue_emit_without_ignore(mp: pytest.MonkeyPatch) -> None:
    emit = socketio.PubSubManager.emit

    def publishing(self, *args, ignore_queue: bool = False, **kwargs):
        return emit(self, *args, **kwargs)

    mp.setattr(socketio.PubSubManager, "emit", publishing)


def test_every_hook_has_a_way_to_lose_it():
    assert set(LOSE) == {hook for _, hook, _ in HOOKS}


@pytest.mark.parametrize("hook", list(LOSE))
def test_a_missing_hook_is_named(monkeypatch, hook):
    server = socketio.Server(async_mode="threading")
    engine_hooks.check(server)  # all there
    LOSE[hook](monkeypatch, server)
    with pytest.raises(HookMissing) as missing:
        engine_hooks.check(server)
    message = str(missing.value)
    assert f"lacks hook {hook};" in message
    assert "the transport guard cannot run" in message and "~=" in message


class Publishing(socketio.PubSubManager):
    """A message-queue manager that publishes into a list."""

    def __init__(self) -> None:
        super().__init__(channel="test", write_only=True)
        self.published: list = []

    def _publish(self, data) -> None:
        self.published.append(data)


def test_emit_here_keeps_a_split_push_off_the_queue():
    """The hub's `ignore_queue` hook: an emit through it stays in this process."""
    manager = Publishing()
    server = socketio.Server(async_mode="threading", client_manager=manager)
    engine_hooks.emit_here(server, "game", {"id": "g"}, "g:1:p", [])
    assert manager.published == []
    server.emit("game", {"id": "g"}, to="g:1:p")  # the plain emit goes to the queue
    assert len(manager.published) == 1


def test_connections_by_session_maps_each_engineio_session_to_its_connection():
    """The drain's `get_participants` hook: {Engine.IO sid: Socket.IO sid}, this process."""
    server = socketio.Server(async_mode="threading")
    assert engine_hooks.connections_by_session(server) == {}
    first = server.manager.connect("eio-1", "/")
    second = server.manager.connect("eio-2", "/")
    server.manager.connect("eio-3", "/elsewhere")
    assert engine_hooks.connections_by_session(server) == {"eio-1": first, "eio-2": second}
    server.manager.disconnect(first, "/")
    assert engine_hooks.connections_by_session(server) == {"eio-2": second}


def config() -> dict:
    return {"TESTING": True, "SECRET_KEY": SECRET, "TTT_STORE": "memory://"}


@pytest.mark.parametrize("lose", [
    lambda mp: mp.setitem(threading_driver._async, "websocket", None),
    lambda mp: mp.delattr(eio_socket.Socket, "_websocket_handler"),
    lambda mp: mp.delattr(base_manager.BaseManager, "sid_from_eio_sid"),
], ids=["websocket driver", "websocket handler", "manager lookup"])
def test_create_app_refuses_to_build_an_unguarded_server(monkeypatch, lose):
    lose(monkeypatch)
    with pytest.raises(HookMissing, match=r"^ttt: python-(engine|socket)io \S+ lacks hook "):
        create_app(config())


def test_the_server_process_refuses_to_start_unguarded(tmp_path):
    """The gunicorn entry point, with a hook gone: it exits, saying which and what to pin."""
    probe = ("import engineio.socket as s; del s.Socket._websocket_handler; "
             "import ttt.web.wsgi")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=120,
                            env={**os.environ, "TTT_STORE": "memory://",
                                 "TTT_SECRET_KEY": SECRET, "PYTHONPATH": str(ROOT)})
    assert result.returncode != 0
    assert ("HookMissing: ttt: python-engineio 4." in result.stderr
            and "lacks hook Socket._websocket_handler" in result.stderr
            and "pin python-engineio~=" in result.stderr), result.stderr[-2000:]


def test_a_built_app_is_guarded():
    app = create_app(config())
    try:
        eio = app.extensions["ttt_socketio"].server.eio
        assert eio._async["websocket"] is not threading_driver._async["websocket"]
        assert app.extensions["ttt_guard"] is not None
    finally:
        app.extensions["ttt_store"].close()


# --- nobody else touches the libraries' internals -------------------------------------------------

ADAPTER = ROOT / "ttt" / "web" / "transport" / "engine_hooks.py"
#: What engine_hooks.py reaches into, by name, as an attribute or a getattr string.
HOOK_NAMES = ("_async", "_handle_event_internal", "_handle_emit", "_websocket_handler",
              "sockets", "upgrading", "manager_initialized", "get_participants",
              "_handle_connect", "_handle_eio_message")
#: Those, an underscore attribute of anything named like a server, engine, manager or
#: socket, the manager's rooms, a patched disconnect, and the queue-skipping emit keyword.
PRIVATE = re.compile(
    r"(?:\.|[\"'])(?:" + "|".join(HOOK_NAMES) + r")\b"
    r"|\b(?:eio|engine|server|srv|socketio|sio|manager|socket|ws|client_manager)\._[A-Za-z]"
    r"|\bmanager\.rooms\b|\beio\.handlers\b|\bdisconnect\s*=[^=]|\bignore_queue\b"
    r"|getattr\(\s*[\w.]*(?:eio|server|manager|socket)\w*\s*,\s*[\"']_")


def private_uses(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if PRIVATE.search(line.split("#", 1)[0])]


@pytest.mark.parametrize("line", [
    "    server._handle_event_internal = guarded",
    '        original = self.eio._async.get("websocket")',
    "        handlers = self.eio.handlers",
    '            members = server.manager.rooms.get("/", {}).get(push.room, {})',
    "            socket = eio.sockets.pop(sid, None)",
    '    dispatch = getattr(server, "_handle_event_internal", None)',
    "        eio.disconnect = disconnect",
    '            named = {e: s for s, e in server.manager.get_participants("/", None)}',
    '        local = {"ignore_queue": True} if self.shared else {}',
    '            upgrading = bool(getattr(self._socket, "upgrading", False))',
])
def test_the_scan_sees_what_the_old_guard_did(line):
    assert PRIVATE.search(line), line


def test_no_module_but_the_adapter_touches_engineio_or_socketio_internals():
    found = [use for path in sorted((ROOT / "ttt").rglob("*.py")) if path != ADAPTER
             for use in private_uses(path)]
    assert found == [], "\n".join(found)


def test_no_module_but_the_adapter_names_a_private_function_of_the_libraries():
    """python-socketio's and python-engineio's own `_handle_...` functions (a traceback's
    frames are classified by them) are named in the adapter alone."""
    import engineio

    defined = {name for package in (socketio, engineio)
               for source in Path(package.__file__).parent.rglob("*.py")
               for name in re.findall(r"def (_handle_\w+)", source.read_text())}
    assert {"_handle_connect", "_handle_eio_message"} <= defined  # the scan reads them
    named = re.compile(r"\b(?:" + "|".join(sorted(defined)) + r")\b")
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sorted((ROOT / "ttt").rglob("*.py")) if path != ADAPTER
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if named.search(line)]
    assert found == [], "\n".join(found)


# --- a client that does not read (issue 41) -------------------------------------------------------

def test_a_session_whose_unsent_packets_pass_the_bound_is_dropped_once():
    from engineio import packet as eio_packet

    server = socketio.Server(async_mode="threading")
    dropped: list[str] = []
    engine_hooks.bound_unsent(server, 3, dropped.append)
    eio = server.eio
    for sid in ("reader", "sleeper"):  # as Engine.IO opens a session: registered, then told
        eio.sockets[sid] = eio_socket.Socket(eio, sid)
        eio.handlers["connect"](sid, {"REMOTE_ADDR": "127.0.0.1"})
    reader, sleeper = eio.sockets["reader"], eio.sockets["sleeper"]
    for _ in range(10):
        reader.send(eio_packet.Packet(eio_packet.MESSAGE, data="2"))
        reader.poll()  # read as it comes: nothing waits
        sleeper.send(eio_packet.Packet(eio_packet.MESSAGE, data="2"))
    assert dropped == ["sleeper"]
