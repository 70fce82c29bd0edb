"""The event path on Redis across a network's delay: a reference commit against this tree.

    python -m bench.redis_rtt [--ref 4eb4f08] [--delay 0.0005] [--moves 300] [--clients 20]
                              [--seconds 8] [--mode threading|gevent] [--pairs 1]

One redis-server; in front of it, in its own process, a TCP proxy adding `--delay` seconds
each way (bench.delay_tcp), as a LAN or a managed Redis would. For each delay (that one, then
none) and each tree (REF in a temporary git worktree, and this one, their order alternating),
a fresh game server on that Redis (store, presence and limits in Redis, rate limit off, as
`make bench-server` starts it) is measured:

- one client (python-socketio, websocket): perfect-AI games with random legal moves; each
  `move` and each `new_game` round trip timed;
- `--clients` clients playing as fast as answers come for `--seconds` (bench.swarm): their
  `move` round trips, the events a second, and the server's CPU per event (/proc).

Printed per run: Redis PING p50 through the proxy, move p50/p99 and new game p50 of the one
client, move p50/p99 and events/s of the crowd; then per tree the move p50's growth from no
delay to the delay, in milliseconds and in round trips of the measured PING. Each loop is
bounded in count and time; nothing here asserts a timing. `make bench-redis-rtt`.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (  # noqa: E402 - after the path set-up above
    MODES,
    PY,
    ROOT,
    ServerProcess,
    SyncPlayer,
    free_port,
    note,
    percentile,
    raise_nofile,
)
from bench.swarm import Swarm  # noqa: E402


class TimedPlayer(SyncPlayer):
    """A SyncPlayer that times its `new_game` round trips too."""

    def __init__(self, base: str, seed: int = 0) -> None:
        super().__init__(base, seed)
        self.new_games: list[float] = []

    def call(self, event: str, payload: dict) -> dict:
        started = time.perf_counter()
        answer = super().call(event, payload)
        if event == "new_game":
            self.new_games.append(time.perf_counter() - started)
        return answer


@contextlib.contextmanager
def redis_server():
    """A redis-server of our own on a free port, no persistence; its port."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (make system)")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="ttt-rtt-redis-") as work:
        proc = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly",
                                 "no", "--dir", work], stdout=subprocess.DEVNULL)
        try:
            _wait_ping(port)
            yield port
        finally:
            proc.terminate()
            proc.wait(10)


@contextlib.contextmanager
def delay_proxy(target: int, delay: float):
    """bench.delay_tcp in front of `target`; its port."""
    proc = subprocess.Popen([PY, "-m", "bench.delay_tcp", "--target", str(target), "--delay",
                             str(delay)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline())
    finally:
        proc.terminate()
        proc.wait(10)


def _wait_ping(port: int, timeout: float = 10) -> None:
    import redis

    deadline = time.monotonic() + timeout
    while True:
        try:
            redis.Redis(port=port, socket_timeout=1).ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def ping_p50(port: int, count: int = 200) -> float:
    import redis

    client = redis.Redis(port=port)
    client.ping()
    times = []
    for _ in range(count):
        started = time.perf_counter()
        client.ping()
        times.append(time.perf_counter() - started)
    client.close()
    return statistics.median(times)


def measure(root: Path, url: str, args: argparse.Namespace) -> dict:
    """One fresh server of `root` on the Redis at `url`: the one client, then the crowd."""
    import redis

    redis.Redis.from_url(url).flushdb()
    figures: dict = {}
    with ServerProcess("game", args.mode, root=root, store=url) as server:
        player = TimedPlayer(server.url, seed=1)
        try:
            deadline = time.monotonic() + 300
            player.moves(30, deadline)  # warm-up
            player.latencies.clear()
            player.new_games.clear()
            player.moves(args.moves, deadline)
        finally:
            player.close()
        figures["move_p50"] = percentile(player.latencies, 0.5)
        figures["move_p99"] = percentile(player.latencies, 0.99)
        figures["new_p50"] = percentile(player.new_games, 0.5)
        with Swarm(workers=2, seed=1) as swarm:
            swarm.connect(server.url, args.clients)
            swarm.burst(server.url, 1.0)  # warm-up
            cpu = server.cpu() or 0.0
            crowd = swarm.burst(server.url, args.seconds)
            cpu = (server.cpu() or 0.0) - cpu
        figures["cpu_event"] = cpu / crowd["events"] if crowd["events"] else None
        figures["crowd_p50"] = percentile(crowd["latencies"], 0.5)
        figures["crowd_p99"] = percentile(crowd["latencies"], 0.99)
        figures["events_s"] = crowd["events"] / crowd["seconds"] if crowd["seconds"] else 0.0
        figures["errors"] = sum(crowd["errors"].values())
    return figures


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{1000 * value:.2f}"


def report(rows: list[dict], trees: dict[str, str], clients: int) -> None:
    print(f"\nttt on Redis across a delay ({time.strftime('%Y-%m-%d %H:%M')}; "
          f"{', '.join(f'{k} = {v}' for k, v in trees.items())})")
    clients = next((r["clients"] for r in rows), 0)
    print("| tree | delay each way | Redis PING p50 | move p50 | move p99 | new game p50 "
          f"| {clients} clients: move p50 | move p99 | events/s | server CPU ms/event |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = r["figures"]
        print(f"| {r['tree']} | {1000 * r['delay']:.1f} ms | {_ms(r['ping'])} ms "
              f"| {_ms(f['move_p50'])} | {_ms(f['move_p99'])} | {_ms(f['new_p50'])} "
              f"| {_ms(f['crowd_p50'])} | {_ms(f['crowd_p99'])} | {f['events_s']:.0f} "
              f"| {_ms(f['cpu_event'])} |")
    print("\nmove p50 with the delay minus without (ms; in round trips of the PING's growth):")
    for tree in trees:
        runs = [r for r in rows if r["tree"] == tree]
        slow = [r for r in runs if r["delay"] > 0]
        fast = [r for r in runs if r["delay"] == 0]
        if not slow or not fast:
            continue
        for key, label in (("move_p50", "one client"), ("crowd_p50", f"{clients} clients"),
                           ("new_p50", "new game")):
            grown = (statistics.median(r["figures"][key] for r in slow)
                     - statistics.median(r["figures"][key] for r in fast))
            trip = statistics.median(r["ping"] for r in slow) - statistics.median(
                r["ping"] for r in fast)
            print(f"  {tree:<4} {label:<16} {1000 * grown:+.2f} ms = {grown / trip:+.1f} round "
                  f"trips")


def main(argv: list[str] | None = None) -> int:
    from bench.checkouts import checkout, source_state

    parser = argparse.ArgumentParser(prog="bench.redis_rtt", description=__doc__.split("\n")[0])
    parser.add_argument("--ref", default="4eb4f08", help="a path or a git revision")
    parser.add_argument("--delay", type=float, default=0.0005, help="seconds added each way")
    parser.add_argument("--moves", type=int, default=300)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--mode", choices=MODES, default="threading")
    parser.add_argument("--pairs", type=int, default=1)
    args = parser.parse_args(argv)
    if not (0 < args.delay <= 0.05 and 1 <= args.moves <= 10_000 and 1 <= args.clients <= 200
            and 1 <= args.seconds <= 120 and 1 <= args.pairs <= 5):
        parser.error("--delay 0..0.05, --moves 1..10000, --clients 1..200, --seconds 1..120, "
                     "--pairs 1..5")
    raise_nofile()
    rows: list[dict] = []
    with contextlib.ExitStack() as stack:
        roots = {"ref": stack.enter_context(checkout(args.ref)), "new": ROOT}
        trees = {name: f"{source_state(root)}" for name, root in roots.items()}
        redis_port = stack.enter_context(redis_server())
        for pair in range(args.pairs):
            order = ("ref", "new") if pair % 2 == 0 else ("new", "ref")
            for delay in (args.delay, 0.0):
                with contextlib.ExitStack() as hop:
                    port = hop.enter_context(delay_proxy(redis_port, delay)) if delay \
                        else redis_port
                    ping = ping_p50(port)
                    for which in order:
                        note(which, f"delay {1000 * delay:.1f} ms each way, PING p50 "
                                    f"{_ms(ping)} ms")
                        figures = measure(roots[which], f"redis://127.0.0.1:{port}/0", args)
                        rows.append({"tree": which, "delay": delay, "ping": ping,
                                     "figures": figures, "clients": args.clients})
        report(rows, trees, args.clients)
    return 0


if __name__ == "__main__":
    sys.exit(main())
