"""The AI off the serving loop, end to end: through the app, real servers, gevent and the queue."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests

from tests.server.process.test_security import Gunicorn, need_module
from tests.support.servers import ROOT, Log, Remotes, Server
from tests.support.waiting import eventually
from ttt.master.limits import Limits
from ttt.master.presence import MemorySeats, Presence
from ttt.master.table import Table
from ttt.pool.thinker import Scheduler, search
from ttt.pool.workers import queue_name
from ttt.store import open_store
from ttt.web import create_app, get_socketio, get_table

HARD = {"mode": "ai", "you": "X", "level": "hard", "variant": "ultimate"}

class Held:
    """A worker the test releases one search at a time; each runs the real search, briefly."""

    def __init__(self) -> None:
        self.started = threading.Semaphore(0)
        self.go = threading.Semaphore(0)

    def run(self, task: dict, seconds: float):
        self.started.release()
        assert self.go.acquire(timeout=60)
        return search(task, 0.05)

    def close(self) -> None:
        pass


@pytest.fixture
def pooled():
    """An app whose searches run in a real worker process (memory store)."""
    app = create_app({"TESTING": True, "SECRET_KEY": "t", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0, "TTT_AI_WORKERS": 1})
    yield app
    get_table(app).thinker.close()


def player(app):
    client = app.test_client()
    client.get("/")
    sio = get_socketio(app).test_client(app, flask_test_client=client)
    assert sio.is_connected()
    return sio


def call(sio, event, **payload):
    return sio.emit(event, payload, callback=True)


def pushed_games(sio, received: list):
    received += [m["args"][0] for m in sio.get_received() if m["name"] == "game"]
    return received


def test_an_ultimate_move_is_answered_at_once_and_the_ais_reply_pushed(pooled):
    ana = player(pooled)
    game = call(ana, "new_game", **HARD)["game"]
    assert game["budget"] == 1.2  # the hard level's full time, nobody waiting
    answer = call(ana, "move", game=game["id"], cell=40)
    assert answer["ok"] and answer["game"]["moves"][0] == 40
    seen: list = []
    reply = eventually(lambda: next((g for g in pushed_games(ana, seen)
                                     if len(g["moves"]) == 2), None), 60, message="the AI's reply")
    assert reply["turn"] == "X" and reply["moves"][1] // 9 == 4 and reply["legal"]
    assert reply["rev"] > answer["game"]["rev"]


def test_a_full_queue_answers_busy_to_evaluations_and_still_takes_moves(pooled):
    table = get_table(pooled)
    held = Held()
    table.thinker = Scheduler([held], max_queue=1, per_address=1)
    table.answer_wait = 0.2
    ana, ben, cid = player(pooled), player(pooled), player(pooled)
    first = call(ana, "new_game", **HARD)["game"]
    assert call(ana, "move", game=first["id"], cell=40)["ok"]
    assert held.started.acquire(timeout=30)  # ana's AI search holds the only worker
    second = call(ben, "new_game", **{**HARD, "level": "easy"})["game"]
    moved = call(ben, "move", game=second["id"], cell=0)  # queued behind ana's: accepted
    assert moved["ok"] and moved["game"]["moves"] == [0] and moved["game"]["turn"] == "O"
    third = call(cid, "new_game", mode="local", variant="ultimate")["game"]
    call(cid, "move", game=third["id"], cell=10)
    assert call(cid, "analyze", game=third["id"])["error"]["code"] == "busy"  # queue full
    assert call(cid, "hint", game=third["id"])["error"]["code"] == "busy"
    assert table.store.get(third["id"]).hints == {"X": 0, "O": 0}  # a refused hint: uncounted
    held.go.release()
    held.go.release()  # ana's, then ben's
    seen: list = []
    reply = eventually(lambda: next((g for g in pushed_games(ben, seen)
                                     if g["id"] == second["id"] and len(g["moves"]) == 2),
                                    None), 60, message="ben's AI reply")
    assert reply["turn"] == "X"
    held.go.release()  # the evaluation now gets a worker: once found, it is cached
    eventually(lambda: call(cid, "analyze", game=third["id"]).get("ok"), 60, message="an analysis")
    searches = table.thinker.searches
    hinted = call(cid, "hint", game=third["id"])
    assert hinted["ok"] and hinted["best"] and table.thinker.searches == searches  # cached


def test_joining_while_the_ai_thinks_shares_its_search(pooled):
    table = get_table(pooled)
    held = Held()
    table.thinker = Scheduler([held])
    ana = player(pooled)
    game = call(ana, "new_game", **HARD)["game"]
    call(ana, "move", game=game["id"], cell=40)
    assert held.started.acquire(timeout=30)
    for _ in range(3):  # a reload, another tab, a reconnect: no second search
        joined = call(ana, "join", game=game["id"])
        assert joined["ok"] and joined["game"]["turn"] == "O"
    held.go.release()
    seen: list = []
    eventually(lambda: any(len(g["moves"]) == 2 for g in pushed_games(ana, seen)), 60,
               message="the AI's reply")
    # A second search would be queued or held on the worker now (Held never lets it end).
    eventually(lambda: not table.thinker._by_key, 60, message="the search done with")
    assert table.thinker.searches == 1
    assert table.thinker._queued == 0 and not table.thinker._running
    assert len(table.store.get(game["id"]).moves) == 2


def test_a_repeated_analysis_costs_no_second_search(pooled):
    ana = player(pooled)
    game = call(ana, "new_game", mode="local", variant="ultimate")["game"]
    call(ana, "move", game=game["id"], cell=40)
    first = call(ana, "analyze", game=game["id"])
    assert first["ok"] and first["analysis"]["best"]
    thinker = get_table(pooled).thinker
    searches = thinker.searches
    again = call(ana, "analyze", game=game["id"])
    assert again["analysis"] == first["analysis"] and thinker.searches == searches


def test_a_reply_that_lands_while_the_page_enters_its_room_is_in_the_answer():
    """new_game with the AI to open: the web layer joins the room, then reads the answer
    again (`then`): a reply found in between is not lost between answer and push."""
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats()), limits=Limits(creations_per_minute=0))
    held = Held()
    table.thinker = Scheduler([held])
    assert table.connect("sid1", "p" * 22, "10.0.0.1")
    reply = table.handle("new_game", "sid1", {**HARD, "you": "O", "level": "easy"})
    assert reply.answer["game"]["moves"] == [] and reply.then is not None
    assert held.started.acquire(timeout=30)
    held.go.release()
    eventually(lambda: len(store.get(reply.answer["game"]["id"]).moves) == 1, 60, message="landing")
    assert store.get(reply.answer["game"]["id"]).untouched  # nobody but the AI has moved
    answer = reply.then().answer  # after the room is joined
    assert answer["ok"] and len(answer["game"]["moves"]) == 1 and answer["game"]["turn"] == "O"
    table.thinker.close()


# --- real servers -------------------------------------------------------------------------------

@pytest.mark.server
def test_a_restart_plays_the_ai_move_that_was_waiting(tmp_path):
    """kill -9 while the AI thinks; the next process plays that turn with nobody joining."""
    db = tmp_path / "ttt.sqlite3"
    env = {"TTT_STORE": f"sqlite:///{db}", "TTT_SECRET_KEY": "restart", "TTT_AI_WORKERS": "1"}
    server = Server(env, log=tmp_path / "one.log").start()
    remotes = Remotes(server.url)
    try:
        ana = remotes()
        game = ana.call("new_game", HARD)["game"]
        assert ana.call("move", {"game": game["id"], "cell": 40})["game"]["moves"] == [40]
        server.kill()  # the search (about a second) is still running
    finally:
        remotes.close()
    store = open_store(f"sqlite:///{db}")
    try:
        # The worker process was starting when the server died: the AI's turn was waiting.
        assert len(store.get(game["id"]).moves) == 1
        again = Server(env, log=tmp_path / "two.log").start()
        try:
            eventually(lambda: len(store.get(game["id"]).moves) == 2, 60,
                       "the waiting AI move played after the restart")
        finally:
            again.stop()
        stored = store.get(game["id"])
        assert len(stored.moves) == 2 and stored.moves[1] // 9 == 4 and stored.turn == "X"
    finally:
        store.close()


@pytest.mark.server
def test_the_gevent_worker_answers_while_a_search_runs(tmp_path):
    """gunicorn -k gevent: a classic move and a new page answer before the AI's search ends."""
    need_module("gevent")
    need_module("gunicorn")
    server = Gunicorn({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "gevent-ai",
                       "TTT_AI_WORKERS": "1", "TTT_CREATE_RATE": "100000"}, tmp_path / "g.log")
    remotes = Remotes(server.url)
    try:
        ultimate, victim = remotes(), remotes()
        game = ultimate.call("new_game", HARD)["game"]
        classic = victim.call("new_game", {"mode": "ai", "you": "X", "level": "perfect"})["game"]
        ultimate.call("analyze", {"game": game["id"]})  # the worker process is up and warm
        # The AI's first reply comes from its opening book at once; the next two are searches.
        assert ultimate.call("move", {"game": game["id"], "cell": 40})["ok"]
        expected = 2
        for _ in range(2):  # each from where the AI sent us
            board = ultimate.wait_for("game", lambda g, n=expected: len(g["moves"]) == n, 60)
            moved = ultimate.call("move", {"game": game["id"], "cell": board["legal"][0]})
            plies = len(moved["game"]["moves"])
            assert moved["game"]["turn"] == "O"  # answered before the AI's reply
            answered = victim.call("move", {"game": classic["id"],
                                            "cell": classic["legal"][0]}, timeout=10)
            page = requests.get(server.url + "/healthz", timeout=10)
            # The search was still running when both answered: its reply had not come.
            assert not [g for g in ultimate.pushed("game") if len(g["moves"]) > plies]
            assert answered["ok"], answered
            assert page.status_code == 200
            classic = answered["game"]
            expected = plies + 1
    finally:
        remotes.close()
        server.stop()


@pytest.mark.server
@pytest.mark.redis
def test_a_queue_worker_on_another_machine_plays_the_ais_move(tmp_path, redis_url):
    """TTT_AI_QUEUE: the search waits in Redis until `python -m ttt worker` takes it."""
    need_module("rq")
    import redis

    env = {"TTT_STORE": "memory://", "TTT_SECRET_KEY": "queue", "TTT_AI_QUEUE": redis_url,
           "TTT_AI_WORKERS": "2"}
    server = Server(env, log=tmp_path / "server.log").start()
    remotes = Remotes(server.url)
    worker = None
    queue = redis.Redis.from_url(redis_url)
    try:
        ana = remotes()
        game = ana.call("new_game", HARD)["game"]
        assert ana.call("move", {"game": game["id"], "cell": 40})["ok"]
        eventually(lambda: queue.llen(f"rq:queue:{queue_name()}") == 1, 30,
                   "the search queued in Redis")
        assert not [g for g in ana.pushed("game") if len(g["moves"]) == 2]
        # Whoever can write to the Redis cannot make a worker run anything but a search.
        from rq import Queue
        from rq.serializers import JSONSerializer
        planted = Queue(queue_name(), connection=queue, serializer=JSONSerializer).enqueue(
            "os.remove", str(tmp_path / "canary"))
        (tmp_path / "canary").write_text("still here")
        with open(tmp_path / "worker.log", "ab") as out:
            worker = subprocess.Popen(
                [sys.executable, "-m", "ttt", "worker", "--redis", redis_url], cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        reply = ana.wait_for("game", lambda g: len(g["moves"]) == 2, 60)
        assert reply["moves"][1] // 9 == 4 and reply["turn"] == "X"
        refused = planted.latest_result(timeout=30)
        assert refused is not None and refused.type == refused.Type.FAILED
        assert "only searches" in refused.exc_string
        assert (tmp_path / "canary").read_text() == "still here"
        assert "Traceback" not in Log(tmp_path / "server.log").since(0)
    finally:
        remotes.close()
        server.stop()
        queue.close()
        if worker is not None:
            worker.terminate()
            worker.wait(30)


def _other_build(tmp_path) -> Path:
    """A copy of the package with one more source file: another code fingerprint, as a worker
    left on an older (or newer) release has."""
    import shutil

    copy = tmp_path / "other"
    shutil.copytree(ROOT / "ttt", copy / "ttt", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "ttt" / "_release_note.py").write_text("# another release\n")
    return copy


@pytest.mark.server
@pytest.mark.redis
def test_a_worker_of_another_build_is_refused_every_search(tmp_path, redis_url):
    """Issue 45: a remote worker reports its build (the queue it listens on) and a web process
    of another build sends it no search, with one line naming it and a counter."""
    need_module("rq")
    import redis

    env = {"TTT_STORE": "memory://", "TTT_SECRET_KEY": "builds", "TTT_AI_QUEUE": redis_url,
           "TTT_AI_WORKERS": "1", "TTT_METRICS_TOKEN": "scrape"}
    server = Server(env, log=tmp_path / "server.log").start()
    remotes = Remotes(server.url)
    queue = redis.Redis.from_url(redis_url)
    other = _other_build(tmp_path)
    workers = []

    def start(path, name):
        with open(tmp_path / name, "ab") as out:
            workers.append(subprocess.Popen(
                [sys.executable, "-m", "ttt", "worker", "--redis", redis_url], cwd=path,
                env={**os.environ, "PYTHONPATH": str(path)}, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))

    def refused() -> float:
        page = requests.get(server.url + "/metrics", timeout=10,
                            headers={"Authorization": "Bearer scrape"})
        line = [x for x in page.text.splitlines()
                if x.startswith('ttt_ai_workers_refused_total{reason="build"}')]
        return float(line[0].split()[-1])

    try:
        assert refused() == 0.0  # at zero from start-up
        start(other, "old-worker.log")
        eventually(lambda: "build" in Log(tmp_path / "old-worker.log").since(0), 60,
                   "the other build's worker started and said its build")
        ana = remotes()
        game = ana.call("new_game", HARD)["game"]
        assert ana.call("move", {"game": game["id"], "cell": 40})["ok"]
        eventually(lambda: queue.llen(f"rq:queue:{queue_name()}") == 1, 30, "search queued")
        eventually(lambda: refused() == 1.0, 30, "the worker counted as refused")
        lines = [x for x in Log(tmp_path / "server.log").since(0).splitlines()
                 if "it is refused every search" in x]
        assert len(lines) == 1, lines
        assert "runs build" in lines[0] and queue_name().split("-")[-1] in lines[0]
        # It got no work: the search still waits, the move is not played.
        assert queue.llen(f"rq:queue:{queue_name()}") == 1
        assert not [g for g in ana.pushed("game") if len(g["moves"]) == 2]
        start(ROOT, "worker.log")  # this build's worker takes it
        assert ana.wait_for("game", lambda g: len(g["moves"]) == 2, 60)["turn"] == "X"
        requests.get(server.url + "/healthz", timeout=10)
        assert refused() == 1.0  # counted once, not at every look
    finally:
        remotes.close()
        server.stop()
        queue.close()
        for worker in workers:
            worker.terminate()
            worker.wait(30)


def test_the_worker_command_needs_a_redis_url():
    done = subprocess.run([sys.executable, "-m", "ttt", "worker"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if k != "TTT_AI_QUEUE"},
                               "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "--redis" in done.stderr and "Traceback" not in done.stderr
