"""The command line: `python -m ttt stats | arena | bench | worker | bot`."""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import NoReturn

from ttt.ai import analysis, levels, mcts, solver
from ttt.rules.classic import Board
from ttt.rules.ultimate import UltimateBoard


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line and exit status 2: no usage dump, never a traceback."""
        self.exit(2, f"ttt: error: {message}\n")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def cmd_stats(args: argparse.Namespace) -> int:
    stats = analysis.game_stats()
    if args.json:
        print(json.dumps(stats))
        return 0
    print(f"possible games      {stats['games']:>9,}")
    print(f"  X wins            {stats['x_wins']:>9,}")
    print(f"  O wins            {stats['o_wins']:>9,}")
    print(f"  draws             {stats['draws']:>9,}")
    for length, count in stats["games_by_length"].items():
        print(f"  {length} moves long      {count:>9,}")
    print(f"legal positions     {stats['positions']:>9,}")
    print(f"terminal positions  {stats['terminal_positions']:>9,}")
    print(f"up to symmetry      {stats['positions_up_to_symmetry']:>9,}")
    return 0


def _progress_bar(total: int):
    if not sys.stderr.isatty():
        return None

    def show(done: int) -> None:
        width = 30
        filled = width * done // total
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


def _fail(message: str) -> int:
    print(f"ttt: error: {message}", file=sys.stderr)
    return 2


def cmd_arena(args: argparse.Namespace) -> int:
    if args.variant == "ultimate":
        return _ultimate_arena(args)
    if args.plot:
        try:
            from ttt.ai.plot import plot_tally
        except ImportError:
            print("ttt: error: --plot needs matplotlib (pip install 'ttt[plot]')", file=sys.stderr)
            return 2
    rng = random.Random(args.seed)
    x, o = levels.player(args.x), levels.player(args.o)
    tally = levels.arena(x, o, args.games, rng, _progress_bar(args.games))
    if args.plot:
        plot_tally(tally, x.name, o.name, args.plot)
    if args.json:
        print(json.dumps({"x": x.name, "o": o.name, "games": tally.games, "x_wins": tally.x_wins,
                          "o_wins": tally.o_wins, "draws": tally.draws, "seed": args.seed}))
        return 0
    print(f"{'':10}{'games':>9}{'%':>8}")
    for label, count in ((f"X {x.name}", tally.x_wins), (f"O {o.name}", tally.o_wins),
                         ("draw", tally.draws)):
        print(f"{label:10}{count:>9,}{100 * count / tally.games:>7.1f}%")
    return 0


def _ultimate_arena(args: argparse.Namespace) -> int:
    if args.plot:
        return _fail("--plot draws the classic game's first moves; it has no ultimate chart")
    unknown = [name for name in (args.x, args.o) if name not in mcts.LEVELS]
    if unknown:
        return _fail(f"ultimate has no level {unknown[0]!r}: choose one of "
                     f"{', '.join(mcts.LEVELS)}")
    rng = random.Random(args.seed)
    x, o = mcts.player(args.x), mcts.player(args.o)
    tally = mcts.arena(x, o, args.games, rng, _progress_bar(args.games))
    if args.json:
        print(json.dumps({"variant": "ultimate", "x": x.name, "o": o.name, "games": tally.games,
                          "x_wins": tally.x_wins, "o_wins": tally.o_wins,
                          "draws": tally.draws, "seed": args.seed}))
        return 0
    print(f"{'':10}{'games':>9}{'%':>8}")
    for label, count in ((f"X {x.name}", tally.x_wins), (f"O {o.name}", tally.o_wins),
                         ("draw", tally.draws)):
        print(f"{label:10}{count:>9,}{100 * count / tally.games:>7.1f}%")
    print(f"{'moves':10}{tally.plies / tally.games:>9.1f} a game on average")
    return 0


def _best_of(runs: int, fn) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.variant == "ultimate":
        return _ultimate_bench(args)
    solve_s = _best_of(20, solver.solve)
    tree_s = _best_of(3, levels._build_tree)
    perfect, rng = levels.LEVELS["perfect"], random.Random(1)
    board = Board.parse("X...O....")
    levels.tree()
    n = 200_000
    start = time.perf_counter()
    for _ in range(n):
        perfect.choose(board, rng)
    move_s = (time.perf_counter() - start) / n
    games = 200_000
    start = time.perf_counter()
    levels.arena(perfect, levels.LEVELS["random"], games, random.Random(2))
    arena_rate = games / (time.perf_counter() - start)
    result = {
        "solve_ms": round(solve_s * 1000, 2),
        "tree_ms": round(tree_s * 1000, 2),
        "perfect_move_us": round(move_s * 1e6, 3),
        "arena_games_per_s": round(arena_rate),
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"solve all 5,478 positions from scratch  {result['solve_ms']:>10} ms (best of 20)")
    print(f"build the move tree and trap table      {result['tree_ms']:>10} ms (best of 3)")
    print(f"one perfect move once solved            {result['perfect_move_us']:>10} µs")
    print(f"arena, perfect against random           {result['arena_games_per_s']:>10,} games/s")
    return 0


def _bench_positions(count: int, rng: random.Random) -> list[UltimateBoard]:
    """`count` positions spread over whole games between easy players, the ends left out."""
    easy = mcts.LEVELS["easy"]
    pool: list[UltimateBoard] = []
    while len(pool) < 4 * count:
        board = UltimateBoard()
        while not board.is_over:
            pool.append(board)
            board = board.play(easy.choose(board, rng))
    pool = [b for b in pool if len(b.legal_moves()) > 1]
    return [pool[i * len(pool) // count] for i in range(count)]


def _percentile(times: list[float], fraction: float) -> float:
    ranked = sorted(times)
    return ranked[min(len(ranked) - 1, max(0, round(fraction * len(ranked)) - 1))]


def _ultimate_bench(args: argparse.Namespace) -> int:
    rng = random.Random(1)
    # Rates are per second of this thread's CPU time: other work on the host does not
    # change them, while the reply times below are wall-clock, what a player waits.
    playout_rate = mcts.playouts_per_second(UltimateBoard(), rng, 1.0)
    began = time.thread_time()
    mcts.search(UltimateBoard(), rng, 4000)
    search_rate = 4000 / (time.thread_time() - began)
    result: dict[str, float] = {"playouts_per_s": round(playout_rate),
                                "search_playouts_per_s": round(search_rate)}
    positions = _bench_positions(args.positions, random.Random(2))
    for level in args.levels:
        picker = mcts.LEVELS[level]
        times, cpu = [], []
        for board in positions:
            began, began_cpu = time.perf_counter(), time.thread_time()
            picker.choose(board, rng)
            times.append(time.perf_counter() - began)
            cpu.append(time.thread_time() - began_cpu)
        result[f"{level}_p50_ms"] = round(_percentile(times, 0.5) * 1000, 2)
        result[f"{level}_p95_ms"] = round(_percentile(times, 0.95) * 1000, 2)
        result[f"{level}_max_ms"] = round(max(times) * 1000, 2)
        result[f"{level}_cpu_p95_ms"] = round(_percentile(cpu, 0.95) * 1000, 2)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"random play-outs from the empty board  {result['playouts_per_s']:>10,} a CPU second")
    print(f"search play-outs, hard's opening move  {result['search_playouts_per_s']:>10,} "
          "a CPU second")
    for level in args.levels:
        label = f"{level} reply, {len(positions)} positions"
        print(f"{label:39}{result[f'{level}_p50_ms']:>7} ms p50 "
              f"{result[f'{level}_p95_ms']:>7} ms p95 {result[f'{level}_max_ms']:>7} ms max "
              f"({result[f'{level}_cpu_p95_ms']} ms p95 of CPU time)")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Search for servers on other machines: take tasks from the Redis queue until stopped."""
    import os

    from ttt.pool import workers

    url = args.redis or os.environ.get("TTT_AI_QUEUE")
    if not url or not url.startswith(("redis://", "rediss://", "unix://")):
        print("ttt: error: give the queue's Redis: --redis redis://host:6379/0 "
              "(or TTT_AI_QUEUE)", file=sys.stderr)
        return 2
    import logging

    from ttt.web.ops import logs

    logs.configure()  # TTT_LOG_FORMAT=json: RQ's lines and ours as JSON, as the servers'
    from ttt.runtime.fingerprint import code_fingerprint, release

    # The build it reports: web processes of another build send it no search (and say so).
    logging.getLogger("ttt.workers").info("searching for the queue %r on %s (build %s, "
                                          "release %s)", workers.queue_name(),
                                          url.split("@")[-1], code_fingerprint(), release())
    workers.work(url, burst=args.burst)  # RQ stops on Ctrl-C or SIGTERM after the search
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m ttt", description="Tic-tac-toe engine tools.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    stats = sub.add_parser("stats", help="game-tree statistics")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(run=cmd_stats)
    arena = sub.add_parser("arena", help="play many games between two levels")
    choices = list(dict.fromkeys([*levels.LEVELS, *mcts.LEVELS]))
    arena.add_argument("--variant", choices=["classic", "ultimate"], default="classic")
    arena.add_argument("--x", required=True, choices=choices)
    arena.add_argument("--o", required=True, choices=choices)
    arena.add_argument("--games", required=True, type=_positive)
    arena.add_argument("--seed", type=int, default=None)
    arena.add_argument("--json", action="store_true")
    arena.add_argument("--plot", metavar="FILE", help="write a PNG of the results")
    arena.set_defaults(run=cmd_arena)
    bench = sub.add_parser("bench", help="time the solver, a move and the arena (or the "
                                         "ultimate AI: play-outs and reply times)")
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--variant", choices=["classic", "ultimate"], default="classic")
    bench.add_argument("--positions", type=_positive, default=36,
                       help="ultimate: how many positions to time each level's reply on")
    bench.add_argument("--levels", nargs="+", choices=list(mcts.AI_LEVELS),
                       default=["easy", "hard"], help="ultimate: the levels to time")
    bench.set_defaults(run=cmd_bench)
    from ttt.bots import cli as bot_cli

    bot_cli.add_parser(sub)
    worker = sub.add_parser("worker", help="run AI searches from the Redis queue (TTT_AI_QUEUE) "
                                           "for servers on other machines; no web server")
    worker.add_argument("--redis", metavar="URL", help="the queue's Redis (default: "
                                                        "TTT_AI_QUEUE)")
    worker.add_argument("--burst", action="store_true", help="stop when the queue is empty")
    worker.set_defaults(run=cmd_worker)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
