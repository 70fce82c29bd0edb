"""Compute `hard`'s opening book for ultimate tic-tac-toe (ttt/uttt_book.json), offline.

    python -m bench.uttt_book [--playouts 200000] [--plies 2] [--jobs 2] [--known LOG]

Every position of the first `--plies` moves (the empty board, the 81 first moves, the 729
replies to them), up to the board's eight symmetries (a symmetry turns the big board and every
small board alike), is searched once by the engine's own search with a fixed play-out budget
(about ten times what `hard` searches a move), and the move it chooses is written for every
symmetric copy of that position. The budget is a play-out count, so a busy machine makes the
book slower to compute, never weaker. `--known` takes the positions a run's printed lines
already give (a run stopped half way; those keep their budget, the rest get `--playouts`).
`ttt.ai.mcts_book` reads the file; `hard` plays from it at once.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ttt.ai import mcts  # noqa: E402 - after the path set-up above
from ttt.ai.mcts_book import BOOK_PATH, key, symmetries  # noqa: E402
from ttt.rules.ultimate import UltimateBoard  # noqa: E402


def positions(plies: int) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
    """Each class of symmetric move sequences up to `plies` moves: its first member (the
    smallest) and every sequence in it."""
    classes: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    level = [()]
    for depth in range(plies + 1):
        for moves in level:
            canon = min(tuple(t[m] for m in moves) for t in symmetries())
            classes.setdefault(canon, []).append(moves)
        if depth < plies:
            level = [(*m, c) for m in level for c in UltimateBoard.from_moves(m).legal_moves()]
    return classes


def best_move(job: tuple[tuple[int, ...], int, int]) -> tuple[tuple[int, ...], int, float]:
    moves, playouts, seed = job
    board = UltimateBoard.from_moves(moves)
    root = mcts.search(board, random.Random(seed), playouts=playouts)
    best = mcts.choice(root)
    return moves, best.move, round(best.score, 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.uttt_book", description=__doc__.split("\n")[0])
    parser.add_argument("--playouts", type=int, default=200_000)
    parser.add_argument("--plies", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=str(BOOK_PATH))
    parser.add_argument("--known", default=None, help="a run's printed lines to start from")
    args = parser.parse_args(argv)
    classes = positions(args.plies)
    known = {}
    if args.known:
        for found in re.finditer(r"\[([\d, ]*)\] -> (\d+)", Path(args.known).read_text()):
            known[tuple(int(m) for m in found[1].split(",") if m.strip())] = int(found[2])
    order = sorted(classes, key=lambda m: (len(m), m))
    jobs = [(canon, args.playouts, args.seed) for canon in order if canon not in known]
    print(f"{len(jobs)} positions up to symmetry ({sum(map(len, classes.values()))} in all), "
          f"{args.playouts:,} play-outs each", flush=True)
    began, book = time.monotonic(), {}

    def write(canon: tuple[int, ...], move: int) -> None:
        for t in symmetries():
            book[key(UltimateBoard.from_moves(tuple(t[m] for m in canon)))] = t[move]

    for canon, move in known.items():
        write(canon, move)
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for done, (canon, move, score) in enumerate(pool.imap_unordered(best_move, jobs), 1):
            write(canon, move)
            print(f"  {done}/{len(jobs)} {list(canon)} -> {move} ({score})", flush=True)
    Path(args.out).write_text(json.dumps({
        "about": f"hard's opening book: the first {args.plies} moves, {len(jobs)} positions "
                 f"up to symmetry searched {args.playouts:,} play-outs each here, {len(known)} "
                 f"taken from {args.known} (python -m bench.uttt_book, "
                 f"{time.strftime('%Y-%m-%d')})",
        "moves": dict(sorted(book.items())),
    }, indent=0) + "\n")
    print(f"{len(book)} positions written to {args.out} in {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
