"""Monte Carlo tree search for ultimate tic-tac-toe, and the AI levels built on it.

The levels (`Player`, `LEVELS`), the evaluation of a position (`analyze`) and the arena live
here; the parts are in their own modules, whose names this one gives too:

- `ttt.ai.mcts_position`: positions as bitboards relative to the side on move, the play-outs;
- `ttt.ai.mcts_search`: the tree (`Node`), UCT with proven results (MCTS-Solver), its time;
- `ttt.ai.mcts_trees`: the trees a worker keeps between a game's moves, bounded and counted;
- `ttt.ai.mcts_book`: `hard`'s opening book, computed offline (`bench/uttt_book.py`).

The randomness is always an injected `random.Random`: with a play-out budget, a seed replays
the same moves.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ttt.ai import mcts_trees
from ttt.ai.mcts_book import book_move
from ttt.ai.mcts_position import (  # noqa: F401 - the engine's names, given here too
    _any_safe,
    _playout,
    _Position,
    playouts_per_second,
    safe_moves,
)
from ttt.ai.mcts_search import (  # noqa: F401
    DOMINANT,
    EXPLORATION,
    SETTLE,
    Node,
    choice,
    most_visited,
    search,
)
from ttt.ai.mcts_trees import (  # noqa: F401
    _TREES,
    DROPPED,
    LAST_SEARCH,
    _keep_tree,
    _take_tree,
    forget_game,
    tree_report,
    tree_stats,
)
from ttt.rules.classic import GameOver
from ttt.rules.ultimate import UltimateBoard

# --- the levels -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Player:
    """A move picker: a random safe move with chance `randomness`, else the search's choice.

    A careful player always takes a game-winning move and never lets the opponent win on
    the next move when it can help it; `random` is the only careless one. `settle`: the
    search may stop early once its choice is clear (see SETTLE); `keep`: a game's tree is kept
    between its moves (when `choose` is told the game and its moves); `book`: the first moves
    come from the opening book, without a search.
    """

    name: str
    randomness: float
    playouts: int                 # the search's budget a move; 0: no search
    seconds: float | None = None  # a cap on the search's time a move, for slow hosts
    careful: bool = True
    settle: bool = False
    keep: bool = False
    reserve: float = 0.0          # of `seconds`, left for the rest of the reply (not searched)
    book: bool = False            # plays the opening book's move at once (`ttt.ai.mcts_book`)
    description: str = field(default="", compare=False)

    def choose(self, board: UltimateBoard, rng: random.Random, game: str | None = None,
               history: Sequence[int] | None = None) -> int:
        """The cell this player marks on a board where the game is still on. With `game` (an
        id) and `history` (the moves that made `board`), a `keep` player continues the game's
        kept tree and keeps the subtree of its move (a forced move keeps the tree as it is:
        the next search walks it down the moves played)."""
        moves = list(board.legal_moves())
        if not moves:
            raise GameOver("the game is over")
        if not self.careful:
            return rng.choice(moves)
        keep = self.keep and game is not None and history is not None
        wins, safe = safe_moves(board)
        if wins:
            move = rng.choice(wins)
        elif len(safe) == 1:
            move = safe[0]
        elif self.playouts == 0 or self.randomness and rng.random() < self.randomness:
            return rng.choice(safe)
        else:
            move = book_move(board) if self.book else None
            if move is None or move not in safe:
                return self._searched(board, rng, safe, game if keep else None, history)
        if keep and board.play(move).is_over:
            forget_game(game)  # type: ignore[arg-type]
        return move

    def _searched(self, board: UltimateBoard, rng: random.Random, safe: list[int],
                  game: str | None, history: Sequence[int] | None) -> int:
        """The search's move among `safe`; with `game`, from its kept tree and kept after."""
        kept = _take_tree(game, history) if game is not None else None  # type: ignore[arg-type]
        LAST_SEARCH["kept"] = kept.visits if kept else 0
        seconds = self.seconds and max(self.seconds / 2, self.seconds - self.reserve)
        root = search(board, rng, self.playouts, seconds, safe, root=kept, settle=self.settle,
                      max_nodes=mcts_trees.TREE_NODES if game is not None else None)
        LAST_SEARCH["visits"] = root.visits
        LAST_SEARCH["proven"] = root.proven >= 0
        best = choice(root)
        if game is not None:
            if board.play(best.move).is_over:  # the game ends: its tree is freed here
                DROPPED["over"] += 1
            else:
                _keep_tree(game, (*history, best.move), best)  # type: ignore[misc]
        return best.move


# Budgets set on the development machine (Python 3.11): hard's search takes at most about
# a second of one core's time in 95% of positions (`python -m ttt bench --variant
# ultimate`). `seconds` caps the wall-clock time, so a busy or slow host answers in time
# with a weaker move.
LEVELS: dict[str, Player] = {
    p.name: p
    for p in (
        Player("random", 1.0, 0, careful=False,
               description="plays any legal cell, uniformly at random"),
        Player("easy", 0.5, 40, 0.1,
               description="takes a win, blocks a loss; else half the time a random move, "
                           "half the time a 40-play-out search"),
        Player("medium", 0.1, 400, 0.5,
               description="takes a win, blocks a loss; a random move 10% of the time, "
                           "else a 400-play-out search"),
        Player("hard", 0.0, 100_000, 1.2, settle=True, keep=True, reserve=0.1,
               book=True,
               description="takes a win, blocks a loss; else a search of about a second "
                           "that proves wins and losses and keeps its tree between moves"),
    )
}
AI_LEVELS = ("easy", "medium", "hard")


def player(name: str) -> Player:
    """The ultimate player of that level name; ValueError for an unknown one."""
    try:
        return LEVELS[name]
    except KeyError:
        raise ValueError(f"unknown level {name!r}: choose one of {', '.join(LEVELS)}") from None


# --- analysis and arena -----------------------------------------------------------------------


# The visits a searched move needs before its mean is shown as a score: below that, the mean of
# a handful of random play-outs says nothing, and the move is "not evaluated".
MIN_VISITS = 50


def analyze(
    board: UltimateBoard,
    rng: random.Random | None = None,
    playouts: int | None = None,
    seconds: float | None = None,
) -> dict:
    """Every legal move with its estimated score for the side on move, and the best ones.

    A score is the mean result the search expects after that move (a win 1, a draw 1/2,
    a loss 0), given only when it is known: exact for a move that wins at once (1) or lets
    the opponent win at once (0) or whose result the search proved (1, 1/2 or 0, computed:
    not an estimate, however few its visits), else only for a move the search visited at least
    MIN_VISITS times; any other move has `"score": None` (not evaluated), never a
    placeholder. `best` is exactly the moves with the top score among those scored (none
    when that top is a loss and some move was not evaluated: it may be better).
    Each move says how often the search visited it (`visits`, 0 for a computed one).
    The budget defaults to the `hard` level's; without an rng the answer is reproducible.
    """
    moves = board.legal_moves()
    if not moves:
        return {"turn": None, "moves": [], "best": []}
    rng = rng or random.Random(0)
    if playouts is None and seconds is None:
        playouts, seconds = LEVELS["hard"].playouts, LEVELS["hard"].seconds
    pos = _Position.of(board)
    wins = pos.winning_moves()
    scores: dict[int, float | None] = dict.fromkeys(moves)
    visits = dict.fromkeys(moves, 0)
    for move in moves:
        if move in wins:
            scores[move] = 1.0
        elif not _any_safe(pos, move):
            scores[move] = 0.0  # the opponent wins at once after it: computed, not searched
    searched = [move for move in moves if scores[move] is None]
    if searched:
        root = search(board, rng, playouts, seconds, searched)
        for child in root.children:
            visits[child.move] = child.visits
            if child.proven >= 0 or child.visits >= MIN_VISITS:
                scores[child.move] = round(child.score, 3)
    scored = [score for score in scores.values() if score is not None]
    top = max(scored, default=None)
    if top == 0.0 and len(scored) < len(moves):
        top = None  # a move not evaluated may be better than a known loss: no best to name
    return {"turn": board.turn,
            "moves": [{"cell": m, "score": scores[m], "visits": visits[m]} for m in moves],
            "best": [m for m in moves if top is not None and scores[m] == top]}


@dataclass
class Tally:
    """The results of many games."""

    games: int = 0
    x_wins: int = 0
    o_wins: int = 0
    draws: int = 0
    plies: int = 0  # moves played over all games


def play_game(x: Player, o: Player, rng: random.Random) -> UltimateBoard:
    """One game of x against o from the empty board; the final board."""
    board = UltimateBoard()
    while not board.is_over:
        board = board.play((x if board.turn == "X" else o).choose(board, rng))
    return board


def arena(
    x: Player,
    o: Player,
    games: int,
    rng: random.Random,
    progress: Callable[[int], None] | None = None,
) -> Tally:
    """Play `games` games of x against o; the same rng state gives the same tally.

    The players' time caps are lifted: they play their full play-out budgets, so a busy
    machine neither weakens them nor breaks the replay.
    """
    x, o = replace(x, seconds=None), replace(o, seconds=None)
    tally = Tally()
    for played in range(1, games + 1):
        board = play_game(x, o, rng)
        outcome = board.outcome()
        assert outcome is not None
        tally.games += 1
        tally.plies += board.ply
        if outcome.winner == "X":
            tally.x_wins += 1
        elif outcome.winner == "O":
            tally.o_wins += 1
        else:
            tally.draws += 1
        if progress:
            progress(played)
    return tally
