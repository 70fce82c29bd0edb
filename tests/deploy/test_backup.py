"""Backups (issue 32): deploy/backup.py takes a live store while players play, and what it
restores gives every player their games, seat and record as they were at the backup.
SQLite restored in place of a lost file, Redis into a Redis that lost its data (flushed)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading

import pytest
import redis

from tests.support.servers import ROOT, Remote, Server, close_all

pytestmark = pytest.mark.server

BACKUP = ROOT / "deploy" / "backup.py"
X_WINS = (0, 3, 1, 4, 2)  # X, O, X, O, X: the top row


def ai_games(player: Remote, count: int) -> list[dict]:
    """Finished games against the perfect AI (each credited to the player's record)."""
    rng, games = random.Random(32), []
    for _ in range(count):
        game = player.call("new_game", {"mode": "ai", "you": "X", "level": "perfect"})["game"]
        while game["status"] == "playing":
            empty = [i for i, c in enumerate(game["board"]) if c == "."]
            answer = player.call("move", {"game": game["id"], "cell": rng.choice(empty),
                                          "version": game["version"]})
            assert answer["ok"], answer
            game = answer["game"]
        games.append(game)
    return games


def friend_game(x: Remote, o: Remote, cells) -> dict:
    game = x.call("new_game", {"mode": "friend", "you": "X"})["game"]
    assert o.call("join", {"game": game["id"]})["you"] == "O"
    for i, cell in enumerate(cells):
        answer = (x if i % 2 == 0 else o).call("move", {"game": game["id"], "cell": cell})
        assert answer["ok"], answer
        game = answer["game"]
    return game


class Traffic:
    """Two more players playing games one after another until stopped: the store under play."""

    def __init__(self, url: str) -> None:
        self.players = [Remote(url), Remote(url)]
        self.moves = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._play, daemon=True)
        self.thread.start()

    def _play(self) -> None:
        carol, dave = self.players
        while not self.stop.is_set():
            friend_game(carol, dave, X_WINS)
            self.moves += len(X_WINS)

    def end(self) -> None:
        self.stop.set()
        self.thread.join(30)
        close_all(self.players)


def run_backup(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(BACKUP), *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_backup_under_play_restores_games_seats_and_records(kind, tmp_path, request):
    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "secret_key").write_text("backup-test-secret-key\n")
    store = (f"sqlite:///{tmp_path / 'ttt.sqlite3'}" if kind == "sqlite"
             else request.getfixturevalue("redis_url"))
    env = {"TTT_STORE": store, "TTT_SECRET_KEY": "backup-test-secret-key",
           "TTT_RATE_LIMIT": "0"}
    server = Server(env, log=tmp_path / "server.log").start()
    made: list[Remote] = []
    try:
        alice, bob = Remote(server.url), Remote(server.url)
        made += [alice, bob]
        finished = [friend_game(alice, bob, X_WINS) for _ in range(2)] + ai_games(alice, 3)
        live = friend_game(alice, bob, (4, 0))
        before = alice.call("join", {"game": live["id"]})
        assert sum(before["record"]["perfect"].values()) == 3
        traffic = Traffic(server.url)
        try:
            while traffic.moves < 10:  # the traffic is under way before the backup starts
                traffic.thread.join(0.05)
            moves = traffic.moves
            done = run_backup("backup", "--to", str(tmp_path / "backups"), "--store", store,
                              "--instance", str(instance))
            assert traffic.moves > moves or kind == "redis"  # SQLite's copy runs in steps
        finally:
            traffic.end()
        folder = tmp_path / "backups" / done.stdout.strip().rsplit("/", 1)[-1]
        manifest = json.loads((folder / "manifest.json").read_text())
        assert set(manifest["files"]) >= {"secret_key", "ttt.sqlite3" if kind == "sqlite"
                                          else "redis.rdb"}
        assert oct((folder).stat().st_mode & 0o777) == "0o700"
        # After the backup: a move that the restore must forget.
        assert alice.call("move", {"game": live["id"], "cell": 8})["ok"]
        close_all(made)
        made.clear()
        server.stop()

        # Disaster: the store and the secret key are lost.
        (instance / "secret_key").unlink()
        if kind == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                (tmp_path / f"ttt.sqlite3{suffix}").unlink(missing_ok=True)
        else:
            redis.Redis.from_url(store).flushdb()
        run_backup("restore", str(folder), "--store", store, "--instance", str(instance))
        key = (instance / "secret_key").read_text().strip()
        assert key == "backup-test-secret-key"

        server = Server({**env, "TTT_SECRET_KEY": key}, log=tmp_path / "server.log").start()
        back = Remote(server.url, cookie=alice.cookie)  # her old cookie still holds her seat
        made.append(back)
        answer = back.call("join", {"game": live["id"]})
        assert answer["you"] == "X"
        assert answer["game"]["moves"] == before["game"]["moves"]  # as at the backup
        assert answer["record"] == before["record"]
        for game in finished:
            again = back.call("join", {"game": game["id"]})["game"]
            assert again["moves"] == game["moves"] and again["status"] == game["status"]
    finally:
        close_all(made)
        server.stop()
    assert "Traceback" not in (tmp_path / "server.log").read_text()
