"""Issue 31: Redis (store and message queue) away mid-game across two processes.

python-socketio's queue listener used to wait up to 60 s between tries (1, 2, 4, ... s), so
a push published after Redis returned but before the other process's listener was back was
lost for good: the other player never saw the move. Now the wait is capped (engine_hooks.
on_queue_recovered) and a process whose listener was cut sends its rooms the current view.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time

import pytest
import requests

from tests.support.servers import RedisServer, Remote, Server, close_all, need_binary
from tests.support.waiting import eventually

pytestmark = [pytest.mark.server, pytest.mark.redis]

# How long Redis stays away once both processes' listeners have seen it go. Longer than X's
# 10 s clock (the shortest a game may have, no setting): an outage charged to her would end
# her game on time. And long enough that python-socketio's own back-off (1, 2, 4, 8 s ...,
# which the product caps at 0.5 s: QUEUE_RETRY_CAP, a constant) would try again well after
# the 3 s the test allows: the cap is what is measured here.
OUTAGE = 11.0
CUT = "message queue listener cut"  # each process's line when its listener loses Redis


def listeners_cut(logs) -> bool:
    return all(CUT in log.read_text() for log in logs)


@pytest.fixture
def outage(tmp_path):
    redis = RedisServer(need_binary("redis-server"), tmp_path, saved=True)
    env = {"TTT_STORE": redis.url, "TTT_MESSAGE_QUEUE": redis.url,
           "TTT_SECRET_KEY": "queue-outage"}
    logs = [tmp_path / f"server{i}.log" for i in (1, 2)]
    servers = [Server(env, log=log).start() for log in logs]
    made: list[Remote] = []
    try:
        yield redis, servers, made, logs
    finally:
        close_all(made)
        for server in servers:
            server.stop()
        redis.stop()
    for log in logs:
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]


def test_moves_reach_the_other_process_within_3_s_of_redis_returning(outage):
    redis, (one, two), made, logs = outage
    alice, bob = Remote(one.url), Remote(two.url)
    made += [alice, bob]
    game = alice.call("new_game", {"mode": "friend", "you": "X", "clock": 10})["game"]
    assert bob.call("join", {"game": game["id"]})["you"] == "O"
    assert alice.call("move", {"game": game["id"], "cell": 4})["ok"]
    bob.wait_for("game", lambda g: g["version"] == 1)
    assert bob.call("move", {"game": game["id"], "cell": 0})["ok"]
    alice.wait_for("game", lambda g: g["version"] == 2)  # X (alice) on move, her clock runs

    redis.stop()
    down = requests.get(two.url + "/healthz", timeout=10)
    assert down.status_code == 503 and "queue" in down.json()["down"]
    eventually(lambda: listeners_cut(logs), 30, "both processes' queue listeners cut")
    time.sleep(OUTAGE)  # the outage itself: its length is the behaviour (see OUTAGE)
    redis.start()
    back = time.monotonic()

    # Alice moves as soon as her process can write again.
    moved = alice.when_writable("move", {"game": game["id"], "cell": 8})
    assert moved["ok"], moved
    # No clock was charged for the outage: X still had (nearly) her 10 s.
    assert moved["game"]["status"] == "playing"
    # Within 3 s of Redis's return, Bob (the other process) has every move.
    seen = bob.wait_for("game", lambda g: g["version"] == 3,
                        timeout=max(0.1, back + 3.0 - time.monotonic()))
    assert seen["moves"] == [4, 0, 8] and seen["status"] == "playing"
    assert seen["time_left"] > 5, seen  # O's clock starts fresh at X's move
    healthy = requests.get(two.url + "/healthz", timeout=10)
    assert healthy.status_code == 200, healthy.text


def test_a_bot_stream_gets_the_move_made_while_its_process_was_cut(tmp_path):
    """The store is a SQLite file both processes share; only the queue (Redis) goes away.
    A person's move made meanwhile is published to nobody: the bot streaming from the other
    process gets it as a `game` line within 3 s of Redis's return (its process resends)."""
    binary = need_binary("redis-server")
    redis = RedisServer(binary, tmp_path)
    env = {"TTT_STORE": f"sqlite:///{tmp_path / 'shared.sqlite3'}",
           "TTT_MESSAGE_QUEUE": redis.url, "TTT_SECRET_KEY": "queue-outage-bots",
           "TTT_BOT_CREATE_RATE": "1000"}
    logs = [tmp_path / f"server{i}.log" for i in (1, 2)]
    one, two = (Server(env, log=log).start() for log in logs)
    carol: Remote | None = None
    try:
        maker = requests.Session()
        maker.get(one.url + "/", timeout=10).raise_for_status()
        made = maker.post(one.url + "/api/bots", json={"name": "cutbot"}, timeout=10)
        assert made.status_code == 200, made.text
        bot = {"Authorization": f"Bearer {made.json()['token']}"}
        lines: list[dict] = []
        stream = requests.get(two.url + "/api/bot/stream", headers=bot, stream=True,
                              timeout=60)

        def read() -> None:
            with contextlib.suppress(requests.RequestException):
                for line in stream.iter_lines():
                    if line:
                        lines.append(json.loads(line))

        threading.Thread(target=read, daemon=True).start()

        def bot_saw(moves: list[int], deadline: float) -> dict:
            return eventually(lambda: next((line["game"] for line in list(lines)
                                            if line.get("type") == "game"
                                            and line["game"]["moves"] == moves), None),
                              max(0.1, deadline - time.monotonic()),
                              lambda: f"the bot never saw {moves}: {lines[-3:]}", interval=0.02)

        carol = Remote(one.url)
        game = carol.call("new_game", {"mode": "friend", "you": "X"})["game"]
        seated = carol.http.post(f"{one.url}/api/game/{game['id']}/opponent",
                                 json={"opponent": "bot:cutbot"}, timeout=10)
        assert seated.status_code == 200, seated.text
        assert carol.call("move", {"game": game["id"], "cell": 4})["ok"]
        bot_saw([4], time.monotonic() + 10)
        moved = requests.post(f"{two.url}/api/bot/game/{game['id']}/move", headers=bot,
                              json={"cell": 0}, timeout=10)
        assert moved.json()["ok"], moved.text
        carol.wait_for("game", lambda g: g["version"] == 2)

        redis.stop()
        during = carol.call("move", {"game": game["id"], "cell": 8}, timeout=15)
        # The outage lasts until both processes' listeners have lost Redis (a state).
        eventually(lambda: listeners_cut(logs), 30, "both processes' queue listeners cut")
        redis = RedisServer(binary, tmp_path, port=redis.port)
        back = time.monotonic()
        # Answered `unavailable` (shared presence is on the queue's Redis), the move may
        # still have landed in the store (see the note of issue 31): then its push was
        # lost too. Either way, once Redis is back X's 8 is on the board.
        while not during["ok"]:
            assert during["error"]["code"] in ("unavailable", "not_your_turn"), during
            assert time.monotonic() - back < 10, during
            if during["error"]["code"] == "not_your_turn":
                break
            during = carol.call("move", {"game": game["id"], "cell": 8}, timeout=10)
        seen = bot_saw([4, 0, 8], back + 3.0)
        assert seen["you"] == "O" and "move" in seen["can"]
    finally:
        if carol is not None:
            close_all([carol])
        one.stop()
        two.stop()
        redis.stop()
    for log in logs:
        assert "Traceback" not in log.read_text()
