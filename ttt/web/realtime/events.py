"""Socket.IO adapters: each event asks the table and emits what it says. No game rule here."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from flask import current_app, request, session
from flask_socketio import SocketIO, join_room

from ttt.bots import v3_answer
from ttt.master.replies import player_room, refusal
from ttt.master.table import Table
from ttt.runtime import loglines
from ttt.store import StoreUnavailable
from ttt.web.ops.metrics import refused_connection, unhandled
from ttt.web.realtime.publisher import Publisher
from ttt.web.transport.admission import address_of
from ttt.web.transport.budgets import Budgets

log = logging.getLogger("ttt.events")
PRESENCE_NOT_UPDATED = loglines.Fold(log, "presence not updated on disconnect")


def client_address(trusted: frozenset[str]) -> str:
    """The client's address: X-Forwarded-For is believed only from a trusted proxy."""
    return address_of(request.environ, trusted)


def _show(server: Any, sid: str, target: str) -> None:
    """Put this connection in the room of the game and role it now shows, and no other game's."""
    for joined in server.rooms(sid, namespace="/"):
        if joined.startswith("g:") and joined != target:
            server.leave_room(sid, joined, namespace="/")
    server.enter_room(sid, target, namespace="/")


def register(socketio: SocketIO, table: Table, publisher: Publisher, config: Any,
             watch: Callable[[str, Callable], Callable] | None = None,
             budgets: Budgets | None = None) -> None:
    """Attach every event handler to this SocketIO object (`config`: the app's, read live;
    `watch(name, handler)`: the handler measured, logged and drained, ttt.web.transport.drain;
    `budgets`: the events' budget per address prefix, ttt.web.transport.budgets; every push
    leaves by `publisher`, its bodies built inside the guarded section)."""
    server = socketio.server

    def versioned(sid: str, answer: dict) -> dict:
        """The answer in the sender's protocol: version 3 marks a bot's name."""
        conn = table.presence.connection(sid)
        return v3_answer(answer) if conn is not None and conn.protocol >= 3 else answer

    def run(name: str, sid: str, payload: Any) -> dict:
        """One event of a connection, through the table: its pushes sent, its answer made."""
        if not table.presence.take_token(sid, config["TTT_RATE_LIMIT"]):
            return refusal("rate_limited", "slow down")
        if budgets is not None and budgets.events:  # the address prefix's, all cookies
            conn = table.presence.connection(sid)
            if conn is not None and not budgets.event(conn.origin, name, bool(conn.seats)):
                return refusal("rate_limited", "too many events from your address: slow down")
        step = functools.partial(table.handle, name, sid, payload)
        while True:
            try:
                reply = step()
                if reply.show:
                    _show(server, sid, reply.show)
                ready = publisher.prepare(reply.pushes, sid)  # bodies may read the store
            except StoreUnavailable:
                return refusal("unavailable", "the game store is unavailable; retrying")
            except Exception:  # a bug: say so once in the log, never drop the connection
                log.exception("event %s failed", name)
                unhandled(name)
                return refusal("internal", "something went wrong on the server")
            publisher.send(ready)
            if reply.then is None:
                return versioned(sid, reply.answer)
            step = reply.then  # e.g. the AI thinks: the pushes above show the move first

    def adapter(name: str):
        # Registered on python-socketio itself, not through Flask-SocketIO: a game event needs
        # no Flask request context or session copy (the player is known by the sid since the
        # connect), and building them was a noticeable part of each event's server time.
        def handler(sid: str, payload: Any = None, *_: Any) -> dict:
            return run(name, sid, payload)

        return handler

    for name in Table.EVENTS:
        handler = adapter(name)
        server.on(name, watch(name, handler) if watch else handler, namespace="/")
    _register_connections(socketio, table, publisher, functools.partial(run, "join"),
                          functools.partial(run, "new_game"))


def _ridden(auth: dict, sid: str, join: Callable[[str, Any], dict],
            start: Callable[[str, Any], dict]) -> dict:
    """The answer of the join a version 5 connect carries; when it finds no game and the
    connect asked for one (`start`, a new_game's payload), that new game's answer instead."""
    game = auth["game"]
    payload = {} if game is None else {"game": game}
    if game is not None and auth.get("watch") is True:
        payload["watch"] = True  # a watch link's connect never takes a seat
    answer = join(sid, payload)
    if game is None and isinstance(auth.get("start"), dict) and answer.get("ok") \
            and answer.get("game") is None:
        started = start(sid, {**auth["start"], "from": None})
        if started.get("ok"):
            return {**started, "started": True}
    return answer


def _register_connections(socketio: SocketIO, table: Table, publisher: Publisher,
                          join: Callable[[str, Any], dict],
                          start: Callable[[str, Any], dict]) -> None:
    """The connect and disconnect handlers (`join(sid, payload)`: the join event, answered;
    `start`: the new_game event, answered).

    python-socketio does not reserve the names "connect" and "disconnect": a client can emit
    events so named and reach these handlers. Each checks that the call is the real one, so
    nobody can fake going offline (to be claimed against) or refill a rate limit.
    """

    @socketio.on("connect")
    def on_connect(auth: Any = None, *_: Any) -> bool | None:
        if table.presence.connection(request.sid) is not None:
            return None  # an event named "connect" from a connected client: ignore it
        player = session.get("pid")
        config = current_app.config
        address = client_address(config["TTT_TRUSTED_PROXIES"])
        if not isinstance(player, str):
            refused_connection("session")
            return False  # no session cookie: open the page first
        if not table.connect(request.sid, player, address):
            refused_connection("player")
            return False  # too many tabs of this player (or addresses)
        join_room(player_room(player))
        protocol = auth.get("protocol") if isinstance(auth, dict) else None
        if protocol in (3, 5):  # `auth: {"protocol": 3}` or 5; any other: version 2 answers
            table.presence.connection(request.sid).protocol = protocol
        if protocol == 5 and "game" in auth:
            # The join rides the connect (PROTOCOL v5): the answer `join` would give, sent
            # before the connect's own packet (a client keeps events until it is connected),
            # to this connection only, never through the queue (it is here).
            publisher.here("joined", _ridden(auth, request.sid, join, start), request.sid)
        return True

    @socketio.on("disconnect")
    def on_disconnect(*_: Any) -> None:
        if socketio.server.manager.is_connected(request.sid, "/"):
            return  # an event named "disconnect" from a live connection: ignore it
        try:
            publisher.publish(table.disconnect(request.sid))
        except StoreUnavailable as error:  # the seat lease lapses by itself
            PRESENCE_NOT_UPDATED.failed(error)  # once, then a line a minute, then "back"
        else:
            PRESENCE_NOT_UPDATED.ok()
