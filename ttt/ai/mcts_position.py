"""Positions and play-outs of the ultimate search (`ttt.ai.mcts`): bitboards, and random games.

Positions live in the search as bitboards relative to the side on move (its nine masks, the
other side's, the small boards each side won, the closed ones, where the mover must play) and
are rebuilt along the path on every iteration, so the tree's nodes hold no boards. Play-outs
take a game-winning move whenever the mover has one, which costs two table lookups a move and
makes them judge tactics far better. The randomness is always an injected callable.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from ttt.rules.classic import FULL
from ttt.rules.ultimate import CELLS, COMPLETES, WON, UltimateBoard


class _Position:
    """A mutable position relative to the side on move, for the search only."""

    __slots__ = ("me", "opp", "won_me", "won_opp", "closed", "next", "result")

    def __init__(self, me: list[int], opp: list[int], won_me: int, won_opp: int, closed: int,
                 next_board: int, result: float) -> None:
        self.me, self.opp = me, opp
        self.won_me, self.won_opp = won_me, won_opp
        self.closed, self.next = closed, next_board  # next: -1 for any open board
        self.result = result  # the last mover's reward once over (1 a win, 0.5 a draw); else -1

    @classmethod
    def of(cls, board: UltimateBoard) -> _Position:
        if board.ply & 1:
            me, opp, won_me, won_opp = board.o, board.x, board.o_won, board.x_won
        else:
            me, opp, won_me, won_opp = board.x, board.o, board.x_won, board.o_won
        outcome = board.outcome()
        result = -1.0 if outcome is None else 0.5 if outcome.winner is None else 1.0
        nxt = -1 if board.next is None else board.next
        return cls(list(me), list(opp), won_me, won_opp, board.closed, nxt, result)

    def copy(self) -> _Position:
        return _Position(self.me[:], self.opp[:], self.won_me, self.won_opp, self.closed,
                         self.next, self.result)

    def moves(self) -> list[int]:
        """The legal cells, or [] once the game is over."""
        if self.result >= 0:
            return []
        me, opp = self.me, self.opp
        boards = (self.next,) if self.next >= 0 else CELLS[FULL ^ self.closed]
        return [9 * b + c for b in boards for c in CELLS[FULL ^ (me[b] | opp[b])]]

    def play(self, cell: int) -> None:
        """Mark a legal cell for the side on move; the other side is then on move."""
        b, c = divmod(cell, 9)
        me = self.me
        mine = me[b] | 1 << c
        me[b] = mine
        closed, won = self.closed, self.won_me
        if WON[mine]:
            won |= 1 << b
            closed |= 1 << b
            if WON[won]:
                self.result = 1.0
        elif mine | self.opp[b] == FULL:
            closed |= 1 << b
        if closed == FULL and self.result < 0:
            self.result = 0.5
        self.me, self.opp = self.opp, me
        self.won_me, self.won_opp = self.won_opp, won
        self.closed = closed
        self.next = -1 if closed >> c & 1 else c

    def winning_moves(self) -> list[int]:
        """The cells that win the game for the side on move at once."""
        if self.result >= 0:
            return []
        me, opp = self.me, self.opp
        # Small boards whose win would complete a line of small boards for the mover.
        threats = COMPLETES[self.won_me] & ~self.closed
        if not threats:
            return []
        boards = (self.next,) if self.next >= 0 else CELLS[threats]
        return [9 * b + c for b in boards if threats >> b & 1
                for c in CELLS[COMPLETES[me[b]] & ~opp[b] & FULL]]


def _playout(pos: _Position, rnd: Callable[[], float]) -> float:
    """Finish the game at random (a game-winning move always taken); the mover's reward.

    Inside a small board a move takes a line there when it can, else blocks the other side's
    line in one when it can, else is a random empty cell: two table lookups a move, and
    play-outs that judge small boards far better (`SMART`; measured per second, not per
    play-out, against uniformly random cells: docs/benchmarks.md, bench.uttt)."""
    me, opp, won_me, won_opp = pos.me, pos.opp, pos.won_me, pos.won_opp
    closed, nxt = pos.closed, pos.next
    reward = 1.0  # of the side now on move, for a win; flipped at every move
    while True:
        threats = COMPLETES[won_me] & ~closed
        if threats:
            if nxt >= 0:
                if threats >> nxt & 1 and COMPLETES[me[nxt]] & ~opp[nxt]:
                    return reward
            else:
                for b in CELLS[threats]:
                    if COMPLETES[me[b]] & ~opp[b]:
                        return reward
        if nxt < 0:
            boards = CELLS[FULL ^ closed]
            b = boards[int(rnd() * len(boards))]
        else:
            b = nxt
        mine, theirs = me[b], opp[b]
        empty = FULL ^ (mine | theirs)
        pick = COMPLETES[mine] & empty or COMPLETES[theirs] & empty or empty
        cells = CELLS[pick]
        c = cells[int(rnd() * len(cells))]
        mine |= 1 << c
        me[b] = mine
        if WON[mine]:
            won_me |= 1 << b
            closed |= 1 << b
            if WON[won_me]:  # the threat check above makes this rare
                return reward
        elif mine | theirs == FULL:
            closed |= 1 << b
        if closed == FULL:
            return 0.5
        nxt = -1 if closed >> c & 1 else c
        me, opp, won_me, won_opp = opp, me, won_opp, won_me
        reward = 1.0 - reward


def playouts_per_second(board: UltimateBoard, rng: random.Random, seconds: float) -> float:
    """How many play-outs from this board fit in a second of this thread's CPU time."""
    start = _Position.of(board)
    done, began = 0, time.thread_time()
    while time.thread_time() - began < seconds:
        for _ in range(100):
            _playout(start.copy(), rng.random)
        done += 100
    return done / (time.thread_time() - began)


def safe_moves(board: UltimateBoard) -> tuple[list[int], list[int]]:
    """The moves that win at once, and the moves after which the opponent cannot win at once.

    When every move lets the opponent win at once, the second list holds all of them.
    """
    pos = _Position.of(board)
    wins = pos.winning_moves()
    moves = pos.moves()
    safe = [move for move in moves if _any_safe(pos, move)]
    return wins, safe or moves


def _any_safe(pos: _Position, move: int) -> bool:
    """Whether the opponent cannot win at once after `move`."""
    after = pos.copy()
    after.play(move)
    return after.result >= 0 or not after.winning_moves()
