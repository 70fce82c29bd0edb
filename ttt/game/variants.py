"""The games the server offers, each behind one small interface: classic and ultimate.

The master, the store and the pages ask a `Variant` for its board, its AI levels, its
analysis, its view's extra fields and its replay-link format, instead of testing
`if variant == ...` wherever the two games differ.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ttt.ai import analysis, levels, mcts
from ttt.rules.classic import Board, Mark, Outcome
from ttt.rules.ultimate import UltimateBoard


class GameBoard(Protocol):
    """What both boards offer: immutable, actions are cell numbers."""

    @property
    def turn(self) -> Mark | None: ...
    @property
    def is_over(self) -> bool: ...
    @property
    def ply(self) -> int: ...
    def legal_moves(self) -> tuple[int, ...]: ...
    def play(self, cell: int) -> GameBoard: ...
    def outcome(self) -> Outcome | None: ...
    def cell(self, index: int) -> str: ...


class MovePicker(Protocol):
    """An AI level: picks a legal cell with the injected rng."""

    name: str

    def choose(self, board, rng: random.Random) -> int: ...


@dataclass(frozen=True, slots=True)
class Variant:
    """One game: its board, its AI levels and what the server says about a position."""

    name: str
    cells: int                                  # cells are numbered 0..cells-1
    board: type                                 # Board or UltimateBoard
    levels: tuple[str, ...]                     # the AI levels a player may choose
    player: Callable[[str], MovePicker]         # level name -> picker; ValueError if unknown
    analyze: Callable[[GameBoard], dict]        # the `analyze` answer for a position
    review: Callable[[Sequence[int]], dict]     # a finished game for the replay page
    extra_view: Callable[[GameBoard], dict]     # fields the view adds to `board`
    separator: str                              # between cells in a replay link
    replay_prefix: str                          # the replay route: "/r/" or "/r/u/"
    instant_ai: bool                            # the AI answers in microseconds (inside a
                                                # store transaction), not in about a second

    def from_moves(self, moves: Sequence[int]) -> GameBoard:
        """The board after these cells; the rules' IllegalMove (a ValueError) for a bad one."""
        return self.board.from_moves(list(moves))

    def format_moves(self, moves: Sequence[int]) -> str:
        """The moves as a replay link's path part: '408' classic, '40.36.4' ultimate."""
        return self.separator.join(map(str, moves))  # the same text, without a generator

    def replay_path(self, moves: Sequence[int]) -> str | None:
        """The path of the replay link of these moves (None before the first move)."""
        return self.replay_prefix + self.format_moves(moves) if moves else None

    def parse_moves(self, text: str) -> list[int]:
        """A replay link's moves, checked against the rules; ValueError if they are not a game."""
        parts = text.split(self.separator) if self.separator else list(text)
        if not text or len(parts) > self.cells or not all(p.isdigit() and len(p) <= 2
                                                          for p in parts):
            raise ValueError(f"not a move list: {text!r}")
        moves = [int(p) for p in parts]
        self.from_moves(moves)
        return moves


def _ultimate_review(moves: Sequence[int]) -> dict:
    """Every position of an ultimate game (no mistakes are judged: the game is not solved)."""
    boards = [UltimateBoard()]
    for cell in moves:
        boards.append(boards[-1].play(cell))
    return {"positions": [str(b) for b in boards],
            "boards": [b.boards for b in boards],
            "next": [b.next for b in boards],
            "targets": [list(b.allowed_boards()) for b in boards],
            "review": {"X": None, "O": None}}


def _ultimate_view(board: GameBoard) -> dict:
    assert isinstance(board, UltimateBoard)
    # `targets` (PROTOCOL v4): where the side on move may play, for every receiver; the page
    # highlights these and never works out "no next means any open board" itself.
    return {"boards": board.boards, "next": board.next, "targets": list(board.allowed_boards())}


CLASSIC = Variant(
    name="classic",
    cells=9,
    board=Board,
    levels=levels.AI_LEVELS,
    player=levels.player,
    analyze=analysis.analyze,  # type: ignore[arg-type]
    review=analysis.review,
    extra_view=lambda board: {},
    separator="",
    replay_prefix="/r/",
    instant_ai=True,
)
ULTIMATE = Variant(
    name="ultimate",
    cells=81,
    board=UltimateBoard,
    levels=mcts.AI_LEVELS,
    player=mcts.player,
    # A request's budget, a quarter of the hard level's: hints and the evaluations answer in
    # about a quarter of a second, with the same scores for the same position.
    analyze=lambda board: mcts.analyze(board, playouts=3_000, seconds=0.4),  # type: ignore
    review=_ultimate_review,
    extra_view=_ultimate_view,
    separator=".",
    replay_prefix="/r/u/",
    instant_ai=False,
)
VARIANTS: dict[str, Variant] = {v.name: v for v in (CLASSIC, ULTIMATE)}


def record_key(variant: str, level: str) -> str:
    """The row of a player's record a game against the AI counts in: the classic level
    ("hard"), else "variant-level" ("ultimate-hard"). The one place the format is made: views
    and `config` carry it, so no client builds it."""
    return level if variant == CLASSIC.name else f"{variant}-{level}"


# The keys of a player's record: the classic levels, then each other variant's.
RECORD_LEVELS: tuple[str, ...] = tuple(record_key(v.name, level) for v in VARIANTS.values()
                                       for level in v.levels)

