"""The rules of tic-tac-toe: an immutable board, turns, legal moves, play and outcome.

Cells are numbered 0 to 8, row by row from the top left. X moves first.
Pure and standard-library only: everything else in the project imports this.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

Mark = Literal["X", "O"]

FULL = 0b111_111_111
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2), (3, 4, 5), (6, 7, 8),  # rows
    (0, 3, 6), (1, 4, 7), (2, 5, 8),  # columns
    (0, 4, 8), (2, 4, 6),             # diagonals
)  # fmt: skip
LINE_MASKS: tuple[int, ...] = tuple(sum(1 << c for c in line) for line in LINES)


def _first_line(mask: int) -> int:
    for i, line in enumerate(LINE_MASKS):
        if mask & line == line:
            return i
    return -1


# LINE_OF[mask] is the index of the first line the 9-bit mask holds, or -1:
# one table lookup instead of eight tests, which the solver leans on.
LINE_OF: tuple[int, ...] = tuple(_first_line(m) for m in range(1 << 9))
# BITS[mask] lists the single-bit masks set in a 9-bit mask, lowest cell first.
BITS: tuple[tuple[int, ...], ...] = tuple(
    tuple(1 << c for c in range(9) if m >> c & 1) for m in range(1 << 9)
)
CELL_OF_BIT: dict[int, int] = {1 << c: c for c in range(9)}


class InvalidBoard(ValueError):
    """A board that cannot arise in a game."""


class IllegalMove(ValueError):
    """A move the rules do not allow."""


class InvalidCell(IllegalMove):
    """A cell number outside 0..8."""


class CellOccupied(IllegalMove):
    """The cell already holds a mark."""


class GameOver(IllegalMove):
    """The game has already ended."""


class Termination(StrEnum):
    """How a game ended; the value is the wire's `reason` where one is sent."""

    LINE = "line"      # three in a row on the board
    FULL = "full"      # the board filled up with no line: a draw
    CLAIM = "claim"    # the opponent was away long enough
    RESIGN = "resign"
    TIME = "time"      # the side on move ran out of time
    ABORT = "abort"    # called off: no result
    NO_START = "no_start"    # a timed game's first move did not come in time: no result
    ABANDONED = "abandoned"  # a pass-and-play game left for another one: no result


_TEXTS: dict[int, str] = {}  # Board.__str__ by the board's key


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished game ended: the winner (None for a draw or an abort), the winning line
    when the board has one, and the termination (python-chess's shape)."""

    winner: Mark | None
    line: tuple[int, ...] | None
    termination: Termination = Termination.LINE

    @property
    def result(self) -> str:
        """'X', 'O' or 'draw'."""
        return self.winner or "draw"


@dataclass(frozen=True, slots=True)
class Board:
    """A position: the cells held by X and by O as 9-bit masks."""

    x: int = 0
    o: int = 0

    @classmethod
    def parse(cls, text: str) -> Board:
        """The board drawn as 9 characters of X, O or '.'; rejects impossible boards."""
        cells = "".join(text.split()).upper()
        if len(cells) != 9 or set(cells) - {"X", "O", "."}:
            raise InvalidBoard(f"a board is 9 characters of X, O or '.', not {text!r}")
        x = sum(1 << i for i, ch in enumerate(cells) if ch == "X")
        o = sum(1 << i for i, ch in enumerate(cells) if ch == "O")
        board = cls(x, o)
        board._check_reachable()
        return board

    @classmethod
    def from_moves(cls, moves: list[int] | tuple[int, ...]) -> Board:
        """The board after playing these cells in order from the empty board."""
        board = cls()
        for cell in moves:
            board = board.play(cell)
        return board

    def _check_reachable(self) -> None:
        nx, no = self.x.bit_count(), self.o.bit_count()
        if nx - no not in (0, 1):
            raise InvalidBoard(f"X has {nx} marks and O {no}: X moves first, then they alternate")
        x_won, o_won = LINE_OF[self.x] >= 0, LINE_OF[self.o] >= 0
        if x_won and o_won:
            raise InvalidBoard("both sides have a line")
        if x_won and nx == no or o_won and nx != no:
            raise InvalidBoard("a move was played after the game was won")
        winner = self.x if x_won else self.o if o_won else 0
        # The winner's last mark must be one whose removal leaves no line;
        # otherwise play went on after the win.
        if winner and all(LINE_OF[winner ^ bit] >= 0 for bit in BITS[winner]):
            raise InvalidBoard("a move was played after the game was won")

    def __str__(self) -> str:
        key = self.x | self.o << 9
        text = _TEXTS.get(key)
        if text is None:  # at most 3**9 positions, each spelled once (every view asks)
            text = _TEXTS[key] = "".join([self.cell(i) for i in range(9)])
        return text

    def cell(self, index: int) -> str:
        """'X', 'O' or '.' for one cell."""
        bit = 1 << index
        return "X" if self.x & bit else "O" if self.o & bit else "."

    @property
    def key(self) -> int:
        """A small int that identifies the position (x | o << 9)."""
        return self.x | self.o << 9

    @property
    def empty(self) -> int:
        """The mask of empty cells."""
        return FULL ^ (self.x | self.o)

    @property
    def ply(self) -> int:
        """How many marks are on the board."""
        return (self.x | self.o).bit_count()

    def outcome(self) -> Outcome | None:
        """The outcome if the game is over, else None."""
        for mark, mask in (("X", self.x), ("O", self.o)):
            line = LINE_OF[mask]
            if line >= 0:
                return Outcome(mark, LINES[line])  # type: ignore[arg-type]
        if not self.empty:
            return Outcome(None, None, Termination.FULL)
        return None

    @property
    def is_over(self) -> bool:
        """Whether somebody has a line or the board is full."""
        return LINE_OF[self.x] >= 0 or LINE_OF[self.o] >= 0 or not self.empty

    @property
    def turn(self) -> Mark | None:
        """Who moves next, or None once the game is over."""
        if self.is_over:
            return None
        return "X" if self.x.bit_count() == self.o.bit_count() else "O"

    def legal_moves(self) -> tuple[int, ...]:
        """The empty cells, in order, or () once the game is over."""
        if self.is_over:
            return ()
        return tuple(CELL_OF_BIT[b] for b in BITS[self.empty])

    def play(self, cell: int) -> Board:
        """The board after the player on turn marks this cell."""
        if type(cell) is not int or not 0 <= cell <= 8:
            raise InvalidCell(f"cells are numbered 0 to 8, not {cell!r}")
        if self.is_over:
            raise GameOver("the game is over")
        bit = 1 << cell
        if (self.x | self.o) & bit:
            raise CellOccupied(f"cell {cell} is taken")
        if self.x.bit_count() == self.o.bit_count():
            return Board(self.x | bit, self.o)
        return Board(self.x, self.o | bit)


# The eight symmetries of the square, each as a map from cell to cell.
SYMMETRIES: tuple[tuple[int, ...], ...] = tuple(
    tuple(perm)
    for perm in (
        (0, 1, 2, 3, 4, 5, 6, 7, 8),
        (6, 3, 0, 7, 4, 1, 8, 5, 2),
        (8, 7, 6, 5, 4, 3, 2, 1, 0),
        (2, 5, 8, 1, 4, 7, 0, 3, 6),
        (2, 1, 0, 5, 4, 3, 8, 7, 6),
        (6, 7, 8, 3, 4, 5, 0, 1, 2),
        (0, 3, 6, 1, 4, 7, 2, 5, 8),
        (8, 5, 2, 7, 4, 1, 6, 3, 0),
    )
)


def canonical_key(board: Board) -> int:
    """The smallest key among the board's eight symmetric images."""
    best = None
    for perm in SYMMETRIES:
        x = sum(1 << perm[c] for c in range(9) if board.x >> c & 1)
        o = sum(1 << perm[c] for c in range(9) if board.o >> c & 1)
        key = x | o << 9
        if best is None or key < best:
            best = key
    assert best is not None
    return best


CELL_NAMES = (
    "top left", "top", "top right",
    "left", "centre", "right",
    "bottom left", "bottom", "bottom right",
)  # fmt: skip
