"""Clocks are fair across outages: a real server killed (or its Redis paused) for longer
than the side on move had left, then back: that side has not lost on time, and has about the
time it had."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import time

import pytest
import redis

from tests.support.servers import Remote, Server, close_all
from tests.support.waiting import eventually
from ttt.store.redis_keys import BEAT

pytestmark = pytest.mark.server

CLOCK = 10  # seconds a move: the outage below lasts longer than that


def env_for(kind: str, tmp_path, request) -> dict[str, str]:
    if kind == "sqlite":
        store = f"sqlite:///{tmp_path / 'games.sqlite3'}"
        return {"TTT_STORE": store, "TTT_SECRET_KEY": "restart-clocks"}
    url = request.getfixturevalue("redis_url")
    return {"TTT_STORE": url, "TTT_MESSAGE_QUEUE": url, "TTT_SECRET_KEY": "restart-clocks"}


def o_on_move(alice: Remote, bob: Remote) -> tuple[str, float, float]:
    """A timed friend game past both first moves with O (Bob) on move: (id, the time left
    to O as the last answer said, when that answer came)."""
    game = alice.call("new_game", {"mode": "friend", "you": "X", "clock": CLOCK})["game"]
    assert bob.call("join", {"game": game["id"]})["you"] == "O"
    assert alice.call("move", {"game": game["id"], "cell": 4})["ok"]
    assert bob.call("move", {"game": game["id"], "cell": 0})["ok"]
    answer = alice.call("move", {"game": game["id"], "cell": 8})
    seen = time.monotonic()
    assert answer["ok"] and answer["game"]["turn"] == "O"
    return game["id"], answer["game"]["time_left"], seen


def stamped_since(store: str, moment: float) -> bool:
    """Whether a clock loop has stamped the store as up (its beat, wall time) after `moment`."""
    if store.startswith("sqlite:///"):
        uri = f"file:{store.removeprefix('sqlite:///')}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            row = db.execute("SELECT at FROM beats WHERE name = 'up'").fetchone()
        at = row[0] if row else None
    else:
        client = redis.Redis.from_url(store)
        try:
            at = client.get(BEAT)
        finally:
            client.close()
    return at is not None and float(at) > moment


def stamped_after_the_last_move(env: dict[str, str]) -> None:
    """Wait until the clock loop (once a second, server up) has stamped the store after the
    move just answered: the outage that follows is then counted from a stamp that knows it."""
    moved = time.time()
    eventually(lambda: stamped_since(env["TTT_STORE"], moved), 15, "the clock loop's stamp")


def wait_past(moment: float, seconds: float) -> None:
    """Let `seconds` pass since `moment`: the outage itself, what these tests are about. Its
    length is the product's own timer: longer than the side on move had (CLOCK, the shortest
    clock a game may have, no setting) and than the gap after which clocks get an outage
    back (5 s)."""
    time.sleep(max(0.0, moment + seconds - time.monotonic()))


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_server_killed_longer_than_the_time_left_charges_nobody(kind, tmp_path, request):
    env = env_for(kind, tmp_path, request)
    log = tmp_path / "server.log"
    server = Server(env, log=log).start()
    made: list[Remote] = []
    try:
        alice, bob = Remote(server.url), Remote(server.url)
        made += [alice, bob]
        gid, left, seen = o_on_move(alice, bob)
        stamped_after_the_last_move(env)
        server.kill()
        killed = time.monotonic()
        had = left - (killed - seen)  # what O had when the server died
        close_all(made)
        wait_past(killed, CLOCK + 3)  # down for longer than O had
        restarted = time.monotonic()
        server = Server(env, port=server.port, log=log).start()
        alice, bob = Remote(server.url, cookie=alice.cookie), Remote(server.url, cookie=bob.cookie)
        made += [alice, bob]
        game = bob.call("join", {"game": gid})["game"]
        up_for = time.monotonic() - restarted  # at most this long since the clocks resumed
        assert game["status"] == "playing" and game["turn"] == "O", game
        assert had - up_for - 0.5 <= game["time_left"] <= had + 1.5, (had, up_for, game)
        # The clock runs again from there: nobody moves, and O loses on time, once.
        alice.call("join", {"game": gid})
        ended = alice.wait_for("game", lambda g: g["status"] != "playing",
                               timeout=game["time_left"] + 10)
        assert ended["reason"] == "time" and ended["winner"] == "X"
    finally:
        close_all(made)
        server.stop()
    assert "Traceback" not in log.read_text()


@pytest.mark.redis
def test_a_paused_redis_charges_nobody_for_the_time_it_was_away(tmp_path, redis_server,
                                                                redis_url):
    """The server stays up but its store does not answer: that time is not charged either."""
    env = {"TTT_STORE": redis_url, "TTT_SECRET_KEY": "paused-redis"}
    log = tmp_path / "server.log"
    server = Server(env, log=log).start()
    made: list[Remote] = []
    paused = False
    try:
        alice, bob = Remote(server.url), Remote(server.url)
        made += [alice, bob]
        gid, left, seen = o_on_move(alice, bob)
        stamped_after_the_last_move(env)  # stamped while the store answers
        os.kill(redis_server.proc.pid, signal.SIGSTOP)
        paused, stopped = True, time.monotonic()
        had = left - (stopped - seen)
        wait_past(stopped, CLOCK + 3)
        os.kill(redis_server.proc.pid, signal.SIGCONT)
        paused, back = False, time.monotonic()
        game = bob.wait_until("join", {"game": gid}, lambda a: a.get("ok"), timeout=30)["game"]
        up_for = time.monotonic() - back
        assert game["status"] == "playing" and game["turn"] == "O", game
        assert game["time_left"] <= had + 1.5, (had, game)
        assert game["time_left"] >= had - up_for - 0.5, (had, up_for, game)
        assert bob.call("move", {"game": gid, "cell": 2})["ok"]
    finally:
        if paused:
            os.kill(redis_server.proc.pid, signal.SIGCONT)
        close_all(made)
        server.stop()
