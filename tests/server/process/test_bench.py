"""The benchmark tools run end to end against real processes. No timing is asserted here:
the numbers depend on the machine; the tools must only measure and print them."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.support.servers import ROOT

pytestmark = pytest.mark.server

NUMBER = r"(\d+(?:\.\d+)?)"


def run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def test_bench_server_quick_prints_both_ratios_as_numbers():
    result = run("scripts/bench_server.py", "--quick", "--only", "threading")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    p50 = re.search(rf"threading: ratio p50 game/echo: {NUMBER}", result.stdout)
    throughput = re.search(rf"ratio throughput game/echo: {NUMBER}", result.stdout)
    assert p50 and throughput, result.stdout
    assert float(p50.group(1)) > 0 and float(throughput.group(1)) > 0
    for app in ("game", "echo"):  # a row per server, with its p50, p99 and events/s
        assert re.search(rf"threading\s+{app}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}", result.stdout)


def test_capacity_smoke_reports_levels_cpu_and_memory():
    result = run("-m", "bench.capacity", "--quick", "--only", "threading", "--json")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    report = json.loads(result.stdout)["modes"]["threading"]
    assert report["levels"] and report["server_tracebacks"] == 0, report
    first = report["levels"][0]
    assert first["players"] == 4 and first["failed_calls"] == 0, first
    assert isinstance(report["max_players_under_limit"], int) and report["stopped"]
    assert len(first["client_worker_cpu_cores"]) == 1
    assert first["server_rss_mib"] > 0 and first["server_open_files"] > 0


@pytest.mark.parametrize("args", [["scripts/bench_server.py", "--moves", "0"],
                                  ["scripts/bench_server.py", "--server-root", "/nonexistent"],
                                  ["-m", "bench.capacity", "--max-players", "0"]])
def test_bad_arguments_exit_2(args):
    result = run(*args, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_bench_scrape_counts_exactly_and_times_both_stores(redis_url):
    result = run("-m", "bench.scrape", "--games", "600", "--finished", "60", "--repeat", "3",
                 "--redis", redis_url, "--json")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    rows = {r["store"]: r for r in json.loads(result.stdout)}
    assert set(rows) == {"sqlite", "redis"}
    for row in rows.values():
        assert row["exact"] and row["live"] == 600, row
        for figure in ("by_kind_ms", "total_ms", "exposition_ms", "by_bodies_ms"):
            assert 0 < row[figure]["p50"] <= row[figure]["max"], (figure, row)
