"""Reading games with the solver: per-move evaluations, first mistakes, game-tree statistics."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ttt import solver
from ttt.players import tree
from ttt.rules import CELL_NAMES, FULL, Board, canonical_key

RESULT_RANK = {"loss": 0, "draw": 1, "win": 2}


def analyze(board: Board) -> dict:
    """Every legal move judged for the player to move, and the best ones (the `analyze` answer)."""
    empty = board.empty.bit_count()
    moves = [
        {"cell": cell, "result": solver.result_of(s), "plies": solver.plies_of(s, empty)}
        for cell, s in solver.move_scores(board).items()
    ]
    return {"turn": board.turn, "moves": moves, "best": list(solver.best_moves(board))}


@dataclass(frozen=True, slots=True)
class Mistake:
    """The first move of one side that made its theoretical result worse."""

    side: str             # "X" or "O"
    ply: int              # index into the move list
    cell: int             # the cell played
    before: str           # the side's result with best play before the move
    after: str            # and after it
    best: tuple[int, ...]  # the moves that would have kept `before`

    def describe(self) -> str:
        """One sentence for people."""
        options = " or ".join(f"the {CELL_NAMES[c]}" for c in self.best)
        return (f"{self.side}'s move {self.ply // 2 + 1} ({CELL_NAMES[self.cell]}) turned a "
                f"{self.before} into a {self.after}; the best was {options}.")

    def to_json(self) -> dict:
        """A plain dict for the wire."""
        return {"side": self.side, "ply": self.ply, "cell": self.cell, "before": self.before,
                "after": self.after, "best": list(self.best), "text": self.describe()}


def first_mistakes(moves: list[int] | tuple[int, ...]) -> dict[str, Mistake | None]:
    """Each side's first result-worsening move in a game's move list (None for none)."""
    found: dict[str, Mistake | None] = {"X": None, "O": None}
    board = Board()
    for ply, cell in enumerate(moves):
        side = board.turn
        after_move = board.play(cell)  # an illegal move raises the rules' IllegalMove
        assert side is not None
        if found[side] is None:
            options = solver.move_scores(board)
            before = solver.result_of(max(options.values()))
            after = solver.result_of(options[cell])
            if RESULT_RANK[after] < RESULT_RANK[before]:
                found[side] = Mistake(side, ply, cell, before, after, solver.best_moves(board))
        board = after_move
    return found


def review(moves: list[int] | tuple[int, ...]) -> dict:
    """A finished game for the replay: every position, and each side's first mistake."""
    boards = [Board()]
    for cell in moves:
        boards.append(boards[-1].play(cell))
    return {
        "positions": [str(b) for b in boards],
        "review": {side: m.to_json() if m else None for side, m in first_mistakes(moves).items()},
    }


def game_stats() -> dict:
    """Game-tree statistics, counted over the position tree (nothing typed in)."""
    t = tree()
    # paths[s] = number of distinct move sequences from the empty board to s;
    # states are numbered breadth-first, so every parent comes before its children.
    paths = [0] * len(t.keys)
    paths[0] = 1
    for s, kids in enumerate(t.children):
        for child in kids:
            paths[child] += paths[s]
    by_result: Counter[int] = Counter()
    by_length: Counter[int] = Counter()
    for s, over in enumerate(t.over):
        if over:
            by_result[over] += paths[s]
            by_length[(t.keys[s] & FULL).bit_count() + (t.keys[s] >> 9).bit_count()] += paths[s]
    canonical = {canonical_key(Board(k & FULL, k >> 9)) for k in t.keys}
    return {
        "games": sum(by_result.values()),
        "x_wins": by_result[1],
        "o_wins": by_result[2],
        "draws": by_result[3],
        "games_by_length": {str(n): by_length[n] for n in sorted(by_length)},
        "positions": len(t.keys),
        "terminal_positions": sum(1 for over in t.over if over),
        "positions_up_to_symmetry": len(canonical),
    }
