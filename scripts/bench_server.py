"""The server's own cost: the game server against a bare echo server, side by side (issue 15).

    python scripts/bench_server.py [--moves 1500] [--clients 20] [--seconds 10] [--rounds 5]
                                   [--only threading|gevent] [--server-root PATH] [--quick]
                                   [--json]

For each set-up (threading: `python app.py`, Werkzeug + simple-websocket; gevent: gunicorn
-k gevent -w 1) it starts, on 127.0.0.1, the project's server (SQLite store in a temporary
directory, rate limit off) and the bare echo server of `bench.echo` (same session cookie, same
answers: it replays game answers recorded from the real server in this run, so sizes and
shapes match). Both are warmed up, then measured in interleaved rounds (game, echo, game,
echo, ...) so that drift on the machine hits both alike:

- latency: one python-socketio Client on a websocket plays perfect-AI games with random legal
  moves; `--moves` move round trips per server in all (only `move` acks are timed);
- throughput: `--clients` players (AsyncClient, over `--workers` processes) play as fast as
  answers come for `--seconds` per server in all; events (new_game + move) per second.

Then the ratios game/echo of the p50 and of the throughput. Every loop is bounded in count and
time; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (  # noqa: E402 - after the path set-up above
    MODES,
    ServerProcess,
    Skipped,
    SyncPlayer,
    close_all,
    machine_ticks,
    measure_each,
    new_report,
    note,
    percentile,
    raise_nofile,
    show,
    wire_size,
)
from bench.swarm import Swarm  # noqa: E402

CORES = os.cpu_count() or 1
PHASE_LIMIT = 300.0  # seconds: no phase of one set-up runs longer than this


def ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


def recorded_games(record: list[tuple[str, dict]], limit: int = 50) -> list[dict]:
    """Complete games (a new_game answer and its move answers) from a player's record."""
    games: list[dict] = []
    current: dict | None = None
    for event, answer in record:
        if event == "new_game":
            current = {"new_game": answer, "moves": []}
            games.append(current)
        elif current is not None:
            current["moves"].append(answer)
    done = [g for g in games if g["moves"] and g["moves"][-1]["game"].get("status") != "playing"]
    return done[:limit]


def move_bytes(record: list[tuple[str, dict]]) -> float | None:
    sizes = [wire_size(a) for e, a in record if e == "move"]
    return round(statistics.fmean(sizes), 1) if sizes else None


def source_state(root: Path) -> str:
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "ttt",
                                "app.py"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (head or "unknown") + (" + uncommitted changes" if dirty.strip() else "")


def measure_mode(mode: str, args: argparse.Namespace) -> dict:
    """Both servers of one set-up, warmed up, measured in interleaved rounds."""
    def log(text: str) -> None:
        note(mode, text)

    game = ServerProcess("game", mode, root=args.server_root).start()
    servers = [game]
    players: list[SyncPlayer] = []
    try:
        # Calibrate and warm up the game server: its answers become the echo's.
        log(f"warming up the game server ({args.warmup} moves)")
        calibrate = SyncPlayer(game.url, seed=args.seed)
        players.append(calibrate)
        calibrate.record = []
        calibrate.moves(args.warmup, time.monotonic() + PHASE_LIMIT)
        games = recorded_games(calibrate.record)
        if not games:
            raise RuntimeError("no complete game recorded from the game server")
        echo = ServerProcess("echo", mode, secret=game.secret, echo_answers=games).start()
        servers.append(echo)
        log(f"echo server up, replaying {len(games)} recorded games; warming it up")
        warm = SyncPlayer(echo.url, seed=args.seed)
        players.append(warm)
        warm.record = []
        warm.moves(args.warmup, time.monotonic() + PHASE_LIMIT)
        sizes = {"game": move_bytes(calibrate.record), "echo": move_bytes(warm.record)}
        calibrate.record = warm.record = None

        # Latency: one client per server, rounds interleaved.
        one = {s.app: SyncPlayer(s.url, seed=args.seed + 1) for s in servers}
        players += one.values()
        per_round = max(1, args.moves // args.rounds)
        deadline = time.monotonic() + PHASE_LIMIT
        for r in range(args.rounds):
            for s in servers:
                one[s.app].moves(per_round if r < args.rounds - 1
                                 else args.moves - per_round * (args.rounds - 1), deadline)
        log("latency done; throughput")

        # Throughput: --clients async players per server, rounds interleaved.
        result: dict[str, dict] = {}
        with Swarm(args.workers, seed=args.seed) as swarm:
            for s in servers:
                joined = swarm.connect(s.url, args.clients)
                if joined["failed"]:
                    raise RuntimeError(f"{s.label}: players failed to connect: {joined['failed']}")
                swarm.burst(s.url, args.warmup_seconds)
            totals = {s.app: {"events": 0, "seconds": 0.0, "errors": 0, "cpu": 0.0,
                              "machine": 0.0, "clients": 0.0, "worker_cpu": [], "lags": []}
                      for s in servers}
            for _ in range(args.rounds):
                for s in servers:
                    before, ticks = s.cpu(), machine_ticks()
                    burst = swarm.burst(s.url, args.seconds / args.rounds)
                    after, ticks2 = s.cpu(), machine_ticks()
                    t = totals[s.app]
                    t["cpu"] += (after or 0.0) - (before or 0.0)
                    t["machine"] += (ticks2[0] - ticks[0]) / max(1, ticks2[1] - ticks[1]) \
                        * CORES * burst["seconds"]
                    t["clients"] += sum(burst["worker_cpu"]) * burst["seconds"]
                    t["events"] += burst["events"]
                    t["seconds"] += burst["seconds"]
                    t["errors"] += sum(burst["errors"].values())
                    t["worker_cpu"].append(max(burst["worker_cpu"]))
                    t["lags"] += burst["lags"]
        for s in servers:
            lat, t = one[s.app].latencies, totals[s.app]
            result[s.app] = {
                "moves": len(lat),
                "p50_ms": ms(percentile(lat, 0.50)),
                "p99_ms": ms(percentile(lat, 0.99)),
                "mean_ms": ms(statistics.fmean(lat)) if lat else None,
                "events_per_s": round(t["events"] / t["seconds"], 1) if t["seconds"] else None,
                "events": t["events"],
                "failed_calls": t["errors"],
                "server_cpu_ms_per_event": round(1000 * t["cpu"] / t["events"], 3)
                if t["events"] else None,
                "server_cpu_cores": round(t["cpu"] / t["seconds"], 2) if t["seconds"] else None,
                "client_worker_cpu_max_cores": round(max(t["worker_cpu"]), 2)
                if t["worker_cpu"] else None,
                "client_loop_lag_p99_ms": ms(percentile(t["lags"], 0.99)),
                # cores that neither this server nor the clients used during the bursts
                "other_cpu_cores": round(max(0.0, t["machine"] - t["cpu"] - t["clients"])
                                         / t["seconds"], 2) if t["seconds"] else None,
                "move_answer_bytes": sizes[s.app],
                "server_tracebacks": s.tracebacks(),
            }
    finally:
        close_all(players)
        for s in servers:
            s.stop()
    g, e = result["game"], result["echo"]
    result["ratios"] = {
        "p50": round(g["p50_ms"] / e["p50_ms"], 2) if g["p50_ms"] and e["p50_ms"] else None,
        "p99": round(g["p99_ms"] / e["p99_ms"], 2) if g["p99_ms"] and e["p99_ms"] else None,
        "throughput": round(g["events_per_s"] / e["events_per_s"], 2)
        if g["events_per_s"] and e["events_per_s"] else None,
    }
    return result


def print_table(report: dict) -> None:
    a = report["args"]
    print(f"ttt bench-server  {report['date']}  {report['machine']}  server {report['server']}")
    print(f"  latency: one client, {a['moves']} moves per server in {a['rounds']} interleaved "
          f"rounds; throughput: {a['clients']} clients, {a['seconds']:g} s per server")
    print(f"  {'set-up':<10} {'server':<6} {'p50 ms':>8} {'p99 ms':>8} {'events/s':>9} "
          f"{'srv ms/ev':>9} {'srv cores':>9} {'client cores':>12} {'others':>6} "
          f"{'answer B':>8}")
    for mode, r in report["modes"].items():
        if "error" in r:
            print(f"  {mode:<10} {r['error']}")
            continue
        for app in ("game", "echo"):
            x = r[app]
            print(f"  {mode:<10} {app:<6} {x['p50_ms']:>8} {x['p99_ms']:>8} "
                  f"{x['events_per_s']:>9} {x['server_cpu_ms_per_event']:>9} "
                  f"{x['server_cpu_cores']:>9} {x['client_worker_cpu_max_cores']:>12} "
                  f"{x['other_cpu_cores']:>6} {x['move_answer_bytes']:>8}")
    for mode, r in report["modes"].items():
        if "ratios" in r:
            q = r["ratios"]
            print(f"  {mode}: ratio p50 game/echo: {q['p50']}  "
                  f"ratio throughput game/echo: {q['throughput']}  (p99 ratio {q['p99']})")
    print("  (srv ms/ev: server CPU per event during the throughput rounds; client cores: the\n"
          "   busiest client process; others: cores used meanwhile by other processes)")
    for warning in report["warnings"]:
        print(f"  ! {warning}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=1500, help="timed moves per server")
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="throughput seconds per server, over all rounds")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--warmup", type=int, default=200, help="warm-up moves per server")
    parser.add_argument("--warmup-seconds", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2, help="client processes")
    parser.add_argument("--only", choices=MODES, help="one set-up only")
    parser.add_argument("--server-root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the source tree of the game server (e.g. a git worktree)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run for tests: few moves, 4 clients, short rounds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.quick:
        args.moves, args.clients, args.seconds, args.rounds = 40, 4, 1.0, 2
        args.warmup, args.warmup_seconds, args.workers = 30, 0.2, 1
    if min(args.moves, args.clients, args.rounds, args.workers, args.warmup) < 1 \
            or not 0 < args.seconds <= 600 or args.moves > 100_000 or args.clients > 2000:
        parser.error("counts must be at least 1 (moves up to 100000, clients up to 2000) "
                     "and seconds in (0, 600]")
    if not (args.server_root / "app.py").is_file():
        parser.error(f"--server-root {args.server_root}: no app.py there")
    raise_nofile()
    report = new_report(args, "", f"{args.server_root.resolve()} @ "
                                  f"{source_state(args.server_root)}")

    def measure(index: int, mode: str) -> dict:
        if mode == "gevent" and not all(importlib.util.find_spec(m)
                                        for m in ("gunicorn", "gevent", "packaging")):
            raise Skipped("needs the prod extra (gunicorn, gevent, packaging)")
        return measure_mode(mode, args)

    status = measure_each([args.only] if args.only else list(MODES), measure, report)
    for mode, r in report["modes"].items():
        busy = [f"{app} {r[app]['other_cpu_cores']}" for app in ("game", "echo")
                if app in r and (r[app]["other_cpu_cores"] or 0) > 0.3]
        if busy:
            report["warnings"].append(f"{mode}: other processes used cores during the "
                                      f"throughput rounds ({', '.join(busy)}): run again on "
                                      "a quiet machine")
    show(report, args.json, print_table)
    return status


if __name__ == "__main__":
    sys.exit(main())
