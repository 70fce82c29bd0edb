"""Ultimate tic-tac-toe: nine small boards in a big one, behind the classic Board's interface.

A cell is numbered 9*b + c: b the small board, c the cell inside it, each 0..8 row by
row from the top left. Playing cell c of a small board sends the opponent to small
board c, or to any open board if that one is closed (won, or full with nobody's line).
Three won small boards in a row of the big board win the game; it is a draw once every
small board is closed without such a line. Pure and standard-library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ttt.rules.classic import (
    BITS,
    CELL_OF_BIT,
    FULL,
    LINE_MASKS,
    LINE_OF,
    LINES,
    CellOccupied,
    GameOver,
    IllegalMove,
    InvalidBoard,
    InvalidCell,
    Mark,
    Outcome,
    Termination,
)

# WON[mask]: whether a 9-bit mask holds a line.
WON: tuple[bool, ...] = tuple(LINE_OF[m] >= 0 for m in range(1 << 9))
# CELLS[mask]: the cell numbers (0..8) set in a 9-bit mask, lowest first.
CELLS: tuple[tuple[int, ...], ...] = tuple(
    tuple(CELL_OF_BIT[b] for b in BITS[m]) for m in range(1 << 9)
)
# COMPLETES[mask]: the cells outside the mask that would give it a line. The search
# ands it with the empty cells to find a small board (or the big board) won in one.
def _completing(mask: int) -> int:
    cells = 0
    for line in LINE_MASKS:
        if (line & mask).bit_count() == 2:
            cells |= line & ~mask
    return cells


COMPLETES: tuple[int, ...] = tuple(_completing(m) for m in range(1 << 9))
EMPTY9: tuple[int, ...] = (0,) * 9


class WrongBoard(IllegalMove):
    """A cell outside the small board the side on move must play in, or in a closed one."""


@dataclass(frozen=True, slots=True)
class UltimateBoard:
    """A position: X's and O's 9-bit mask in each small board, and where the mover must play."""

    x: tuple[int, ...] = EMPTY9
    o: tuple[int, ...] = EMPTY9
    next: int | None = None  # the small board the side on move must play in; None: any open
    x_won: int = field(default=0, init=False, compare=False, repr=False)   # small boards X won
    o_won: int = field(default=0, init=False, compare=False, repr=False)   # and O won
    closed: int = field(default=0, init=False, compare=False, repr=False)  # won or full
    ply: int = field(default=0, init=False, compare=False, repr=False)     # marks on the board

    def __post_init__(self) -> None:
        x_won = o_won = full = ply = 0
        for b in range(9):
            xb, ob = self.x[b], self.o[b]
            if WON[xb]:
                x_won |= 1 << b
            if WON[ob]:
                o_won |= 1 << b
            if xb | ob == FULL:
                full |= 1 << b
            ply += xb.bit_count() + ob.bit_count()
        object.__setattr__(self, "x_won", x_won)
        object.__setattr__(self, "o_won", o_won)
        object.__setattr__(self, "closed", x_won | o_won | full)
        object.__setattr__(self, "ply", ply)

    # --- building ---------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str, next: int | None = None) -> UltimateBoard:
        """The board drawn as 81 characters of X, O or '.' in cell order (whitespace ignored).

        Rejects what cannot arise in a game as far as marks can tell: the wrong counts, a
        small board or the big board won by both, a `next` that is closed or that the last
        move cannot have sent to.
        """
        cells = "".join(text.split()).upper()
        if len(cells) != 81 or set(cells) - {"X", "O", "."}:
            raise InvalidBoard(f"an ultimate board is 81 characters of X, O or '.', not {text!r}")
        x = tuple(sum(1 << c for c in range(9) if cells[9 * b + c] == "X") for b in range(9))
        o = tuple(sum(1 << c for c in range(9) if cells[9 * b + c] == "O") for b in range(9))
        if next is not None and (type(next) is not int or not 0 <= next <= 8):
            raise InvalidBoard(f"next is a small board 0..8 or None, not {next!r}")
        board = cls(x, o, next)
        board._check_plausible()
        return board

    @classmethod
    def from_moves(cls, moves: list[int] | tuple[int, ...]) -> UltimateBoard:
        """The board after playing these cells in order from the empty board."""
        board = cls()
        for cell in moves:
            board = board.play(cell)
        return board

    def _check_plausible(self) -> None:
        nx, no = sum(m.bit_count() for m in self.x), sum(m.bit_count() for m in self.o)
        if nx - no not in (0, 1):
            raise InvalidBoard(f"X has {nx} marks and O {no}: X moves first, then they alternate")
        if self.x_won & self.o_won:
            raise InvalidBoard("a small board has a line of each side")
        if WON[self.x_won] and WON[self.o_won]:
            raise InvalidBoard("both sides have a line of small boards")
        if self.next is None:
            return
        if self.is_over or self.closed >> self.next & 1:
            raise InvalidBoard(f"small board {self.next} is closed: nobody can be sent there")
        last = self.x if nx > no else self.o  # the side that moved last
        if not any(m >> self.next & 1 for m in last):
            raise InvalidBoard(f"no move of the last mover sends to small board {self.next}")

    # --- reading ----------------------------------------------------------------------------

    def __str__(self) -> str:
        return "".join(self.cell(i) for i in range(81))

    def cell(self, index: int) -> str:
        """'X', 'O' or '.' for one cell 0..80."""
        b, bit = index // 9, 1 << index % 9
        return "X" if self.x[b] & bit else "O" if self.o[b] & bit else "."

    @property
    def boards(self) -> str:
        """The small boards' states: 'X' or 'O' won, '-' full without a line, '.' open."""
        return "".join(
            "X" if self.x_won >> b & 1 else "O" if self.o_won >> b & 1
            else "-" if self.closed >> b & 1 else "."
            for b in range(9)
        )  # fmt: skip

    def outcome(self) -> Outcome | None:
        """The outcome if the game is over (`line` lists small boards), else None."""
        for mark, won in (("X", self.x_won), ("O", self.o_won)):
            line = LINE_OF[won]
            if line >= 0:
                return Outcome(mark, LINES[line])  # type: ignore[arg-type]
        if self.closed == FULL:
            return Outcome(None, None, Termination.FULL)
        return None

    @property
    def is_over(self) -> bool:
        """Whether somebody has three small boards in a row or every small board is closed."""
        return WON[self.x_won] or WON[self.o_won] or self.closed == FULL

    @property
    def turn(self) -> Mark | None:
        """Who moves next, or None once the game is over."""
        if self.is_over:
            return None
        return "O" if self.ply & 1 else "X"

    def allowed_boards(self) -> tuple[int, ...]:
        """The small boards the side on move may play in, or () once the game is over."""
        if self.is_over:
            return ()
        if self.next is not None:
            return (self.next,)
        return CELLS[FULL ^ self.closed]

    def legal_moves(self) -> tuple[int, ...]:
        """The cells the side on move may mark, in order, or () once the game is over."""
        return tuple(
            9 * b + c
            for b in self.allowed_boards()
            for c in CELLS[FULL ^ (self.x[b] | self.o[b])]
        )

    # --- playing ----------------------------------------------------------------------------

    def play(self, cell: int) -> UltimateBoard:
        """The board after the side on move marks this cell (0..80)."""
        if type(cell) is not int or not 0 <= cell <= 80:
            raise InvalidCell(f"cells are numbered 0 to 80, not {cell!r}")
        if self.is_over:
            raise GameOver("the game is over")
        b, c = divmod(cell, 9)
        bit = 1 << c
        if (self.x[b] | self.o[b]) & bit:
            raise CellOccupied(f"cell {cell} is taken")
        if self.closed >> b & 1:
            raise WrongBoard(f"small board {b} is closed")
        if self.next is not None and b != self.next:
            raise WrongBoard(f"the move must be in small board {self.next}, not {b}")
        x, o = self.x, self.o
        if self.ply & 1:
            o = (*o[:b], o[b] | bit, *o[b + 1:])
            mine, won = o[b], self.o_won
        else:
            x = (*x[:b], x[b] | bit, *x[b + 1:])
            mine, won = x[b], self.x_won
        closed = self.closed
        if WON[mine]:
            won |= 1 << b
            closed |= 1 << b
        elif x[b] | o[b] == FULL:
            closed |= 1 << b
        over = WON[won] or closed == FULL
        return UltimateBoard(x, o, None if over or closed >> c & 1 else c)
