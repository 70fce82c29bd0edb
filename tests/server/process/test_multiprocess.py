"""Two server processes sharing Redis (store and message queue), on loopback."""

import random
import threading

import pytest

from tests.support.servers import Remote, Server, close_all
from tests.support.waiting import eventually

pytestmark = [pytest.mark.server, pytest.mark.redis]


@pytest.fixture
def two_servers(redis_url, tmp_path):
    env = {"TTT_STORE": redis_url, "TTT_MESSAGE_QUEUE": redis_url,
           "TTT_SECRET_KEY": "shared-by-both-processes"}
    servers = [Server(env, log=tmp_path / f"server{i}.log").start() for i in (1, 2)]
    made: list[Remote] = []

    def remote(server, **kwargs):
        made.append(Remote(server.url, **kwargs))
        return made[-1]

    yield servers, remote
    close_all(made)
    for server in servers:
        server.stop()
    for i in (1, 2):
        assert "Traceback" not in (tmp_path / f"server{i}.log").read_text()


def test_players_on_two_processes_play_a_friend_game_through(two_servers):
    (one, two), remote = two_servers
    alice, bob = remote(one), remote(two)
    game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
    assert bob.call("join", {"game": game["id"]})["you"] == "O"
    alice.wait_for("game", lambda g: g["online"] == {"X": True, "O": True})
    script = [(alice, bob, 0), (bob, alice, 4), (alice, bob, 1), (bob, alice, 2),
              (alice, bob, 6), (bob, alice, 3), (alice, bob, 5), (bob, alice, 8),
              (alice, bob, 7)]
    for ply, (mover, watcher, cell) in enumerate(script, start=1):
        assert mover.call("move", {"game": game["id"], "cell": cell})["ok"]
        seen = watcher.wait_for("game", lambda g, n=ply: g["version"] == n)
        assert seen["moves"][-1] == cell
    assert seen["status"] == "draw"


def race(tab1: Remote, tab2: Remote, game_id: str) -> dict:
    """Both tabs send a different move for version 0 at the same moment."""
    barrier = threading.Barrier(2)
    answers: dict = {}

    def send(tab, cell, key):
        barrier.wait()
        answers[key] = tab.call("move", {"game": game_id, "cell": cell, "version": 0})

    threads = [threading.Thread(target=send, args=(tab1, 0, 1)),
               threading.Thread(target=send, args=(tab2, 8, 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return answers


def test_two_tabs_on_two_processes_racing_for_one_turn_land_exactly_once(two_servers):
    (one, two), remote = two_servers
    tab1 = remote(one)
    tab2 = remote(two, cookie=tab1.cookie)
    for _ in range(5):
        game = tab1.call("new_game", {"mode": "local"})["game"]
        answers = race(tab1, tab2, game["id"])
        landed = [a for a in answers.values() if a["ok"]]
        refused = [a["error"]["code"] for a in answers.values() if not a["ok"]]
        assert len(landed) == 1 and refused == ["stale"], answers
        final = tab1.call("join", {"game": game["id"]})["game"]
        assert final["version"] == 1 and final["moves"] == landed[0]["game"]["moves"]


def test_a_killed_process_loses_nothing_its_player_resumes_on_the_other(two_servers):
    (one, two), remote = two_servers
    alice = remote(one)
    rng = random.Random(11)
    game = alice.call("new_game", {"mode": "ai", "you": "X", "level": "perfect"})["game"]
    while game["status"] == "playing":
        empty = [i for i, c in enumerate(game["board"]) if c == "."]
        game = alice.call("move", {"game": game["id"], "cell": rng.choice(empty)})["game"]
    live = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
    bob = remote(two)
    bob.call("join", {"game": live["id"]})
    live = alice.call("move", {"game": live["id"], "cell": 4})["game"]
    record = alice.call("join", {})["record"]
    assert sum(record["perfect"].values()) == 1

    one.kill()
    resumed = remote(two, cookie=alice.cookie)
    answer = resumed.call("join", {})
    assert answer["game"]["id"] == live["id"] and answer["game"]["moves"] == [4]
    assert answer["you"] == "X" and answer["record"] == record
    assert bob.call("move", {"game": live["id"], "cell": 0})["ok"]
    resumed.wait_for("game", lambda g: g["version"] == 2)
    assert resumed.call("move", {"game": live["id"], "cell": 8})["ok"]


def test_redis_outage_fails_health_and_recovers_on_its_own(tmp_path):
    import requests

    from tests.support.servers import RedisServer, need_binary

    binary = need_binary("redis-server")
    # An outage, not a loss: a Redis that comes back empty is a store that lost its data,
    # and stays 503 until restored (issue 45, tests/deploy/test_drill.py).
    redis = RedisServer(binary, tmp_path, saved=True)
    url = redis.url
    server = Server({"TTT_STORE": url, "TTT_MESSAGE_QUEUE": url, "TTT_SECRET_KEY": "outage"},
                    log=tmp_path / "server.log").start()
    player = Remote(server.url)
    try:
        game = player.call("new_game", {"mode": "local"})["game"]
        redis.stop()
        health = requests.get(server.url + "/healthz", timeout=10)
        assert health.status_code == 503 and health.json()["ok"] is False
        refused = player.call("move", {"game": game["id"], "cell": 0}, timeout=15)
        assert refused["error"]["code"] == "unavailable"
        redis.start()  # its data back from its append-only file
        # The queue listener tries again every 0.5 s at most.
        eventually(lambda: requests.get(server.url + "/healthz", timeout=10).status_code == 200,
                   5, "not healthy again")
        again = player.call("new_game", {"mode": "local"})
        assert again["ok"] and player.call("move", {"game": again["game"]["id"], "cell": 4})["ok"]
    finally:
        close_all([player])
        server.stop()
        redis.stop()


def test_a_timed_game_ends_once_with_the_clock_running_in_both_processes(two_servers):
    (one, two), remote = two_servers
    alice, bob, carol = remote(one), remote(two), remote(two)
    game = alice.call("new_game", {"mode": "friend", "you": "X", "clock": 10})["game"]
    assert bob.call("join", {"game": game["id"]})["game"]["time_left"] > 9
    carol.call("join", {"game": game["id"]})
    assert alice.call("move", {"game": game["id"], "cell": 4})["ok"]
    assert bob.call("move", {"game": game["id"], "cell": 0})["ok"]
    assert alice.call("move", {"game": game["id"], "cell": 8})["ok"]  # O's clock now runs
    ended = {}
    for who in (alice, bob, carol):  # nobody sends anything: a process ends it
        ended[id(who)] = who.wait_for("game", lambda g: g["status"] == "won", timeout=25)
        assert ended[id(who)]["reason"] == "time" and ended[id(who)]["winner"] == "X"
    # A later push that every client sees: by then any second ending would have arrived.
    assert alice.call("react", {"game": game["id"], "reaction": "gg"})["ok"]
    for who in (alice, bob, carol):
        who.wait_for("reaction", lambda r: r["reaction"] == "gg")
        assert len([g for g in who.pushed("game") if g["status"] == "won"]) == 1
    final = bob.call("join", {"game": game["id"]})["game"]
    assert final["moves"] == [4, 0, 8] and final["reason"] == "time"
