"""Shared fixtures: an app on the memory store, its clients, and a real server process."""

from __future__ import annotations

import random

import pytest

from tests.support.clock import Clock
from tests.support.servers import RedisServer, Remote, Server, close_all, need_binary
from ttt.master.limits import Limits
from ttt.master.presence import MemorySeats, Presence
from ttt.master.table import Table
from ttt.store import open_store
from ttt.web import create_app, get_socketio


@pytest.fixture
def app():
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0})
    yield app
    app.extensions["ttt_table"].thinker.close()  # its worker processes, if it started any
    app.extensions["ttt_store"].close()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def make_player(app):
    """A factory of Socket.IO test clients, each a different player with its own cookie."""
    made = []

    def make(flask_client=None):
        flask_client = flask_client or app.test_client()
        flask_client.get("/")
        sio = get_socketio(app).test_client(app, flask_test_client=flask_client)
        assert sio.is_connected()
        made.append(sio)
        return sio

    yield make
    for sio in made:
        if sio.is_connected():
            sio.disconnect()


@pytest.fixture
def sio(make_player):
    return make_player()


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    """The base URL of a real `python app.py` process on the memory store."""
    log = tmp_path_factory.mktemp("server") / "server.log"
    # Every test client comes from 127.0.0.1: one address must not limit them all.
    server = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "live-test",
                     "TTT_CREATE_RATE": "100000", "TTT_MAX_LIVE_PER_ADDRESS": "100000",
                     "TTT_UNJOINED_PER_ADDRESS": "100000", "TTT_EVENTS_PER_ADDRESS": "0",
                     "TTT_PAGES_PER_ADDRESS": "0",
                     # A departure is told after 1 s, not 5 (PROTOCOL v5's blip).
                     "TTT_BLIP": "1"},
                    log=log).start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def _all_remotes():
    made: list[Remote] = []
    yield made
    close_all(made)  # once, in parallel: each disconnect waits ~3 s for a close frame


@pytest.fixture
def remotes(live_server, _all_remotes):
    """A factory of python-socketio players on the live server, closed at the end of the run."""

    def make(**kwargs) -> Remote:
        remote = Remote(live_server, **kwargs)
        _all_remotes.append(remote)
        return remote

    return make


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server for the whole run (skips off CI when the binary is missing)."""
    binary = need_binary("redis-server")
    server = RedisServer(binary, tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server):
    """The URL of an emptied Redis database."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    client.close()
    return redis_server.url


@pytest.fixture
def stored_game(app):
    """The id of a friend game in the app's store (a live /g/<id> link)."""
    from ttt.game.match import create

    match = create("friend", "alice", 1000.0, game_id="a" * 22)
    app.extensions["ttt_store"].create(match)
    return match.id


# --- the master alone, with a clock that moves only when a test says so ----------------------


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def table(request, clock, tmp_path):
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 't.sqlite3'}"
    store = open_store(url)
    presence = Presence(MemorySeats(clock), clock)
    yield Table(store, presence, clock=clock, rng=random.Random(3),
                limits=Limits(creations_per_minute=0))
    store.close()
