"""Perfect play: the value of every reachable position, and the best moves of any.

A score is for the player to move: a win is +(1 + empty cells left after the
winning move), a loss the negative, a draw 0, so a quicker win and a slower
loss score better. All 5,478 positions are solved once per process, lazily, on
the first question; every answer after that is a dictionary lookup.
"""

from __future__ import annotations

import sys
from functools import cache

from ttt.rules.classic import BITS, CELL_OF_BIT, FULL, LINE_OF, Board


def mover_key(board: Board) -> int:
    """The solver's key: the mover's mask above the other side's."""
    if board.x.bit_count() == board.o.bit_count():
        return board.x << 9 | board.o
    return board.o << 9 | board.x


def solve() -> dict[int, int]:
    """Score every position reachable from the empty board, keyed by mover_key."""
    scores: dict[int, int] = {}
    get = scores.get

    def negamax(me: int, opp: int) -> int:
        key = me << 9 | opp
        score = get(key)
        if score is not None:
            return score
        empty = FULL ^ (me | opp)
        if LINE_OF[opp] >= 0:  # the side that just moved has a line
            score = -1 - empty.bit_count()
        elif not empty:
            score = 0
        else:
            score = -99
            for bit in BITS[empty]:
                child = -negamax(opp, me | bit)
                if child > score:
                    score = child
        scores[key] = score
        return score

    # Depth is at most 10; the default limit is only a concern under odd hosts.
    if sys.getrecursionlimit() < 100:  # pragma: no cover
        sys.setrecursionlimit(100)
    negamax(0, 0)
    return scores


@cache
def scores() -> dict[int, int]:
    """The solved table, computed once per process."""
    return solve()


def score(board: Board) -> int:
    """The value of a position for the player to move (terminal positions included)."""
    return scores()[mover_key(board)]


def move_scores(board: Board) -> dict[int, int]:
    """Each legal move's value for the player making it."""
    table = scores()
    me, opp = (board.x, board.o) if board.turn == "X" else (board.o, board.x)
    return {
        CELL_OF_BIT[bit]: -table[opp << 9 | me | bit]
        for bit in (BITS[board.empty] if not board.is_over else ())
    }


def best_moves(board: Board) -> tuple[int, ...]:
    """The legal moves of optimal value, lowest cell first; () once the game is over."""
    moves = move_scores(board)
    if not moves:
        return ()
    top = max(moves.values())
    return tuple(cell for cell, value in moves.items() if value == top)


def result_of(score: int) -> str:
    """'win', 'draw' or 'loss' for a score."""
    return "win" if score > 0 else "loss" if score < 0 else "draw"


def plies_of(score: int, empty_before: int) -> int:
    """Moves until the end under perfect play from a score and the empty cells it started with."""
    if score == 0:
        return empty_before
    return empty_before - (abs(score) - 1)
