"""Bots on two server processes sharing Redis: streams hear moves made in the other process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.servers import ROOT, Remote, Server, close_all
from tests.support.waiting import eventually
from ttt.bots.rounds import ladder_round
from ttt.bots.sdk import Api, Runner, load_move

pytestmark = [pytest.mark.server, pytest.mark.redis]
MINIMAX = load_move(ROOT / "examples" / "bots" / "minimax.py")
OPERATOR = "the-operators-token-on-both-processes"


def make_bot(store: str, name: str) -> str:
    made = subprocess.run([sys.executable, "-m", "ttt", "bot", "create", name, "--store", store],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                          capture_output=True, check=True)
    return made.stdout.strip()


@pytest.fixture
def two_servers(redis_url, tmp_path):
    env = {"TTT_STORE": redis_url, "TTT_MESSAGE_QUEUE": redis_url,
           "TTT_SECRET_KEY": "shared-by-both-processes", "TTT_OPERATOR_TOKEN": OPERATOR}
    servers = [Server(env, log=tmp_path / f"server{i}.log").start() for i in (1, 2)]
    yield servers, redis_url
    for server in servers:
        server.stop()
    for i in (1, 2):
        assert "Traceback" not in Path(tmp_path / f"server{i}.log").read_text()

def test_two_bots_on_two_processes_challenge_and_play_each_other(two_servers):
    (one, two), store = two_servers
    alpha = Api(one.url, make_bot(store, "alpha"))
    beta = Api(two.url, make_bot(store, "beta"))
    listener = Runner(beta, MINIMAX)
    threading.Thread(target=listener.run, args=(60,), daemon=True).start()
    eventually(lambda: any(b["online"] for b in Api(one.url, "-").call(
        "/api/bots", method="GET")["bots"] if b["name"] == "beta"))
    challenger = Runner(alpha, MINIMAX, schedule=["bot:beta"] * 2, rated=True)
    threading.Thread(target=challenger.run, args=(60,), daemon=True).start()
    eventually(lambda: challenger.tally.games == 2 and listener.tally.games == 2, 60)
    challenger.stop()
    listener.stop()
    assert challenger.tally.draws == listener.tally.draws == 2  # minimax against itself
    rated = {b["name"]: b for b in Api(two.url, "-").call("/api/bots", method="GET")["bots"]}
    assert rated["alpha"]["vs_bots"]["draws"] == rated["beta"]["vs_bots"]["draws"] == 2


def test_a_person_on_one_process_plays_a_bot_streaming_from_the_other(two_servers):
    (one, two), store = two_servers
    bot = Api(one.url, make_bot(store, "minimax"))
    runner = Runner(bot, MINIMAX)
    threading.Thread(target=runner.run, args=(60,), daemon=True).start()
    person = Remote(two.url, connect=False)
    person.sio.connect(two.url, headers={"Cookie": f"session={person.cookie}"},
                       transports=["websocket"], wait_timeout=5, auth={"protocol": 3})
    try:
        game = person.call("new_game", {"mode": "friend", "you": "X"})["game"]
        eventually(lambda: any(b["online"] for b in Api(two.url, "-").call(
            "/api/bots", method="GET")["bots"]))
        given = person.http.post(f"{two.url}/api/game/{game['id']}/opponent",
                                 json={"opponent": "bot:minimax"}, timeout=10)
        assert given.json()["ok"], given.text
        seen = person.wait_for("game", lambda g: g["seats"]["O"] == "human")
        assert seen["names"]["O"] == {"name": "minimax", "bot": True}
        for _ in range(5):
            if seen["status"] != "playing":
                break
            cell = seen["board"].index(".")
            person.call("move", {"game": game["id"], "cell": cell})
            version = seen["version"] + 2
            seen = person.wait_for("game", lambda g, v=version: g["version"] >= v
                                   or g["status"] != "playing", timeout=10)
        assert seen["status"] in ("draw", "won") and seen["winner"] != "X"
    finally:
        runner.stop()
        close_all([person])


def test_a_stream_on_the_other_process_replaces_the_first(two_servers):
    (one, two), store = two_servers
    token = make_bot(store, "wanderer")
    first = Api(one.url, token).stream()
    assert next(first)["type"] == "hello"
    second = Api(two.url, token).stream()
    assert next(second)["type"] == "hello"
    assert list(first) == [{"type": "replaced"}]  # its last line (within a second)
    second.close()


def test_a_ladder_round_on_one_process_among_bots_streaming_from_both(two_servers):
    (one, two), store = two_servers
    runners = [Runner(Api(server.url, make_bot(store, name)), MINIMAX)
               for server, name in ((one, "alpha"), (two, "beta"))]
    for runner in runners:
        threading.Thread(target=runner.run, args=(60,), daemon=True).start()
    ladder = Api(one.url, OPERATOR)
    eventually(lambda: ladder.call("/api/ladder", method="GET")["online"] == ["alpha", "beta"])
    result = ladder_round(one.url, OPERATOR, games=2, timeout=60)
    for runner in runners:
        runner.stop()
    assert result["error"] is None and result["games"] == 2, result
    assert {e["bot"]: e["draws"] for e in result["round"]} == {"alpha": 2, "beta": 2}
    assert [r.tally.draws for r in runners] == [2, 2]  # each stream got and played both
