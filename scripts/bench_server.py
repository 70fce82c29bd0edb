"""The server's own cost: the game server against a bare echo server, side by side.

    python scripts/bench_server.py [--moves 1500] [--clients 20] [--seconds 10] [--rounds 5]
                                   [--only threading|gevent] [--server-root PATH] [--quick]
                                   [--json] [--ref PATH|REV [--pairs 5]]

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

`--ref` compares two checkouts: the reference (a path, or a git revision checked out
for the run in a temporary `git worktree`) and `--server-root`, measured as above in `--pairs`
pairs whose order alternates (ref first, then this tree first, ...), so the machine's drift
hits both. It prints, per set-up and checkout, the median over the pairs of the p50 ratio,
the throughput ratio and the server's CPU milliseconds per event (from /proc/PID/stat during
the throughput rounds), and each pair's figures. `make bench-compare REF=ecd23f1`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.checkouts import checkout, source_state  # noqa: E402
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


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


def compare(args: argparse.Namespace, ref: Path) -> dict:
    """`--pairs` interleaved pairs of runs of each set-up: the reference and this tree."""
    trees = {"ref": ref.resolve(), "new": args.server_root.resolve()}
    modes = [args.only] if args.only else list(MODES)
    runs: dict[str, dict[str, list[dict]]] = {m: {"ref": [], "new": []} for m in modes}
    for pair in range(args.pairs):
        order = ("ref", "new") if pair % 2 == 0 else ("new", "ref")
        for mode in modes:
            for which in order:
                note("compare", f"pair {pair + 1}/{args.pairs}, {mode}, {which}")
                one = argparse.Namespace(**{**vars(args), "server_root": trees[which]})
                try:
                    r = measure_mode(mode, one)
                except Exception as error:  # noqa: BLE001 - reported with the pair
                    r = {"error": f"failed: {type(error).__name__}: {error}"}
                runs[mode][which].append(r)
    summary: dict[str, dict] = {}
    for mode in modes:
        summary[mode] = {}
        for which in ("ref", "new"):
            ok = [r for r in runs[mode][which] if "ratios" in r]
            summary[mode][which] = {
                "runs": len(ok),
                "p50_ratio": median([r["ratios"]["p50"] for r in ok]),
                "throughput_ratio": median([r["ratios"]["throughput"] for r in ok]),
                "server_cpu_ms_per_event": median(
                    [r["game"]["server_cpu_ms_per_event"] for r in ok]),
                "echo_cpu_ms_per_event": median(
                    [r["echo"]["server_cpu_ms_per_event"] for r in ok]),
                "p50_ms": median([r["game"]["p50_ms"] for r in ok]),
                "events_per_s": median([r["game"]["events_per_s"] for r in ok]),
                "pairs": [{"p50": r["ratios"]["p50"], "throughput": r["ratios"]["throughput"],
                           "cpu_ms": r["game"]["server_cpu_ms_per_event"],
                           "others": r["game"]["other_cpu_cores"]} if "ratios" in r
                          else r for r in runs[mode][which]],
            }
    return {"trees": {k: f"{v} @ {source_state(v)}" for k, v in trees.items()},
            "summary": summary}


def print_comparison(report: dict) -> None:
    a = report["args"]
    print(f"ttt bench-server --ref  {report['date']}  {report['machine']}")
    for which, tree in report["compare"]["trees"].items():
        print(f"  {which}: {tree}")
    print(f"  {a['pairs']} pairs, order alternating; each run: {a['moves']} timed moves (one "
          f"client), {a['clients']} clients for {a['seconds']:g} s; medians over the pairs")
    print(f"  {'set-up':<10} {'tree':<4} {'runs':>4} {'p50 ratio':>9} {'thr ratio':>9} "
          f"{'srv ms/ev':>9} {'echo ms/ev':>10} {'p50 ms':>7} {'events/s':>9}")
    for mode, both in report["compare"]["summary"].items():
        for which in ("ref", "new"):
            x = both[which]
            print(f"  {mode:<10} {which:<4} {x['runs']:>4} {x['p50_ratio']!s:>9} "
                  f"{x['throughput_ratio']!s:>9} {x['server_cpu_ms_per_event']!s:>9} "
                  f"{x['echo_cpu_ms_per_event']!s:>10} {x['p50_ms']!s:>7} "
                  f"{x['events_per_s']!s:>9}")
    for mode, both in report["compare"]["summary"].items():
        for which in ("ref", "new"):
            pairs = "; ".join(
                f"{p['p50']}/{p['throughput']}/{p['cpu_ms']}" if "p50" in p else p["error"]
                for p in both[which]["pairs"])
            print(f"  {mode} {which} per pair (p50 ratio/throughput ratio/srv ms per event): "
                  f"{pairs}")
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
    parser.add_argument("--ref", help="compare with this checkout: a path or a git revision")
    parser.add_argument("--pairs", type=int, default=5, help="with --ref: interleaved pairs")
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
    if args.ref:
        if not 1 <= args.pairs <= 50:
            parser.error("--pairs must be 1 to 50")
        with checkout(args.ref) as ref:
            report["compare"] = compare(args, ref)
        if args.json:
            print(json.dumps(report), flush=True)
        else:
            print_comparison(report)
        return 0 if all(both[w]["runs"] == args.pairs
                        for both in report["compare"]["summary"].values()
                        for w in ("ref", "new")) else 1

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
