"""The bots' benchmark runs end to end under both servers (no timing asserted): bot streams
work under Werkzeug threads and under gunicorn's gevent worker alike."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.servers import ROOT

pytestmark = pytest.mark.server


def test_bench_bots_quick_plays_games_and_measures_both_latencies_under_both_servers():
    done = subprocess.run([sys.executable, "-m", "bench.bots", "--seconds", "1", "--rounds",
                           "5", "--bots", "1", "--parallel", "2", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    for mode in ("threading", "gevent"):
        throughput, latency = result[mode]["throughput"], result[mode]["latency"]
        assert throughput["games"] > 0 and throughput["losses"] == 0, mode
        assert latency["push_to_stream_ms_p50"] > 0 and latency["stream_over_socket"] > 0
        assert result[mode]["tracebacks"] == 0, mode


def test_bench_bots_refuses_a_count_that_is_not_positive():
    done = subprocess.run([sys.executable, "-m", "bench.bots", "--rounds", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "positive" in done.stderr
