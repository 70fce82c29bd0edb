"""The load benchmark as a test: many clients, drops and reconnects, and nothing lost.

Timing is reported by `python -m bench.load`, never asserted here.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from tests.support.servers import ROOT, Remote, Server, close_all

pytestmark = pytest.mark.server


@pytest.fixture
def open_file_headroom():
    """Let child processes open as many files as the hard limit allows (restored after).

    200-odd websocket clients and their server need more than a low default soft limit.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def run_load(*args: str, timeout: float = 240) -> tuple[subprocess.CompletedProcess, dict]:
    result = subprocess.run([sys.executable, "-m", "bench.load", *args, "--json"], cwd=ROOT,
                            capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    assert result.stdout.strip(), result.stderr[-3000:]
    return result, json.loads(result.stdout)


def test_fifty_clients_for_ten_seconds_lose_and_duplicate_nothing(open_file_headroom):
    result, report = run_load("--clients", "50", "--seconds", "10", "--seed", "1")
    summary = json.dumps({k: report[k] for k in ("failed_calls", "failures", "lost_moves",
                                                 "duplicated_moves", "inconsistencies",
                                                 "problems", "server_tracebacks")})
    assert result.returncode == 0, summary + result.stderr[-2000:]
    assert report["ok"] is True
    assert report["failed_calls"] == 0, summary
    assert report["lost_moves"] == 0 and report["duplicated_moves"] == 0, summary
    assert report["inconsistencies"] == 0, summary
    assert report["server_tracebacks"] == 0 and report["server_alive_at_end"] is True
    assert report["games_completed"] > 0 and report["moves"] > 0
    assert 1 <= report["dropped_and_reconnected"] <= 5  # 10% of 50, each at most once
    assert report["server_peak_rss_mib"] > 0


def test_against_a_running_server_with_a_rate_limit(live_server):
    """--url: no own server (no memory figure); the default limit only slows clients down."""
    result, report = run_load("--url", live_server, "--clients", "4", "--seconds", "3",
                              "--drop", "0.5", timeout=120)
    assert result.returncode == 0, json.dumps(report)
    assert report["server_peak_rss_mib"] is None and report["moves"] > 0
    assert set(report["refused"]) <= {"rate_limited"}
    assert report["dropped_and_reconnected"] == 2


@pytest.mark.parametrize("args", [["--clients", "0"], ["--drop", "2"], ["--seconds", "-1"],
                                  ["--clients", "many"]])
def test_bad_arguments_exit_2_with_one_line(args):
    result = subprocess.run([sys.executable, "-m", "bench.load", *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_sqlite_server_keeps_no_files_open_per_event(tmp_path):
    env = {"TTT_STORE": f"sqlite:///{tmp_path / 'ttt.sqlite3'}", "TTT_SECRET_KEY": "fd-test",
           "TTT_RATE_LIMIT": "0"}
    server = Server(env, log=tmp_path / "server.log").start()
    players: list[Remote] = []
    try:
        players.append(Remote(server.url))
        players[0].call("join", {})

        def open_files() -> int:
            return len(os.listdir(f"/proc/{server.proc.pid}/fd"))

        before = open_files()
        for _ in range(300):
            assert players[0].call("join", {})["ok"]
        grown = open_files() - before
        assert grown < 30, f"{grown} more open files after 300 events"
    finally:
        close_all(players)
        server.stop()
