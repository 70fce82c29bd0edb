"""`hard`'s opening book for ultimate tic-tac-toe: the first moves, searched long offline.

`bench/uttt_book.py` searched every position of the first two moves (up to the board's eight
symmetries) with about ten times the play-outs `hard` spends on a move, and wrote the moves it
chose to `uttt_book.json` (package data). `hard` plays a book move at once, without a search.
A position is keyed by its marks: X's cells, then O's, each in order.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from ttt.rules.ultimate import CELLS, UltimateBoard

BOOK_PATH = Path(__file__).with_name("uttt_book.json")
# The eight symmetries of a 3x3 grid, as where each cell 0..8 goes.
_GRID = ((0, 1, 2, 3, 4, 5, 6, 7, 8), (2, 5, 8, 1, 4, 7, 0, 3, 6), (8, 7, 6, 5, 4, 3, 2, 1, 0),
         (6, 3, 0, 7, 4, 1, 8, 5, 2), (2, 1, 0, 5, 4, 3, 8, 7, 6), (6, 7, 8, 3, 4, 5, 0, 1, 2),
         (0, 3, 6, 1, 4, 7, 2, 5, 8), (8, 5, 2, 7, 4, 1, 6, 3, 0))


@cache
def symmetries() -> tuple[tuple[int, ...], ...]:
    """The board's eight symmetries as where each cell 0..80 goes (the big board and each small
    board turned alike: a move's small board and the board it sends to turn together)."""
    return tuple(tuple(9 * s[b] + s[c] for b in range(9) for c in range(9)) for s in _GRID)


def key(board: UltimateBoard) -> str:
    """The book's key of a position: X's cells, a slash, O's cells ("40/36")."""
    def cells(masks: tuple[int, ...]) -> str:
        return ",".join(str(9 * b + c) for b in range(9) for c in CELLS[masks[b]])
    return f"{cells(board.x)}/{cells(board.o)}"


@cache
def _moves() -> dict[str, int]:
    try:
        return dict(json.loads(BOOK_PATH.read_text())["moves"])
    except FileNotFoundError:  # a checkout before the book was computed: no book
        return {}


def book_move(board: UltimateBoard) -> int | None:
    """The book's move in this position, or None when it is not in the book."""
    if board.ply > 4:  # the book is a few plies deep: no lookup later in the game
        return None
    move = _moves().get(key(board))
    return move if move is not None and move in board.legal_moves() else None
