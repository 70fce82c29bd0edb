"""Capacity at human pace: how many players one server process holds.

    python -m bench.capacity [--only threading|gevent] [--max-players 3000] [--budget 240]
                             [--window 8] [--workers 2] [--limit-ms 100] [--refine 2]
                             [--store sqlite|memory] [--server-root PATH] [--quick] [--json]

For each set-up (threading: `python app.py`; gevent: gunicorn -k gevent -w 1) it starts the
project's server on 127.0.0.1 (SQLite in a temporary directory, rate limit off), warms it up,
and ramps up connected players, each thinking 1 to 3 s before every event (perfect-AI games,
random legal moves). At each level it lets the new players settle, then measures a window:
the p99 of the `move` round trips, the server's CPU per move (utime + stime from
/proc/PID/stat over the moves made) and its memory per connected player (resident memory
above the warmed-up server with no players, divided by the players). The ramp stops at the
first level whose p99 passes --limit-ms (or on a failed call), at --max-players, near the
open-file limit, or when the set-up's share of --budget seconds is spent; then it steps back
down (--refine times, halving the interval between the last level under the limit and the
first over it, by disconnecting players). The answer is the largest level that stayed under
the limit. `--store memory` runs the same ramp on the in-memory store, to tell the store's
share from the rest.

The players are python-socketio AsyncClients spread over --workers processes, so the client
is not what limits the count; each level reports every worker's CPU (as a share of one core)
and its event loop's lag, and the whole machine's CPU use.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

from bench.common import (
    MODES,
    ROOT,
    ServerProcess,
    SyncPlayer,
    close_all,
    machine_ticks,
    measure_each,
    new_report,
    note,
    percentile,
    raise_nofile,
    show,
    threads,
)
from bench.swarm import Swarm

THINK = (1.0, 3.0)
CORES = os.cpu_count() or 1


def next_level(players: int, p99_ms: float, limit_ms: float, cap: int) -> int:
    """Grow by half while far under the limit, by a fifth when close; multiples of 50."""
    grow = 0.5 if p99_ms < limit_ms / 2 else 0.2
    step = max(50, int(players * grow) // 50 * 50)
    return min(cap, players + step)


def measure_level(server: ServerProcess, swarm: Swarm, args: argparse.Namespace,
                  base_rss: int, settle: float) -> dict:
    """Let the players settle, then measure one window at this level."""
    time.sleep(settle)
    swarm.stats()  # the settling period is not measured
    cpu0, busy0 = server.cpu(), machine_ticks()
    time.sleep(args.window)
    window = swarm.stats()
    cpu1, busy1 = server.cpu(), machine_ticks()
    rss = server.rss_kib() or 0
    lat = window["latencies"]
    moves = len(lat)
    server_cores = (cpu1 - cpu0) / window["seconds"] if None not in (cpu0, cpu1) else None
    busy = ((busy1[0] - busy0[0]) / (busy1[1] - busy0[1]) * CORES
            if busy1[1] > busy0[1] else None)
    level = {
        "players": window["players"],
        "moves": moves,
        "events": window["events"],
        "moves_per_s": round(moves / window["seconds"], 1),
        "p50_ms": round(1000 * (percentile(lat, 0.5) or 0), 1),
        "p99_ms": round(1000 * (percentile(lat, 0.99) or 0), 1),
        "max_ms": round(1000 * max(lat), 1) if lat else None,
        "failed_calls": sum(window["errors"].values()),
        "errors": window["errors"],
        "server_cpu_ms_per_move": round(1000 * (cpu1 - cpu0) / moves, 3)
        if moves and server_cores is not None else None,
        "server_cpu_cores": round(server_cores, 2) if server_cores is not None else None,
        "server_rss_mib": round(rss / 1024, 1),
        "server_kib_per_player": round((rss - base_rss) / window["players"], 1)
        if window["players"] else None,
        "server_threads": threads(server.pid),
        "server_open_files": server.open_fds(),
        "client_worker_cpu_cores": [round(c, 2) for c in window["worker_cpu"]],
        "client_loop_lag_p99_ms": round(1000 * (percentile(window["lags"], 0.99) or 0), 1),
        "client_open_files": window["open_files"],
        "machine_busy_cores": round(busy, 2) if busy is not None else None,
        # CPU that neither the server nor the players used: other processes on the machine
        # (a test suite, a browser), which this level had to share the cores with
        "other_cpu_cores": round(max(0.0, busy - server_cores - sum(window["worker_cpu"])), 2)
        if busy is not None and server_cores is not None else None,
    }
    level["under_limit"] = (moves > 0 and level["p99_ms"] <= args.limit_ms
                            and level["failed_calls"] == 0)
    return level


def measure_mode(mode: str, args: argparse.Namespace, budget: float) -> dict:
    """Ramp up players at human pace on one server until the p99 passes the limit; then step
    back down (--refine times, halving the interval) to narrow the answer."""
    def log(text: str) -> None:
        note(mode, text)

    give_up = time.monotonic() + budget
    fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    server = ServerProcess("game", mode, root=args.server_root,
                           worker_connections=args.max_players + 200,
                           store=args.store).start()
    levels: list[dict] = []
    stopped = "max players reached"
    base_rss = 0
    try:
        warm = SyncPlayer(server.url, seed=args.seed)
        warm.moves(100, time.monotonic() + 60)
        close_all([warm])
        time.sleep(1)
        base_rss = server.rss_kib() or 0
        log(f"server warmed up, {base_rss / 1024:.1f} MiB resident")
        with Swarm(args.workers, seed=args.seed) as swarm:
            players = 0

            def go_to(target: int) -> dict | None:
                """Players to target, then measure; None when they could not all connect."""
                nonlocal players, stopped
                started = time.monotonic()
                settle = args.settle
                if target > players:
                    joined = swarm.connect(server.url, target - players, concurrency=25)
                    players = joined["players"]
                    swarm.pace(server.url, *THINK)
                    if joined["failed"]:
                        stopped = f"players failed to connect: {joined['failed']}"
                        log(stopped)
                        return None
                elif target < players:
                    players = swarm.drop(server.url, players - target)
                    settle = 2 * args.settle  # let the backlog of the level above drain
                level = measure_level(server, swarm, args, base_rss, settle)
                level["seconds"] = round(time.monotonic() - started, 1)
                levels.append(level)
                log(f"{level['players']} players: {level['moves_per_s']} moves/s, p99 "
                    f"{level['p99_ms']} ms, server {level['server_cpu_cores']} cores, clients "
                    f"{level['client_worker_cpu_cores']} cores, loop lag p99 "
                    f"{level['client_loop_lag_p99_ms']} ms, others "
                    f"{level['other_cpu_cores']} cores")
                return level

            def time_left_for_one() -> bool:
                longest = max(lv["seconds"] for lv in levels)
                return time.monotonic() + longest <= give_up

            target = min(args.start, args.max_players)
            passed, failed = 0, None
            while True:  # the ramp up: bounded by max players, open files and the budget
                level = go_to(target)
                if level is None or not server.alive():
                    stopped = stopped if level is None else "the server died"
                    break
                if not level["under_limit"]:
                    failed = target
                    stopped = (f"{level['failed_calls']} failed calls" if level["failed_calls"]
                               else "no move answered in the window" if not level["moves"]
                               else f"p99 {level['p99_ms']} ms over {args.limit_ms:g} ms")
                    break
                passed = target
                if players >= args.max_players:
                    break
                following = next_level(players, level["p99_ms"], args.limit_ms,
                                       args.max_players)
                if following + 100 > 0.9 * fd_limit:
                    stopped = f"near the open-file limit ({fd_limit})"
                    break
                if not time_left_for_one():
                    stopped = "time budget spent"
                    break
                target = following
            for _ in range(args.refine if failed else 0):  # step back into the interval
                middle = (passed + failed) // 2 // 10 * 10
                if middle <= passed or not time_left_for_one() or not server.alive():
                    break
                level = go_to(middle)
                if level is None:
                    break
                if level["under_limit"]:
                    passed = middle
                else:
                    failed = middle
    finally:
        tracebacks = server.tracebacks()
        server.stop()
    under = [lv for lv in levels if lv["under_limit"]]
    best = max(under, key=lambda lv: lv["players"]) if under else None
    over = [lv["players"] for lv in levels if not lv["under_limit"]]
    return {
        "max_players_under_limit": best["players"] if best else 0,
        "lowest_level_over": min(over) if over else None,
        "stopped": stopped,
        "at_max": best,
        "levels": levels,
        "baseline_rss_mib": round(base_rss / 1024, 1),
        "server_tracebacks": tracebacks,
    }


def print_report(report: dict) -> None:
    a = report["args"]
    print(f"ttt capacity  {report['date']}  {report['machine']}  server {report['server']}")
    print(f"  players think {THINK[0]:g}-{THINK[1]:g} s per event; p99 limit "
          f"{a['limit_ms']:g} ms; {a['window']:g} s windows; {a['workers']} client processes")
    for mode, r in report["modes"].items():
        if "error" in r:
            print(f"  {mode}: {r['error']}")
            continue
        print(f"  {mode}:  {'players':>7} {'moves/s':>7} {'p50 ms':>7} {'p99 ms':>7} "
              f"{'srv ms/move':>11} {'srv cores':>9} {'KiB/player':>10} {'client cores':>13} "
              f"{'lag p99':>7} {'others':>6}")
        for lv in r["levels"]:
            mark = " " if lv["under_limit"] else "x"
            clients = "/".join(f"{c:.2f}" for c in lv["client_worker_cpu_cores"])
            print(f"  {mark:>{len(mode) + 2}} {lv['players']:>7} {lv['moves_per_s']:>7} "
                  f"{lv['p50_ms']:>7} {lv['p99_ms']:>7} {lv['server_cpu_ms_per_move']!s:>11} "
                  f"{lv['server_cpu_cores']!s:>9} {lv['server_kib_per_player']!s:>10} "
                  f"{clients:>13} {lv['client_loop_lag_p99_ms']:>7} "
                  f"{lv['other_cpu_cores']!s:>6}")
        best = r["at_max"]
        line = f"  {mode}: capacity {r['max_players_under_limit']} players under the limit"
        if best:
            line += (f" (server {best['server_cpu_ms_per_move']} ms CPU per move, "
                     f"{best['server_kib_per_player']} KiB per player)")
        if r["lowest_level_over"]:
            line += f"; {r['lowest_level_over']} were over"
        print(line + f"; stopped: {r['stopped']}")
    print("  (cores: CPU time over the window; client cores: each client process; lag: the\n"
          "   clients' event loop lateness; others: cores used by other processes meanwhile)")
    for warning in report["warnings"]:
        print(f"  ! {warning}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=MODES)
    parser.add_argument("--start", type=int, default=100, help="first level (players)")
    parser.add_argument("--max-players", type=int, default=3000)
    parser.add_argument("--limit-ms", type=float, default=100.0, help="p99 move round trip")
    parser.add_argument("--window", type=float, default=8.0, help="seconds measured per level")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before a window")
    parser.add_argument("--refine", type=int, default=2,
                        help="steps back down between the last level under the limit and "
                             "the first over it (default 2)")
    parser.add_argument("--budget", type=float, default=240.0,
                        help="seconds for the whole run, shared by the set-ups")
    parser.add_argument("--workers", type=int, default=2, help="client processes")
    parser.add_argument("--server-root", type=Path, default=ROOT)
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite",
                        help="the server's store (default SQLite, as deployed)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run for tests: 4 then 8 players, short windows")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.start, args.max_players, args.window, args.settle = 4, 8, 3.0, 1.0
        args.budget, args.workers, args.refine = 40.0, 1, 0
    if not (1 <= args.start <= args.max_players <= 20_000 and 1 <= args.workers <= 16
            and 0 < args.window <= 120 and 0 <= args.settle <= 60
            and 10 <= args.budget <= 1800 and args.limit_ms > 0 and 0 <= args.refine <= 5):
        parser.error("out of range: 1 <= start <= max-players <= 20000, 1..16 workers, "
                     "window in (0, 120], settle in [0, 60], budget in [10, 1800]")
    if not (args.server_root / "app.py").is_file():
        parser.error(f"--server-root {args.server_root}: no app.py there")
    soft, hard = raise_nofile()
    modes = [args.only] if args.only else list(MODES)
    report = new_report(args, f", open files {soft}/{hard}",
                        f"{args.server_root.resolve()}, {args.store} store")
    started = time.monotonic()

    def measure(index: int, mode: str) -> dict:  # each set-up its share of the time left
        share = (args.budget - (time.monotonic() - started)) / (len(modes) - index)
        return measure_mode(mode, args, share)

    status = measure_each(modes, measure, report)
    for mode, r in report["modes"].items():
        shared = [lv for lv in r.get("levels", []) if (lv["other_cpu_cores"] or 0) > 0.3]
        if shared:
            report["warnings"].append(
                f"{mode}: {len(shared)} of {len(r['levels'])} levels shared the machine with "
                f"other processes (up to {max(lv['other_cpu_cores'] for lv in shared)} "
                "cores): run again on a quiet machine")
    show(report, args.json, print_report)
    return status


if __name__ == "__main__":
    sys.exit(main())
