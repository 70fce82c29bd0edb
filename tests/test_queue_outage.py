"""Issue 31: Redis (store and message queue) away for 30 s mid-game across two processes.

python-socketio's queue listener used to wait up to 60 s between tries (1, 2, 4, ... s), so
a push published after Redis returned but before the other process's listener was back was
lost for good: the other player never saw the move. Now the wait is capped (engine_hooks.
on_queue_recovered) and a process whose listener was cut sends its rooms the current view.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.servers import Remote, Server, close_all, free_port, need_binary

pytestmark = [pytest.mark.server, pytest.mark.redis]

OUTAGE = 30.0


class SavedRedis:
    """A redis-server that keeps its data across a stop (append-only file), on one port."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary, self.workdir, self.port = binary, workdir, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> SavedRedis:
        import redis

        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.BusyLoadingError:
                time.sleep(0.02)
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        client.close()
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def outage(tmp_path):
    redis = SavedRedis(need_binary("redis-server"), tmp_path).start()
    env = {"TTT_STORE": redis.url, "TTT_MESSAGE_QUEUE": redis.url,
           "TTT_SECRET_KEY": "queue-outage"}
    logs = [tmp_path / f"server{i}.log" for i in (1, 2)]
    servers = [Server(env, log=log).start() for log in logs]
    made: list[Remote] = []
    try:
        yield redis, servers, made
    finally:
        close_all(made)
        for server in servers:
            server.stop()
        redis.stop()
    for log in logs:
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]


def test_moves_reach_the_other_process_within_3_s_of_redis_returning(outage):
    redis, (one, two), made = outage
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
    time.sleep(OUTAGE)  # the outage itself
    redis.start()
    back = time.monotonic()

    # Alice moves as soon as her process can write again.
    while True:
        moved = alice.call("move", {"game": game["id"], "cell": 8}, timeout=10)
        if moved["ok"] or moved["error"]["code"] != "unavailable":
            break
        assert time.monotonic() - back < 10, moved
        time.sleep(0.05)
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
