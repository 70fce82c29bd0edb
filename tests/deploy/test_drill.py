"""Issue 45's drills on a real server: a local AI worker killed, Redis stopped, the store
wiped. Each is seen in /metrics (the matching alert's expression, read from
deploy/alerts.yml, true on a real scrape in time for the alert to fire within 60 s), in
/healthz, and in one log line, not thousands. `make drill` runs this file alone."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest
import requests

from tests.deploy.test_alerts import alerts
from tests.support.servers import ROOT, RedisServer, Remote, Server, need_binary
from tests.support.waiting import eventually

TOKEN = "drill-metrics-token"
HARD = {"mode": "ai", "you": "X", "level": "hard", "variant": "ultimate"}
# An alert with `for: 30s` fires within 60 s when its expression is true at the scrape
# (every 15 s) that follows the fault by at most 30 s minus that interval.
SEEN_WITHIN = 15.0

Sample = tuple[str, dict[str, str], float]


def scrape(server: Server) -> list[Sample]:
    """One scrape, each sample with the labels Prometheus adds (job, instance)."""
    text = requests.get(server.url + "/metrics", timeout=10,
                        headers={"Authorization": f"Bearer {TOKEN}"}).text
    found = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        pairs = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
        found.append((name, {"job": "ttt", "instance": "drill", **pairs}, float(value)))
    return found


MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def _selected(selector: str, samples: list[Sample]) -> list[Sample]:
    name, _, matchers = selector.partition("{")
    tests = MATCHER.findall(matchers)

    def fits(labels: dict[str, str]) -> bool:
        for key, op, want in tests:
            have = labels.get(key, "")
            ok = {"=": have == want, "!=": have != want,
                  "=~": re.fullmatch(want, have) is not None,
                  "!~": re.fullmatch(want, have) is None}[op]
            if not ok:
                return False
        return True

    return [s for s in samples if s[0] == name.strip() and fits(s[1])]


OPS = {"==": float.__eq__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}


def firing(alert: str, now: list[Sample], before: list[Sample] | None = None) -> list[dict]:
    """The series for which `alert`'s expression holds on this scrape (a tiny evaluator for
    the two shapes the drills need: `selector op number`, and `sum by (...) (increase(
    selector[w])) > number` taken between two scrapes). Any other shape is refused."""
    expr = next(rule["expr"] for rule in alerts() if rule["alert"] == alert)
    simple = re.fullmatch(r"(\w+\{[^}]*\})\s*(==|<=|>=|>)\s*([\d.]+)", expr)
    if simple:
        selector, op, number = simple.groups()
        return [labels for _, labels, value in _selected(selector, now)
                if OPS[op](value, float(number))]
    grown = re.fullmatch(r"sum by \(([\w, ]+)\) \(increase\((\w+\{[^}]*\})\[\w+\]\)\)\s*>\s*"
                         r"([\d.]+)", expr)
    assert grown and before is not None, f"{alert}: not a shape this evaluator reads"
    keys, selector, number = grown.groups()
    keys = [k.strip() for k in keys.split(",")]
    sums: dict[tuple, float] = {}
    was = {tuple(sorted(labels.items())): value for _, labels, value in _selected(selector, before)}
    for _, labels, value in _selected(selector, now):
        group = tuple(labels.get(k, "") for k in keys)
        sums[group] = sums.get(group, 0.0) + value - was.get(tuple(sorted(labels.items())), 0.0)
    return [dict(zip(keys, group, strict=True)) for group, grew in sums.items()
            if grew > float(number)]

def log_lines(path, needle: str) -> list[dict]:
    lines = []
    for raw in path.read_text().splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if needle in line.get("message", ""):
            lines.append(line)
    return lines


def worker_pids(server: Server) -> list[int]:
    done = subprocess.run(["pgrep", "-P", str(server.proc.pid), "-f", "ttt.pool.workers"],
                          capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split()]


@pytest.mark.server
@pytest.mark.redis
def test_drills_a_killed_worker_redis_stopped_and_the_store_wiped(tmp_path):
    redis_server = RedisServer(need_binary("redis-server"), tmp_path, saved=True)
    log = tmp_path / "server.log"
    server = Server(env={"TTT_STORE": redis_server.url, "TTT_METRICS_TOKEN": TOKEN,
                         "TTT_LOG_FORMAT": "json", "TTT_AI_WORKERS": "1",
                         "TTT_RATE_LIMIT": "0"}, log=log)
    player = None
    try:
        server.start()
        healthy = scrape(server)
        assert firing("TTTPartDown", healthy) == [] and firing("TTTStoreLostData", healthy) == []
        assert {"where": "local"} in [{"where": s[1]["where"]} for s in healthy
                                      if s[0] == "ttt_ai_workers"]

        # 1. A local AI worker killed (kill -9) between searches.
        player = Remote(server.url)
        game = player.call("new_game", HARD)["game"]
        assert player.call("analyze", {"game": game["id"]})["ok"]
        pid = eventually(lambda: worker_pids(server), 30, "a search process", interval=0.2)[0]
        os.kill(pid, signal.SIGKILL)
        eventually(lambda: [s for s in scrape(server) if s[0] == "ttt_ai_workers"
                            and s[1]["where"] == "local" and s[2] == 0], 10,
                   "ttt_ai_workers{where=local} 0", interval=0.2)
        moved = player.call("move", {"game": game["id"], "cell": 40}, timeout=30)
        assert moved["ok"], moved
        player.wait_for("game", lambda g: len(g["moves"]) >= 2, 60)  # the AI moved: a new one
        restarts = eventually(lambda: [s[2] for s in scrape(server)
                                       if s[0] == "ttt_ai_worker_restarts_total" and s[2]], 10,
                              "a restart counted", interval=0.2)
        assert restarts == [1.0]
        lines = log_lines(log, "starting another")
        assert [line["message"] for line in lines] == [
            f"AI worker {pid} ended (exit -9): starting another"]
        player.close()
        player = None

        # 2. Redis stopped: TTTPartDown's expression on the next scrapes; one log line.
        before = scrape(server)
        mark = len(log.read_bytes())
        redis_server.stop()
        started = time.monotonic()
        down = eventually(lambda: firing("TTTPartDown", scrape(server)), SEEN_WITHIN,
                          "TTTPartDown's expression", interval=0.2)
        print(f"store down seen on a scrape {time.monotonic() - started:.1f} s after Redis "
              "stopped")
        assert down == [{"job": "ttt", "instance": "drill", "part": "store"}]
        for _ in range(20):  # probes keep coming: the log does not follow them
            answer = requests.get(server.url + "/healthz", timeout=10)
            assert answer.status_code == 503 and answer.json()["down"] == ["store"]
        assert firing("TTTStoreErrors", scrape(server), before)  # count_live_by_kind failed
        assert len(log_lines(log, "store down: ")) == 1
        redis_server.start()
        eventually(lambda: not firing("TTTPartDown", scrape(server)), 30, "the store back",
                   interval=0.2)
        back = log_lines(log, "store down: back after")
        assert len(back) == 1 and len(log_lines(log, "store down: ")) == 2
        # The whole outage, every probe and tick through it, in a few lines (each folded
        # warning: its first line and its "back"), not one per call.
        outage = [json.loads(raw) for raw in log.read_bytes()[mark:].decode().splitlines()
                  if raw.startswith("{")]
        warned = [line["message"][:60] for line in outage if line["level"] != "INFO"]
        print(f"{len(warned)} warning lines through the outage: {warned}")
        assert len(warned) <= 12, warned

        # 3. The store wiped (FLUSHDB): TTTStoreLostData at the next scrape, /healthz 503
        # naming the store, one line.
        import redis

        client = redis.Redis.from_url(redis_server.url)
        client.flushdb()
        client.close()
        started = time.monotonic()
        lost = eventually(lambda: firing("TTTStoreLostData", scrape(server)), SEEN_WITHIN,
                          "TTTStoreLostData's expression", interval=0.2)
        print(f"store wiped seen on a scrape {time.monotonic() - started:.1f} s after FLUSHDB")
        assert lost == [{"job": "ttt", "instance": "drill"}]
        assert firing("TTTPartDown", scrape(server))
        answer = requests.get(server.url + "/healthz", timeout=10)
        assert answer.status_code == 503 and answer.json()["down"] == ["store"]
        assert "lost its data" in answer.json()["store"]
        assert len(log_lines(log, "redis store lost its data")) == 1
    finally:
        if player is not None:
            player.close()
        server.stop()
        redis_server.stop()


@pytest.mark.server
def test_drill_a_bug_in_an_event_fires_unhandled_errors(tmp_path):
    """A handler that raises (a bug planted in `resign`): TTTUnhandledErrors' expression
    holds between two real scrapes, by event, and the log has one line per error."""
    log = tmp_path / "server.log"
    server = Server(env={"TTT_METRICS_TOKEN": TOKEN, "TTT_LOG_FORMAT": "json",
                         "TTT_AI_WORKERS": "0", "TTT_STORE": f"sqlite:///{tmp_path}/t.sqlite3"},
                    log=log, script=ROOT / "tests" / "support" / "buggy_app.py")
    player = None
    try:
        server.start()
        before = scrape(server)
        assert any(s[0] == "ttt_unhandled_errors_total" and s[1]["where"] == "resign"
                   and s[2] == 0 for s in before)  # at zero from start-up
        assert firing("TTTUnhandledErrors", before, before) == []
        player = Remote(server.url)
        game = player.call("new_game", {"mode": "local"})["game"]
        answer = player.call("resign", {"game": game["id"]})
        assert answer["ok"] is False and answer["error"]["code"] == "internal"
        assert firing("TTTUnhandledErrors", scrape(server), before) == [{"where": "resign"}]
        assert len(log_lines(log, "event resign failed")) == 1
    finally:
        if player is not None:
            player.close()
        server.stop()


@pytest.mark.server
def test_drill_a_sqlite_file_deleted_under_the_server_is_the_store_lost(tmp_path):
    """`rm` of the live SQLite file: the process reads on through its open descriptors, so a
    plain query said healthy. TTTStoreLostData's expression holds at the next scrape."""
    log = tmp_path / "server.log"
    path = tmp_path / "ttt.sqlite3"
    server = Server(env={"TTT_METRICS_TOKEN": TOKEN, "TTT_LOG_FORMAT": "json",
                         "TTT_AI_WORKERS": "0", "TTT_STORE": f"sqlite:///{path}"}, log=log)
    try:
        server.start()
        assert firing("TTTStoreLostData", scrape(server)) == []
        for suffix in ("", "-wal", "-shm"):
            (tmp_path / f"ttt.sqlite3{suffix}").unlink(missing_ok=True)
        lost = eventually(lambda: firing("TTTStoreLostData", scrape(server)), SEEN_WITHIN,
                          "TTTStoreLostData's expression", interval=0.2)
        assert lost == [{"job": "ttt", "instance": "drill"}]
        answer = requests.get(server.url + "/healthz", timeout=10)
        assert answer.status_code == 503 and answer.json()["down"] == ["store"]
        assert len(log_lines(log, "sqlite store lost its data")) == 1
    finally:
        server.stop()
