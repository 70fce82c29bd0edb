"""Several checkouts' servers up at once, one player each, moves alternating: CPU per event.

    python -m bench.side_by_side [--mode threading|gevent] [--events 3000] TREE [TREE ...]

Each TREE (a path, or a git revision checked out in a temporary worktree) serves from its own
process (SQLite store, rate limit off, as `make bench-server` starts it). One python-socketio
player per server plays perfect-AI games with random legal moves (the same seed for all);
the players take turns, one event each, so whatever else the machine does at a moment hits
every server alike. Per tree: the server's CPU microseconds per event (/proc/PID/stat, as
`make capacity` reads it) and the p50 of its move round trips. A busy machine blurs the
round trips more than the CPU figures; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (  # noqa: E402 - after the path set-up above
    MODES,
    ServerProcess,
    SyncPlayer,
    close_all,
    note,
    percentile,
    raise_nofile,
)


def main(argv: list[str] | None = None) -> int:
    from bench.checkouts import checkout, source_state

    parser = argparse.ArgumentParser(prog="bench.side_by_side",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", help="paths or git revisions")
    parser.add_argument("--mode", choices=MODES, default="threading")
    parser.add_argument("--events", type=int, default=3000, help="timed events per server")
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)
    if not 1 <= args.events <= 100_000 or len(args.trees) > 6:
        parser.error("--events 1..100000, at most 6 trees")
    raise_nofile()
    with contextlib.ExitStack() as stack:
        roots = [stack.enter_context(checkout(tree)) for tree in args.trees]
        servers = [stack.enter_context(ServerProcess("game", args.mode, root=root))
                   for root in roots]
        players = [SyncPlayer(s.url, seed=1) for s in servers]
        stack.callback(close_all, players)
        deadline = time.monotonic() + 600
        for player in players:
            player.moves(args.warmup, deadline)
        note(args.mode, f"{len(servers)} servers warm; {args.events} events each, alternating")
        cpu = [s.cpu() or 0.0 for s in servers]
        events = [p.events for p in players]
        moves = [len(p.latencies) for p in players]
        for _ in range(args.events):
            if time.monotonic() > deadline:
                break
            for player in players:
                player.step()
        print(f"ttt side by side, {args.mode}: one player per server, events alternating "
              f"({time.strftime('%Y-%m-%d %H:%M')})")
        for tree, root, s, p, c, e, m in zip(args.trees, roots, servers, players, cpu, events,
                                             moves, strict=True):
            done = p.events - e
            used = (s.cpu() or 0.0) - c
            p50 = percentile(p.latencies[m:], 0.5)
            print(f"  {tree:<24} {source_state(root):<28} events {done:>6}  server CPU "
                  f"{1e6 * used / max(1, done):7.1f} us/event  move p50 "
                  f"{1000 * (p50 or 0):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
