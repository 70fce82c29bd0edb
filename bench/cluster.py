"""The cluster's cost as processes grow: N gevent processes behind deploy/'s nginx, one Redis
(`make bench-cluster`).

For each N (1, 2, 4, 8 by default) and each queue (`plain`: python-socketio's RedisManager,
every push to every process, TTT_QUEUE_BY_ROOM=0; `rooms`: ttt's room queue, a push only to
the processes holding its room), side by side in one run: a fresh Redis (store and message
queue), N `gunicorn -c deploy/gunicorn.conf.py` processes, nginx from deploy/nginx-main.conf +
deploy/nginx.conf with N upstreams (tests/support/stack.py's conf with the upstream list grown and
the per-address limits opened: every simulated player comes from 127.0.0.1). The same total
load whatever N: `--players` at human pace (think `--think` s, spread over the processes by
nginx's sticky hash) plus `--fast` players flat-out, perfect-AI games through the front.

Printed per N and queue: moves a second, move p50/p99 (ms), and the cluster's total CPU per
move: utime+stime (/proc/PID/stat) of every server process and Redis over the window,
divided by the moves made (Redis's share shown too; nginx's apart, not in the total). The
ratio N=max / N=1 is the target (within 1.3x with the room queue). The machine's
load is printed with each row, and `idle`: the cluster's CPU in ms a second before anyone
connects (what N processes and Redis cost doing nothing).

    python -m bench.cluster [--sizes 1,2,4,8] [--players 120] [--fast 2] [--seconds 15]
                            [--queues plain,rooms] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import children, cpu_seconds, note, percentile, raise_nofile
from bench.swarm import Swarm

ROOT = Path(__file__).resolve().parent.parent
QUEUES = {"plain": "0", "rooms": "1"}
METRICS_TOKEN = "bench-cluster-metrics-token"


def grown_conf(conf: str, ports: list[int]) -> str:
    """tests/support/stack.py's nginx conf (made for two upstreams) with `ports` as the
    upstreams and the per-address limits opened (the bench's players all come from one address)."""
    lines = "\n".join(f"    server 127.0.0.1:{p} max_fails=0;" for p in ports)
    conf, found = re.subn(r"(?:^\s*server 127\.0\.0\.1:\d+ max_fails=0;\n)+", lines + "\n",
                          conf, count=1, flags=re.M)
    assert found == 1, "deploy/nginx.conf: no upstream list"
    conf = re.sub(r"rate=\d+r/s", "rate=100000r/s", conf)
    return re.sub(r"limit_conn ttt_conn \d+;", "limit_conn ttt_conn 60000;", conf)


class Cluster:
    """Redis, N gunicorn gevent processes and nginx in front, all on loopback."""

    def __init__(self, work: Path, size: int, by_room: str) -> None:
        from tests.support.servers import RedisServer, free_port
        from tests.support.stack import Gunicorn, nginx_conf, wait_healthy

        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.redis = RedisServer(shutil.which("redis-server") or "redis-server", work)
        env = {"TTT_STORE": self.redis.url, "TTT_MESSAGE_QUEUE": self.redis.url,
               "TTT_QUEUE_BY_ROOM": by_room, "TTT_SECRET_KEY": "bench-cluster-secret",
               "TTT_TRUSTED_PROXIES": "127.0.0.1", "TTT_AI_WORKERS": "0",
               "TTT_RATE_LIMIT": "0", "TTT_CREATE_RATE": "1000000",
               "TTT_EVENTS_PER_ADDRESS": "1000000", "TTT_PAGES_PER_ADDRESS": "1000000",
               "TTT_MAX_LIVE_PER_ADDRESS": "1000000",
               "TTT_MAX_CONNECTIONS_PER_ADDRESS": "1000000", "TTT_DRAIN_SECONDS": "1",
               "TTT_METRICS_TOKEN": METRICS_TOKEN}
        self.servers = [Gunicorn(env, work / f"gunicorn{i}.log") for i in range(size)]
        self.nginx: subprocess.Popen | None = None
        try:
            for server in self.servers:
                server.launch()
            for server in self.servers:
                wait_healthy(server.url, server.proc, 120)
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            ports = [s.port for s in self.servers]
            conf = nginx_conf(ROOT / "deploy" / "nginx.conf", self.port, ports[:1] * 2, work)
            (work / "nginx.conf").write_text(grown_conf(conf, ports))
            binary = shutil.which("nginx") or "/usr/sbin/nginx"
            self.nginx = subprocess.Popen(
                [binary, "-p", str(work), "-c", str(work / "nginx.conf"),
                 "-e", str(work / "error.log"), "-g", f"daemon off; pid {work / 'nginx.pid'};"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_healthy(self.url, self.nginx, 30)
        except BaseException:
            self.stop()
            raise

    def server_pids(self) -> list[int]:
        """Every server process (gunicorn's masters and their workers) and Redis."""
        pids = [self.redis.proc.pid]
        for server in self.servers:
            pids += [server.proc.pid, *children(server.proc.pid)]
        return pids

    def nginx_pids(self) -> list[int]:
        return [self.nginx.pid, *children(self.nginx.pid)] if self.nginx else []

    def heard(self) -> dict[str, float]:
        """The room queue's listeners' reads so far, summed over the processes, by channel
        (nothing with python-socketio's queue: it counts none)."""
        import requests

        total: dict[str, float] = {}
        for server in self.servers:
            text = requests.get(server.url + "/metrics", timeout=10,
                                headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
            for channel, count in re.findall(
                    r'^ttt_queue_messages_received_total{channel="(\w+)"} (\S+)$', text, re.M):
                total[channel] = total.get(channel, 0.0) + float(count)
        return total

    def stop(self) -> None:
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.terminate()
            self.nginx.wait(10)
        for server in self.servers:
            if server.proc is not None and server.proc.poll() is None:
                server.proc.terminate()
        for server in self.servers:
            if server.proc is not None:
                try:
                    server.proc.wait(15)
                except subprocess.TimeoutExpired:
                    server.proc.kill()
                    server.proc.wait(10)
        self.redis.stop()


def cpu(pids: list[int]) -> float:
    return sum(cpu_seconds(p) or 0.0 for p in pids)


def measure(size: int, queue: str, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One cluster of `size` processes on `queue`, loaded and measured for `args.seconds`."""
    cluster = Cluster(work / f"{queue}-{size}", size, QUEUES[queue])
    swarm = Swarm(workers=2, seed=size)
    try:
        pids = cluster.server_pids()
        idle_before, idle_started = cpu(pids), time.monotonic()
        time.sleep(args.idle)  # nobody connected: what the processes cost by themselves
        idle = (cpu(pids) - idle_before) / (time.monotonic() - idle_started)
        joined = swarm.connect(cluster.url, args.players)
        swarm.pace(cluster.url, args.think * 0.5, args.think * 1.5)
        joined_fast = swarm.connect(cluster.url, args.fast)
        time.sleep(args.warmup)  # the paced players' first moves spread out
        pids, front = cluster.server_pids(), cluster.nginx_pids()
        redis = [cluster.redis.proc.pid]
        load = os.getloadavg()[0]
        heard_before = cluster.heard()
        before, front_before, redis_before = cpu(pids), cpu(front), cpu(redis)
        report = swarm.burst(cluster.url, args.seconds)  # every player's moves in the window
        spent, front_spent = cpu(pids) - before, cpu(front) - front_before
        redis_spent = cpu(redis) - redis_before
        heard = {k: v - heard_before.get(k, 0.0) for k, v in cluster.heard().items()}
    finally:
        swarm.close()
        cluster.stop()
    moves = len(report["latencies"])
    return {"processes": size, "queue": queue, "moves": moves,
            "players": joined["connected"] + joined_fast["connected"],
            "failed": {**joined["failed"], **joined_fast["failed"]},
            "errors": report["errors"], "seconds": report["seconds"],
            "moves_per_s": moves / report["seconds"] if report["seconds"] else 0.0,
            "p50_ms": 1000 * (percentile(report["latencies"], 0.5) or 0),
            "p99_ms": 1000 * (percentile(report["latencies"], 0.99) or 0),
            "cpu_ms_per_move": 1000 * spent / moves if moves else None,
            "nginx_cpu_ms_per_move": 1000 * front_spent / moves if moves else None,
            "redis_cpu_ms_per_move": 1000 * redis_spent / moves if moves else None,
            "idle_ms_per_s": 1000 * idle, "load1": load,
            "heard_per_move": {k: round(v / moves, 2) for k, v in heard.items()} if moves else {}}


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'N':>2} {'queue':<6} {'moves/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'CPU ms/move':>11} {'redis':>6} {'nginx':>6} {'idle':>5} {'players':>7} "
          f"{'errors':>6} {'load':>5}  queue reads a move")
    for r in rows:
        per = r["cpu_ms_per_move"]
        print(f"{r['processes']:>2} {r['queue']:<6} {r['moves_per_s']:>8.1f} "
              f"{r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f} "
              f"{per if per is not None else float('nan'):>11.2f} "
              f"{r['redis_cpu_ms_per_move'] or 0:>6.2f} "
              f"{r['nginx_cpu_ms_per_move'] or 0:>6.2f} {r['idle_ms_per_s']:>5.0f} "
              f"{r['players']:>7} "
              f"{sum(r['errors'].values()):>6} {r['load1']:>5.1f}  "
              + " ".join(f"{k}={v:g}" for k, v in sorted(r["heard_per_move"].items())))
    for queue in sorted({r["queue"] for r in rows}):
        mine = sorted((r for r in rows if r["queue"] == queue and r["cpu_ms_per_move"]),
                      key=lambda r: r["processes"])
        if len(mine) > 1:
            first, last = mine[0], mine[-1]
            print(f"{queue}: CPU per move at N={last['processes']} / N={first['processes']}"
                  f" = {last['cpu_ms_per_move'] / first['cpu_ms_per_move']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,2,4,8")
    parser.add_argument("--queues", default="plain,rooms")
    parser.add_argument("--players", type=int, default=120, help="at human pace, in all")
    parser.add_argument("--think", type=float, default=2.0, help="mean seconds between events")
    parser.add_argument("--fast", type=int, default=2, help="players moving flat-out")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--idle", type=float, default=4.0, help="seconds measured idle first")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    raise_nofile()
    work = Path(tempfile.mkdtemp(prefix="ttt-cluster-"))
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        for queue in args.queues.split(","):  # side by side: both queues at each size
            note("cluster", f"N={size} queue={queue}")
            rows.append(measure(size, queue, args, work))
            note("cluster", json.dumps({k: v for k, v in rows[-1].items()
                                        if k not in ("failed",)}))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
