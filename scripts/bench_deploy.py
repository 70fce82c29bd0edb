"""Measure the production set-ups side by side with `bench.load` (loopback only, bounded).

    python scripts/bench_deploy.py [--clients 200] [--seconds 20]

1. gunicorn -k gevent, one process, SQLite store;
2. gunicorn -k gthread (threads + simple-websocket), one process, SQLite store;
3. the Werkzeug development server (python app.py), one process, SQLite store;
4. two gunicorn processes of the chosen worker sharing Redis (store + message queue),
   the clients split between them as a sticky front would.
Needs redis-server and the `prod` extra (gunicorn, gevent). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (  # noqa: E402 - after the path set-up above
    PY,
    ROOT,
    children,
    free_port,
    peak_rss_kib,
    wait_healthy,
)
from bench.load import run as run_load  # noqa: E402


def peak_rss_mib(pids: list[int]) -> float:
    """Peak resident memory of these processes and their children (VmHWM), MiB."""
    return round(sum(peak_rss_kib(task) or 0 for pid in pids
                     for task in [pid, *children(pid)]) / 1024, 1)


def start(kind: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    if kind == "werkzeug":
        cmd = [PY, "app.py", "--port", str(port)]
    else:
        worker = ["-k", "gevent"] if kind == "gevent" else ["-k", "gthread", "--threads", "400"]
        cmd = [PY, "-m", "gunicorn", "-w", "1", *worker, "-b", f"127.0.0.1:{port}",
               "--log-level", "warning", "ttt.web.wsgi:app"]
        env = {**env, "TTT_ASYNC_MODE": "gevent" if kind == "gevent" else "threading"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not wait_healthy(url, 30, proc):
        proc.kill()
        raise RuntimeError(f"{kind} on {url} never became healthy")
    return proc, url


def load(urls: list[str], clients: int, seconds: float) -> dict:
    return run_load(clients, seconds, 0.1, ",".join(urls), seed=1)


def measure(label: str, kinds: list[str], env: dict[str, str], clients: int,
            seconds: float) -> dict:
    procs = [start(kind, env) for kind in kinds]
    try:
        report = load([url for _, url in procs], clients, seconds)
        report["peak_rss_mib"] = peak_rss_mib([p.pid for p, _ in procs])
    finally:
        for proc, _ in procs:
            proc.terminate()
            proc.wait(20)
    report["setup"] = label
    print(f"  {label}: {report['moves_per_s']} moves/s, p99 "
          f"{report['move_latency_ms']['p99']} ms", file=sys.stderr, flush=True)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    redis_bin = shutil.which("redis-server")
    if not redis_bin:
        print("bench_deploy: needs redis-server", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ttt-bench-"))
    redis_port = free_port()
    redis = subprocess.Popen([redis_bin, "--port", str(redis_port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", str(work)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_env = {"TTT_RATE_LIMIT": "0", "TTT_SECRET_KEY": "bench-only-secret"}
    rows = []
    try:
        for kind in ("gevent", "gthread", "werkzeug"):
            env = {**base_env, "TTT_STORE": f"sqlite:///{work / (kind + '.sqlite3')}"}
            rows.append(measure(f"1 process, {kind}, SQLite", [kind], env, args.clients,
                                args.seconds))
        best = max(rows[:2], key=lambda r: r["moves_per_s"] or 0)
        kind = "gevent" if "gevent" in best["setup"] else "gthread"
        url = f"redis://127.0.0.1:{redis_port}/0"
        env = {**base_env, "TTT_STORE": url, "TTT_MESSAGE_QUEUE": url}
        rows.append(measure(f"2 processes, {kind}, Redis + message queue", [kind, kind], env,
                            args.clients, args.seconds))
    finally:
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    print(f"| set-up ({args.clients} clients, {args.seconds:g} s) | moves/s | move p50 ms "
          "| move p99 ms | failed | lost or duplicated | server peak RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        lat = r["move_latency_ms"]
        print(f"| {r['setup']} | {r['moves_per_s']} | {lat['p50']} | {lat['p99']} | "
              f"{r['failed_calls']} | {r['lost_moves'] + r['duplicated_moves']} | "
              f"{r['peak_rss_mib']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
