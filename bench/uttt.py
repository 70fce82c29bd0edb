"""An ultimate level against a textbook UCT reference (or another level), in process.

    python -m bench.uttt --level hard --ref 24000 --games 20 [--jobs 2] [--seed 1]
    python -m bench.uttt --level medium --vs easy --games 20

The reference is plain UCT from the textbook: UCB1 with c = sqrt(2) on rewards in 0..1, one
node added per iteration (an untried move at random), uniformly random play-outs to the end,
a fixed number of play-outs a move, a fresh tree every move, the most visited move played. It
knows the rules and nothing else. Its strength is a play-out count, so a busy machine slows it
but never weakens it.

The level plays as the server plays it: each move through `ttt.pool.thinker.search`, the function a
worker runs, with the seconds the scheduler gives that level when nobody waits (wall-clock: a
loaded machine weakens it) and the game's id, so whatever the worker keeps between moves of a
game is kept here too. Games come in pairs on the same opening (one or two seeded random moves),
the level X in one and O in the other. Printed: the level's score (a win 1, a draw 1/2), wins,
draws and losses, its reply times (p50, p95, max), and the machine's load average.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ttt.ai.mcts import _Position  # noqa: E402 - after the path set-up above
from ttt.rules.classic import FULL  # noqa: E402
from ttt.rules.ultimate import CELLS, WON, UltimateBoard  # noqa: E402

C = math.sqrt(2)


def _random_playout(pos: _Position, rnd) -> float:
    """Uniformly random moves to the end; the reward of the side on move at the start."""
    me, opp, won_me, won_opp = pos.me, pos.opp, pos.won_me, pos.won_opp
    closed, nxt = pos.closed, pos.next
    reward = 1.0
    while True:
        if nxt < 0:
            boards = CELLS[FULL ^ closed]
            b = boards[int(rnd() * len(boards))]
        else:
            b = nxt
        mine = me[b]
        cells = CELLS[FULL ^ (mine | opp[b])]
        c = cells[int(rnd() * len(cells))]
        mine |= 1 << c
        me[b] = mine
        if WON[mine]:
            won_me |= 1 << b
            closed |= 1 << b
            if WON[won_me]:
                return reward
        elif mine | opp[b] == FULL:
            closed |= 1 << b
        if closed == FULL:
            return 0.5
        nxt = -1 if closed >> c & 1 else c
        me, opp, won_me, won_opp = opp, me, won_opp, won_me
        reward = 1.0 - reward


class _Node:
    __slots__ = ("move", "parent", "children", "untried", "visits", "reward")

    def __init__(self, move: int, parent: _Node | None, untried: list[int]) -> None:
        self.move, self.parent, self.children, self.untried = move, parent, [], untried
        self.visits, self.reward = 0, 0.0


def uct_move(board: UltimateBoard, playouts: int, rng: random.Random) -> int:
    """The textbook UCT player's move: `playouts` iterations, the most visited root move."""
    start = _Position.of(board)
    root = _Node(-1, None, start.moves())
    rnd, sqrt, log = rng.random, math.sqrt, math.log
    for _ in range(playouts):
        pos = start.copy()
        node = root
        while not node.untried and node.children:
            explore = C * sqrt(log(node.visits))
            best, best_value = node.children[0], -1.0
            for child in node.children:
                value = child.reward / child.visits + explore / sqrt(child.visits)
                if value > best_value:
                    best, best_value = child, value
            node = best
            pos.play(node.move)
        if node.untried:
            untried = node.untried
            i = int(rnd() * len(untried))
            untried[i], untried[-1] = untried[-1], untried[i]
            move = untried.pop()
            pos.play(move)
            child = _Node(move, node, pos.moves())
            node.children.append(child)
            node = child
        reward = pos.result if pos.result >= 0 else 1.0 - _random_playout(pos, rnd)
        while node is not None:
            node.visits += 1
            node.reward += reward
            reward = 1.0 - reward
            node = node.parent
    return max(root.children, key=lambda n: n.visits).move


def _opening(seed: int, pair: int, plies: int) -> list[int]:
    rng = random.Random(seed * 100_003 + pair)
    board, moves = UltimateBoard(), []
    for _ in range(plies):
        move = rng.choice(board.legal_moves())
        moves.append(move)
        board = board.play(move)
    return moves


def play(job: tuple) -> dict:
    """One game: the level against the reference (playouts) or another level; its record."""
    from ttt.ai import mcts, mcts_search
    from ttt.pool import thinker

    index, level, ref, vs, seed, plies, cpu = job
    clock = time.thread_time if cpu else time.perf_counter
    if cpu:  # the level's seconds counted in this process's CPU time, as on a quiet machine
        mcts_search.CLOCK = time.thread_time
    level_is_x = index % 2 == 0
    moves = _opening(seed, index // 2, 1 + (index // 2) % plies if plies else 0)
    board = UltimateBoard.from_moves(moves)
    rng = random.Random(seed * 7919 + index)
    game = f"bench-{seed}-{index}"
    replies: list[float] = []
    searched: list[int] = []  # the level's play-outs a move (its own, the kept visits aside)

    def by_level(name: str, own: bool) -> int:
        task = thinker.Task("move", "ultimate", tuple(moves), name, rng.randrange(1 << 30))
        began = clock()
        move = thinker.search({**task.as_json(), "game": f"{game}-{name}-{own}"},
                              task.full_budget())
        if own:
            replies.append(clock() - began)
            last = getattr(mcts, "LAST_SEARCH", None)
            if last is not None and last.get("visits"):
                searched.append(int(last["visits"]) - int(last["kept"]))
                last["visits"] = 0
        return move

    while not board.is_over:
        if (board.turn == "X") == level_is_x:
            move = by_level(level, True)
        elif vs:
            move = by_level(vs, False)
        else:
            move = uct_move(board, ref, rng)
        moves.append(move)
        board = board.play(move)
    outcome = board.outcome()
    assert outcome is not None
    mark = "X" if level_is_x else "O"
    forget = getattr(mcts, "forget_game", None)  # a finished game's trees, as a worker drops them
    if forget:
        for name in (level, vs):
            forget(f"{game}-{name}-{name == level}")
    result = 0.5 if outcome.winner is None else 1.0 if outcome.winner == mark else 0.0
    return {"index": index, "result": result, "replies": replies, "plies": board.ply,
            "searched": searched}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.uttt", description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", default="hard")
    parser.add_argument("--ref", type=int, default=24_000, help="the reference's play-outs")
    parser.add_argument("--vs", default=None, help="another level instead of the reference")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--opening", type=int, default=2, help="random opening plies, 1..N")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop then, and report the games finished (a busy machine)")
    parser.add_argument("--cpu", action="store_true",
                        help="count the level's seconds (and reply times) in CPU time: the "
                             "level as a quiet machine runs it, however busy this one is")
    args = parser.parse_args(argv)
    if not 1 <= args.games <= 1000 or not 1 <= args.jobs <= 16:
        parser.error("--games 1..1000, --jobs 1..16")
    jobs = [(i, args.level, args.ref, args.vs, args.seed, args.opening, args.cpu)
            for i in range(args.games)]
    load_before = os.getloadavg()
    began = time.monotonic()
    results, replies, searched = [], [], []
    against = args.vs or f"UCT {args.ref:,} play-outs"
    stop = None if args.minutes is None else began + 60 * args.minutes
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=1) as pool:
        records = pool.imap_unordered(play, jobs)
        while len(results) < len(jobs):
            try:
                record = records.next(None if stop is None else max(0.1, stop - time.monotonic()))
            except multiprocessing.TimeoutError:
                print(f"  out of time: {len(jobs) - len(results)} games left unfinished")
                pool.terminate()
                break
            results.append(record)
            replies += record["replies"]
            searched += record["searched"]
            mark = {1.0: "W", 0.5: "D", 0.0: "L"}[record["result"]]
            print(f"  game {record['index']:>3} ({'X' if record['index'] % 2 == 0 else 'O'}) "
                  f"{mark} in {record['plies']} plies", flush=True)
    wins = sum(r["result"] == 1.0 for r in results)
    draws = sum(r["result"] == 0.5 for r in results)
    losses = len(results) - wins - draws
    score = wins + draws / 2
    load_after = os.getloadavg()
    print(f"ttt bench-uttt: {args.level} vs {against}, {len(results)} games"
          f"{'' if len(results) == len(jobs) else f' of {len(jobs)} (out of time)'}, "
          f"{args.jobs} at once, seed {args.seed} ({time.strftime('%Y-%m-%d %H:%M')}, "
          f"{time.monotonic() - began:.0f} s)")
    print(f"  score {score:g}/{len(results)}   W/D/L {wins}/{draws}/{losses}   "
          f"{args.level} reply{' (CPU)' if args.cpu else ''} p50 {percentile(replies, 0.5):.2f} s  "
          f"p95 {percentile(replies, 0.95):.2f} s  max {max(replies, default=0):.2f} s "
          f"({len(replies)} replies)")
    if searched:
        print(f"  {args.level}'s searches: play-outs a move p50 {percentile(searched, 0.5):,.0f}, "
              f"p5 {percentile(searched, 0.05):,.0f} ({len(searched)} searches; the visits "
              f"kept from the move before not counted)")
    print(f"  load average before {load_before[0]:.2f} {load_before[1]:.2f}, after "
          f"{load_after[0]:.2f} {load_after[1]:.2f} ({os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
