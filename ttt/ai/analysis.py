"""Reading games with the solver: per-move evaluations, first mistakes, game-tree statistics."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ttt.ai import solver
from ttt.ai.levels import tree
from ttt.rules.classic import CELL_NAMES, FULL, Board, canonical_key

RESULT_RANK = {"loss": 0, "draw": 1, "win": 2}
KINDS = (("corner", (0, 2, 6, 8)), ("edge", (1, 3, 5, 7)))


def cells_words(cells: list[int] | tuple[int, ...]) -> str:
    """Squares in few words: "the centre", "any corner", "any edge but the top", "the top"."""
    rest = sorted(set(cells))
    parts: list[str] = []
    if 4 in rest:
        parts.append("the centre")
        rest.remove(4)
    for kind, group in KINDS:
        chosen = [c for c in group if c in rest]
        missing = [c for c in group if c not in rest]
        if len(chosen) == 4:
            parts.append(f"any {kind}")
        elif len(chosen) == 3:
            parts.append(f"any {kind} but the {CELL_NAMES[missing[0]]}")
        else:
            parts += [f"the {CELL_NAMES[c]}" for c in chosen]
    if len(parts) <= 2:
        return " or ".join(parts)
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def analyze(board: Board) -> dict:
    """Every legal move judged for the player to move, and the best ones (the `analyze` answer)."""
    empty = board.empty.bit_count()
    moves = [
        {"cell": cell, "result": solver.result_of(s), "plies": solver.plies_of(s, empty)}
        for cell, s in solver.move_scores(board).items()
    ]
    best = list(solver.best_moves(board))
    losing = [m["cell"] for m in moves if m["result"] == "loss"]
    return {"turn": board.turn, "moves": moves, "best": best, "advice": advice(best, losing,
                                                                               len(moves))}


def advice(best: list[int], losing: list[int], legal: int) -> str:
    """A hint that teaches: the best squares when they are few, else the ones to avoid."""
    if not legal:
        return ""
    if len(best) == legal:
        return "Every square is as good as the others here."
    if len(best) <= 2 or len(best) <= len(losing):
        loses = f" ({cells_words(losing)} would lose)" if losing else ""
        return f"Play {cells_words(best)}{loses}."
    if not losing:
        return f"Play {cells_words(best)}: the other squares only draw."
    return f"Most squares are fine; avoid {cells_words(losing)}: that would lose."


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
        """One sentence for people, numbering moves as the move list does (1, 2, 3 …)."""
        return (f"Move {self.ply + 1}, {self.side} {CELL_NAMES[self.cell]}, turned a "
                f"{self.before} into a {self.after}; better was {cells_words(self.best)}.")

    def to_json(self) -> dict:
        """A plain dict for the wire."""
        return {"side": self.side, "ply": self.ply, "move": self.ply + 1, "cell": self.cell,
                "before": self.before, "after": self.after, "best": list(self.best),
                "better": cells_words(self.best), "text": self.describe()}


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
