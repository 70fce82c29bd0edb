"""Upgrades (issue 32): the release before this one (7bc74e4, a `git worktree` in a temp
folder, run with the same python) and this one serve one store side by side, as during a
rolling restart; then the site rolls back to the old release on the store the new one
migrated. Games, seats and records survive every step."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.deploy.test_backup import ai_games
from tests.support.servers import ROOT, Remote, Server, close_all
from ttt.store import schema
from ttt.store.redis import SCHEMA_KEY

pytestmark = pytest.mark.server

PREVIOUS = "7bc74e4"  # the last commit before schema versions


@pytest.fixture(scope="module")
def previous(tmp_path_factory) -> Path:
    """A checkout of the previous release, removed afterwards."""
    from tests.support.servers import in_ci

    git = shutil.which("git")
    have = git is not None and (ROOT / ".git").exists() and subprocess.run(
        [git, "-C", str(ROOT), "cat-file", "-e", f"{PREVIOUS}^{{commit}}"],
        capture_output=True).returncode == 0
    if not have:
        why = (f"the upgrade test needs git and a clone with commit {PREVIOUS} "
               "(a shallow clone lacks it: git fetch --unshallow)")
        pytest.fail(why) if in_ci() else pytest.skip(why)
    where = tmp_path_factory.mktemp("previous") / "ttt"
    subprocess.run([git, "-C", str(ROOT), "worktree", "add", "--detach", str(where), PREVIOUS],
                   check=True, capture_output=True)
    yield where
    subprocess.run([git, "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
                   check=False, capture_output=True)


def old_server(code: Path, env: dict[str, str], log: Path) -> Server:
    """`python <previous>/app.py`: python puts the script's folder first on sys.path, so the
    old `ttt` package is the one imported, under the very same interpreter and packages."""
    return Server(env, log=log, script=code / "app.py")


def store_version(kind: str, store: str) -> int:
    if kind == "sqlite":
        with sqlite3.connect(store.removeprefix("sqlite:///")) as conn:
            return conn.execute("PRAGMA user_version").fetchone()[0]
    return int(redis.Redis.from_url(store).hget(SCHEMA_KEY, "version") or 0)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def test_old_and_new_side_by_side_then_a_rollback(kind, previous, tmp_path, request):
    if kind == "sqlite":
        store = f"sqlite:///{tmp_path / 'ttt.sqlite3'}"
        env = {"TTT_STORE": store}
    else:
        store = request.getfixturevalue("redis_url")
        env = {"TTT_STORE": store, "TTT_MESSAGE_QUEUE": store}
    env.update(TTT_SECRET_KEY="upgrade-test-key", TTT_RATE_LIMIT="0",
               PYTHONPATH="", TTT_AI_WORKERS="0")
    log = tmp_path / "servers.log"
    made: list[Remote] = []
    servers: list[Server] = []
    try:
        # 1. The old release alone, on a store it made.
        old = old_server(previous, env, log).start()
        servers.append(old)
        alice = Remote(old.url)
        made.append(alice)
        finished, = ai_games(alice, 1)
        game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
        assert alice.call("move", {"game": game["id"], "cell": 4})["ok"]
        assert store_version(kind, store) == 0  # the old code records no version

        # 2. The rolling restart's middle: the new release starts beside it and migrates.
        new = Server(env, log=log).start()
        servers.append(new)
        assert store_version(kind, store) == schema.SCHEMA_VERSION
        bob = Remote(new.url)
        made.append(bob)
        assert bob.call("join", {"game": game["id"]})["you"] == "O"
        # Moves alternate between the two releases on one game.
        for player, cell in ((bob, 0), (alice, 8), (bob, 2), (alice, 6), (bob, 1)):
            answer = player.call("move", {"game": game["id"], "cell": cell})
            assert answer["ok"], answer
        assert answer["game"]["status"] != "playing"  # O took the top row
        record = alice.call("join", {"game": finished["id"]})["record"]
        moved = Remote(new.url, cookie=alice.cookie)  # alice's cookie, on the new process
        made.append(moved)
        again = moved.call("join", {"game": finished["id"]})
        assert again["record"] == record and again["game"]["moves"] == finished["moves"]
        later = moved.call("new_game", {"mode": "friend", "you": "X"})["game"]
        assert moved.call("move", {"game": later["id"], "cell": 0})["ok"]
        close_all(made)
        made.clear()

        # 3. Rollback: the new release stops, the old one serves the migrated store alone.
        new.stop()
        old.stop()
        back = old_server(previous, env, log).start()
        servers.append(back)
        alice = Remote(back.url, cookie=alice.cookie)
        made.append(alice)
        answer = alice.call("join", {"game": later["id"]})
        assert answer["you"] == "X" and len(answer["game"]["moves"]) == 1  # made on the new
        assert alice.call("join", {"game": finished["id"]})["record"] == record
        assert alice.call("move", {"game": later["id"], "cell": 4})["ok"] is False  # O's turn
        assert store_version(kind, store) == schema.SCHEMA_VERSION  # never migrated down
    finally:
        close_all(made)
        for server in servers:
            server.stop()
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]


def test_an_ai_worker_refuses_code_that_is_not_the_servers():
    """A worker spawned after the checkout changed under a running server says so."""
    env = {**os.environ, "TTT_SERVER_CODE": "0" * 16, "PYTHONPATH": str(ROOT)}
    task = {"task": {"kind": "move", "variant": "classic", "moves": [], "level": "easy",
                     "seed": 1}, "seconds": 0.1}
    done = subprocess.run([sys.executable, "-m", "ttt.pool.workers"], input=json.dumps(task) + "\n",
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert "not the server's" in json.loads(done.stdout)["error"]
    from ttt.runtime.fingerprint import code_fingerprint

    env["TTT_SERVER_CODE"] = code_fingerprint()
    done = subprocess.run([sys.executable, "-m", "ttt.pool.workers"], input=json.dumps(task) + "\n",
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert "result" in json.loads(done.stdout), done.stdout


def test_a_process_refuses_to_start_on_a_newer_store_and_says_why(tmp_path):
    path = tmp_path / "ttt.sqlite3"
    newer = schema.SCHEMA_VERSION + 1
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, readable_from "
                     "INTEGER NOT NULL, at REAL NOT NULL, release TEXT)")
        conn.execute("INSERT INTO migrations VALUES (?, ?, 0, 'future')", (newer, newer))
        conn.execute(f"PRAGMA user_version = {newer}")
    log = tmp_path / "server.log"
    server = Server({"TTT_STORE": f"sqlite:///{path}", "TTT_SECRET_KEY": "too-new",
                     "TTT_LOG_FORMAT": "json"}, log=log)
    with pytest.raises(RuntimeError, match="exited"):
        server.start(timeout=60)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert any(r["level"] == "CRITICAL" and f"schema version {newer}" in r["message"]
               for r in lines), lines
