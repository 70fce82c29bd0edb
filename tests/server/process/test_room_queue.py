"""Issue 44: a push goes only to the processes that hold its room (ttt.web.transport.room_queue).

Three real server processes on one Redis (the message queue; the store is one SQLite file
they share, so a Redis restart loses no game): a push reaches a member on another process,
a process holding no member of the room hears none of its pushes (its listener's count,
ttt_queue_messages_received_total, stays put), and after a Redis restart pushes resume
within 3 s. Then the manager alone, two of them on one Redis: a push to one sid reaches its
process only, and a room's channel is left when its last member leaves.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import pytest
import requests
import socketio

from tests.support.servers import RedisServer, Remote, Server, close_all, need_binary
from tests.support.waiting import eventually
from ttt.web.transport.room_queue import RoomQueue

pytestmark = [pytest.mark.server, pytest.mark.redis]

TOKEN = "room-queue-metrics-token"


def heard(server: Any, channel: str) -> float:
    """What this process's queue listener took from Redis on `channel` so far."""
    text = requests.get(server.url + "/metrics", timeout=10,
                        headers={"Authorization": f"Bearer {TOKEN}"}).text
    found = re.search(rf'^ttt_queue_messages_received_total{{channel="{channel}"}} (\S+)$',
                      text, re.M)
    assert found, text[-2000:]
    return float(found[1])

@pytest.fixture(params=["threading", "gevent"])
def three(request, tmp_path):
    """Three `python app.py` (threading) or three `gunicorn -k gevent` (deploy/'s settings)."""
    redis = RedisServer(need_binary("redis-server"), tmp_path)
    env = {"TTT_STORE": f"sqlite:///{tmp_path / 'shared.sqlite3'}",
           "TTT_MESSAGE_QUEUE": redis.url, "TTT_SECRET_KEY": "three-processes",
           "TTT_METRICS_TOKEN": TOKEN, "TTT_RATE_LIMIT": "0", "TTT_AI_WORKERS": "0",
           "TTT_ASYNC_MODE": request.param, "TTT_DRAIN_SECONDS": "1"}
    logs = [tmp_path / f"server{i}.log" for i in (1, 2, 3)]
    servers: list = []
    made: list[Remote] = []
    try:
        for log in logs:
            if request.param == "gevent":
                from tests.support.stack import Gunicorn

                servers.append(Gunicorn(env, log).start())
            else:
                servers.append(Server(env, log=log).start())
        yield redis, servers, made
    finally:
        close_all(made)
        for server in servers:
            server.stop()
        redis.stop()
    for log in logs:
        assert "Traceback" not in log.read_text()


def test_pushes_go_only_where_the_room_is_and_resume_after_a_redis_restart(three):
    redis, (one, two, idle), made = three
    alice, bob, carol = Remote(one.url), Remote(two.url), Remote(idle.url)
    made += [alice, bob, carol]
    game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
    assert bob.call("join", {"game": game["id"]})["you"] == "O"
    alice.wait_for("game", lambda g: g["online"] == {"X": True, "O": True})
    idle_before, two_before = heard(idle, "room"), heard(two, "room")

    script = [(alice, bob, 4), (bob, alice, 0), (alice, bob, 8)]
    for ply, (mover, other, cell) in enumerate(script, start=1):
        assert mover.call("move", {"game": game["id"], "cell": cell})["ok"]
        other.wait_for("game", lambda g, n=ply: g["version"] == n)  # across processes
    assert heard(two, "room") > two_before  # bob's process heard them on the room's channel
    assert heard(idle, "room") == idle_before  # carol's, holding no member, heard none

    redis.stop()
    eventually(lambda: requests.get(two.url + "/healthz", timeout=10).status_code == 503,
               30, "the listener never saw Redis go")
    redis.start()
    back = time.monotonic()
    # Bob moves as soon as his process can again.
    moved = bob.when_writable("move", {"game": game["id"], "cell": 2})
    assert moved["ok"], moved
    alice.wait_for("game", lambda g: g["version"] == 4,
                   timeout=max(0.1, back + 3.0 - time.monotonic()))
    assert alice.call("move", {"game": game["id"], "cell": 6})["ok"]
    bob.wait_for("game", lambda g: g["version"] == 5)
    assert heard(idle, "room") == idle_before


class Recorder(socketio.Server):
    """A Socket.IO server with no Engine.IO sessions: what it would send, recorded."""

    def __init__(self, url: str) -> None:
        super().__init__(async_mode="threading", client_manager=RoomQueue(url))
        self.sent: list[tuple[str, object]] = []
        self.got = threading.Event()

    def _send_eio_packet(self, eio_sid, eio_pkt):  # one EVENT packet: 2["name",data]
        self.sent.append((eio_sid, json.loads(eio_pkt.data[1:])))
        self.got.set()



@pytest.fixture
def two_managers(tmp_path):
    redis = RedisServer(need_binary("redis-server"), tmp_path)
    servers = [Recorder(redis.url), Recorder(redis.url)]
    for server in servers:
        server.manager_initialized = True
        server.manager.initialize()
    try:
        yield servers
    finally:
        for server in servers:
            server.manager.close()  # its listener ends as Redis goes
        redis.stop()


def subscribed(server: Recorder, channel: str) -> bool:
    pubsub = server.manager.pubsub
    names = set(pubsub.shard_channels) | set(pubsub.channels) if pubsub else set()
    return channel.encode() in names


def test_a_push_to_a_sid_reaches_its_process_only_and_a_left_room_is_unsubscribed(
        two_managers):
    a, b = two_managers
    sid = a.manager.connect("eio-a", "/")
    a.manager.enter_room(sid, "/", "g:1")
    room = a.manager.room_channel("/", "g:1")
    eventually(lambda: subscribed(a, room) and subscribed(a, a.manager.room_channel("/", sid)),
               5, "the rooms were not subscribed")
    assert not subscribed(b, room)

    b.emit("game", {"to": "sid"}, to=sid)  # from the other process, to one connection
    assert a.got.wait(5)
    assert a.sent == [("eio-a", ["game", {"to": "sid"}])]
    b.emit("game", {"to": "room"}, room="g:1")
    eventually(lambda: len(a.sent) == 2, 5, "the room push did not arrive")
    assert b.manager.heard["room"] == 0  # b holds nothing: it heard nothing

    a.manager.leave_room(sid, "/", "g:1")
    assert "g:1" not in a.manager.rooms["/"]
    eventually(lambda: not subscribed(a, room), 5, "the left room stayed subscribed")
    b.emit("game", {"to": "nobody"}, room="g:1")
    b.emit("game", {"to": "sid again"}, to=sid)  # after it on one connection: in order
    eventually(lambda: len(a.sent) == 3, 5, "the second sid push did not arrive")
    assert a.sent[-1] == ("eio-a", ["game", {"to": "sid again"}])
    assert a.manager.heard["room"] == 3  # the two sid pushes and the room's one, no more
    a.emit("game", {"to": "local sid"}, to=sid)  # this process's own: never published
    assert len(a.sent) == 4 and a.manager.heard["echo"] == 0


def test_a_push_published_before_the_kind_of_channel_is_known_waits_for_it(tmp_path):
    """The listener connects, then asks Redis's version: a push published in between went
    on a plain channel that no sharded subscriber hears (a bot's `replace` was lost so)."""
    import redis as redis_py

    redis = RedisServer(need_binary("redis-server"), tmp_path)
    manager = RoomQueue(redis.url)
    client = redis_py.Redis.from_url(redis.url)
    listener = client.pubsub(ignore_subscribe_messages=True)
    try:
        listener.ssubscribe(manager.room_channel("/", "g:1"))
        manager.redis, manager.connected = client, True  # the listener's half-made connection
        manager._publish({"method": "emit", "event": "game", "data": [{"v": 1}],
                          "namespace": "/", "room": "g:1", "skip_sid": None,
                          "callback": None, "host_id": manager.host_id})
        deadline = time.monotonic() + 5
        message = None
        while message is None and time.monotonic() < deadline:
            message = listener.get_sharded_message(timeout=0.5)
        assert manager.sharded is True
        assert message is not None and message["type"] == "smessage"
    finally:
        listener.close()
        client.close()
        redis.stop()
