"""Monte Carlo tree search for ultimate tic-tac-toe, and the AI levels built on it.

The search is plain UCT: walk down the tree by the UCB1 rule, add one node, finish the
game with a random play-out, and credit the result up the path (1 a win, 1/2 a draw).
Play-outs take a game-winning move whenever the mover has one, which costs two table
lookups a move and makes them judge tactics far better. Positions live in the search as
bitboards relative to the side on move (its nine masks, the other side's, the small
boards each side won, the closed ones, where the mover must play) and are rebuilt along
the path on every iteration, so nodes hold no boards. The randomness is always an
injected `random.Random`: with a play-out budget, a seed replays the same moves.
"""

from __future__ import annotations

import math
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ttt.rules import FULL, GameOver
from ttt.ultimate import CELLS, COMPLETES, WON, UltimateBoard

# The clock of a search's `seconds`: wall-clock (a busy host answers in time with a weaker move).
# `bench.uttt --cpu` sets this thread's CPU time instead, to measure a level as a quiet machine
# would run it while other work shares the cores.
CLOCK: Callable[[], float] = time.perf_counter
EXPLORATION = 0.5  # the UCB1 constant for rewards in 0..1: beat 0.3, 0.7, 1.0 and 1.4 in arenas


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
    play-out, against uniformly random cells in `bench.uttt`'s notes in the README)."""
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


def _plain_playout(pos: _Position, rnd: Callable[[], float]) -> float:
    """The play-out before small-board tactics (a game-winning move taken, else any cell at
    random): kept to measure the smart one against, per second."""
    me, opp, won_me, won_opp = pos.me, pos.opp, pos.won_me, pos.won_opp
    closed, nxt = pos.closed, pos.next
    reward = 1.0
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


def playouts_per_second(board: UltimateBoard, rng: random.Random, seconds: float) -> float:
    """How many play-outs from this board fit in a second of this thread's CPU time."""
    start = _Position.of(board)
    done, began = 0, time.thread_time()
    while time.thread_time() - began < seconds:
        for _ in range(100):
            _playout(start.copy(), rng.random)
        done += 100
    return done / (time.thread_time() - began)


class Node:
    """One move in the search tree, with its visits and the reward of the side that made it.

    Nodes hold no link to their parent (the search walks back along its path): a tree is a
    tree of references, freed by reference counting the moment it is dropped. `proven` is the
    result of that side once the search proved it (MCTS-Solver): 1 a win, 0.5 a draw, 0 a
    loss, whatever either side plays after; -1 while unknown.
    """

    __slots__ = ("move", "children", "untried", "visits", "reward", "proven")

    def __init__(self, move: int, untried: list[int]) -> None:
        self.move = move
        self.children: list[Node] = []
        self.untried = untried
        self.visits = 0
        self.reward = 0.0
        self.proven = -1.0

    @property
    def score(self) -> float:
        """The mean reward of the side that made this move (0..1, a draw counts a half); the
        proven result once there is one."""
        if self.proven >= 0:
            return self.proven
        return self.reward / self.visits if self.visits else 0.5


def _prove(node: Node) -> bool:
    """Mark `node` proven if its children now say so; whether it was.

    Its maker loses if the side on move there has a proven winning move; once every move
    there is tried and proven, its maker gets the opposite of the best of them."""
    if node.proven >= 0:
        return False
    best, unknown = 0.0, bool(node.untried)
    for child in node.children:
        p = child.proven
        if p == 1.0:
            node.proven = 0.0
            return True
        if p < 0:
            unknown = True
        elif p > best:
            best = p
    if unknown:
        return False
    node.proven = 1.0 - best
    return True


# Time: a search stops early once its best move is clear. Past SETTLE of its budget it stops as
# soon as the most visited move has DOMINANT times the visits of the next; before its end, as
# soon as the next could not catch up with the iterations left.
SETTLE = 0.5
DOMINANT = 2.0


def search(
    board: UltimateBoard,
    rng: random.Random,
    playouts: int | None = None,
    seconds: float | None = None,
    moves: Sequence[int] | None = None,
    exploration: float = EXPLORATION,
    root: Node | None = None,
    settle: bool = False,
    max_nodes: int | None = None,
    playout: Callable[[_Position, Callable[[], float]], float] | None = None,
) -> Node:
    """Run UCT from this board until the play-out budget or the time is spent; the root.

    `moves` restricts the root to some legal moves (all of them by default). At least one
    of `playouts` and `seconds` must be given; with both, whichever runs out first. `root`
    continues a tree kept from an earlier search of this very position (its moves outside
    `moves` are pruned). The search stops at once when the root's moves are all proven (a
    proven win among them is enough); with `settle`, also when one move clearly dominates
    (see SETTLE). With `max_nodes`, no node is added once the tree may hold that many (a tree
    holds at most one node per visit of its root).
    """
    if playouts is None and seconds is None:
        raise ValueError("give the search a play-out budget, a time, or both")
    start = _Position.of(board)
    root_moves = list(moves) if moves is not None else start.moves()
    if not root_moves:
        raise GameOver("the game is over")
    if root is None:
        root = Node(-1, root_moves)
    else:
        allowed = set(root_moves)
        root.children = [c for c in root.children if c.move in allowed]
        seen = {c.move for c in root.children}
        root.untried = [m for m in root_moves if m not in seen]
        root.proven = -1.0
        if root.children:
            _prove(root)
    rnd = rng.random
    finish = playout or _playout
    clock = CLOCK
    began = clock()
    deadline = None if seconds is None else began + seconds
    limit = playouts if playouts is not None else 1 << 62
    soft_playouts = int(limit * SETTLE)
    soft_time = None if seconds is None else began + seconds * SETTLE
    grow = max_nodes or 1 << 62
    sqrt, log = math.sqrt, math.log
    done = 0
    while done < limit and root.proven < 0:
        if done & 15 == 0:
            now = clock() if deadline is not None else 0.0
            if deadline is not None and now >= deadline:
                break
            if settle and done & 255 == 0 and done and _settled(
                    root, done, limit, now, began, deadline, soft_playouts, soft_time):
                break
        done += 1
        pos = start.copy()
        node = root
        path = [root]
        # Selection: while every move of the node has been tried, follow UCB1; a move proven
        # lost for its maker is never followed, a proven node is not searched further.
        while not node.untried and node.children and node.proven < 0:
            explore = exploration * sqrt(log(node.visits))
            best, best_value = None, -1.0
            for child in node.children:
                if child.proven >= 0:
                    if child.proven == 0.0:
                        continue
                    value = child.proven + explore / sqrt(child.visits)
                else:
                    value = child.reward / child.visits + explore / sqrt(child.visits)
                if value > best_value:
                    best, best_value = child, value
            if best is None:  # every move loses: proven (a kept tree may not say so yet)
                _prove(node)
                break
            node = best
            path.append(node)
            pos.play(node.move)
        # Expansion: one untried move, chosen at random; a finished game, or a position where
        # the side on move wins at once, is proven on the spot.
        proving = False
        if node.untried and node.proven < 0 and root.visits < grow:
            untried = node.untried
            i = int(rnd() * len(untried))
            untried[i], untried[-1] = untried[-1], untried[i]
            move = untried.pop()
            pos.play(move)
            child = Node(move, pos.moves())
            if pos.result >= 0:
                child.proven = pos.result
            elif pos.winning_moves():
                child.proven = 0.0
            node.children.append(child)
            node = child
            path.append(node)
            proving = child.proven >= 0
        # Simulation: the reward of the side that made the node's move.
        if node.proven >= 0:
            reward = node.proven
        elif pos.result >= 0:
            reward = pos.result
        else:
            reward = 1.0 - finish(pos, rnd)
        # Back-propagation, alternating sides; a new proof climbs as far as it holds.
        for i in range(len(path) - 1, -1, -1):
            node = path[i]
            node.visits += 1
            node.reward += reward
            reward = 1.0 - reward
            if proving and i:
                proving = _prove(path[i - 1])
    return root


def _settled(root: Node, done: int, limit: int, now: float, began: float,
             deadline: float | None, soft_playouts: int, soft_time: float | None) -> bool:
    """Whether the root's choice can no longer change, or is clear past the soft budget."""
    first = second = 0
    for child in root.children:
        v = child.visits
        if v > first:
            first, second = v, first
        elif v > second:
            second = v
    left = limit - done
    if deadline is not None:
        spent = now - began
        if spent > 0:
            left = min(left, int(done / spent * (deadline - now)))
    if first - second > left:
        return True
    past = done >= soft_playouts or soft_time is not None and now >= soft_time
    return past and first >= DOMINANT * second


def choice(root: Node) -> Node:
    """The move to play: a proven win at once; else the most visited of the moves not proven
    lost (a proven loss only when every move is one)."""
    children = root.children
    wins = [c for c in children if c.proven == 1.0]
    if wins:
        return max(wins, key=lambda n: (n.visits, -n.move))
    alive = [c for c in children if c.proven != 0.0] or children
    return min(alive, key=lambda n: (-n.visits, -n.score, n.move))


def most_visited(root: Node) -> list[Node]:
    """The root's children, most visited first (ties: the better score, then the lower cell)."""
    return sorted(root.children, key=lambda n: (-n.visits, -n.score, n.move))


def safe_moves(board: UltimateBoard) -> tuple[list[int], list[int]]:
    """The moves that win at once, and the moves after which the opponent cannot win at once.

    When every move lets the opponent win at once, the second list holds all of them.
    """
    pos = _Position.of(board)
    wins = pos.winning_moves()
    moves = pos.moves()
    safe = []
    for move in moves:
        after = pos.copy()
        after.play(move)
        if after.result >= 0 or not after.winning_moves():
            safe.append(move)
    return wins, safe or moves


# --- the levels -------------------------------------------------------------------------------


# --- trees kept between a game's moves -----------------------------------------------------------

# A worker keeps each game's tree from one AI move to the next (the subtree of the move it
# played; the rest is freed), so the next search starts with those visits. A tree holds at most
# one node per visit of its root (an iteration adds one node at most): TREE_NODES bounds one
# game's tree (the search stops growing it there), TREES_NODES all of a worker's; past that,
# and past TREE_IDLE seconds unused, the least recently used trees go. A tree is dropped when
# the game ends on the AI's move; otherwise idleness or its game's next search ends it (a
# search from another position than the kept one starts afresh). Nothing here is shared
# between processes: a game whose search lands on another worker (or a restarted one) starts
# afresh there.
TREE_NODES = 150_000   # about 40 MB of nodes at most for one game (measured: ~250 bytes a node)
TREES_NODES = 600_000
TREE_IDLE = 300.0


@dataclass(slots=True)
class _Kept:
    moves: tuple[int, ...]   # the game's moves up to the kept root
    root: Node
    used: float


_TREES: OrderedDict[str, _Kept] = OrderedDict()
# The last search of a level in this process: the visits it started with (kept from the game's
# previous move), the visits its root had at the end, and whether it ended proven.
LAST_SEARCH: dict[str, int | bool] = {"kept": 0, "visits": 0, "proven": False}


def _take_tree(game: str, history: Sequence[int]) -> Node | None:
    """The game's kept tree, moved down the moves played since it was kept; None if there is
    none or the game is not where it was."""
    kept = _TREES.pop(game, None)
    if kept is None:
        return None
    history = tuple(history)
    if history[:len(kept.moves)] != kept.moves:
        return None
    node: Node | None = kept.root
    for move in history[len(kept.moves):]:
        node = next((c for c in node.children if c.move == move), None)
        if node is None:
            return None
    return node


def _keep_tree(game: str, moves: tuple[int, ...], root: Node) -> None:
    """Keep `root` (the position after `moves`) for the game's next search."""
    _TREES[game] = _Kept(moves, root, time.monotonic())
    _TREES.move_to_end(game)
    _trim_trees()


def _trim_trees() -> None:
    now = time.monotonic()
    total = sum(k.root.visits for k in _TREES.values())
    while _TREES:
        game, oldest = next(iter(_TREES.items()))
        if total <= TREES_NODES and now - oldest.used <= TREE_IDLE:
            break
        total -= oldest.root.visits
        del _TREES[game]


def forget_game(game: str) -> None:
    """Drop a game's tree (its game is over)."""
    _TREES.pop(game, None)


def tree_stats() -> dict[str, int]:
    """The trees kept in this process: how many games, and their nodes at most."""
    _trim_trees()
    return {"games": len(_TREES), "nodes": sum(k.root.visits for k in _TREES.values())}


# --- the levels -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Player:
    """A move picker: a random safe move with chance `randomness`, else the search's choice.

    A careful player always takes a game-winning move and never lets the opponent win on
    the next move when it can help it; `random` is the only careless one. `settle`: the
    search may stop early once its choice is clear (see SETTLE); `keep`: a game's tree is kept
    between its moves (when `choose` is told the game and its moves).
    """

    name: str
    randomness: float
    playouts: int                 # the search's budget a move; 0: no search
    seconds: float | None = None  # a cap on the search's time a move, for slow hosts
    careful: bool = True
    settle: bool = False
    keep: bool = False
    reserve: float = 0.0          # of `seconds`, left for the rest of the reply (not searched)
    description: str = field(default="", compare=False)

    def choose(self, board: UltimateBoard, rng: random.Random, game: str | None = None,
               history: Sequence[int] | None = None) -> int:
        """The cell this player marks on a board where the game is still on. With `game` (an
        id) and `history` (the moves that made `board`), a `keep` player continues the game's
        kept tree and keeps the subtree of its move."""
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
            kept = _take_tree(game, history) if keep else None  # type: ignore[arg-type]
            LAST_SEARCH["kept"] = kept.visits if kept else 0
            seconds = self.seconds and max(self.seconds / 2, self.seconds - self.reserve)
            root = search(board, rng, self.playouts, seconds, safe, root=kept,
                          settle=self.settle, max_nodes=TREE_NODES if keep else None)
            LAST_SEARCH["visits"] = root.visits
            LAST_SEARCH["proven"] = root.proven >= 0
            best = choice(root)
            move = best.move
            if keep and not board.play(move).is_over:
                _keep_tree(game, (*history, move), best)  # type: ignore[arg-type, misc]
                return move
        if keep:
            forget_game(game)  # type: ignore[arg-type]
        return move


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


def _any_safe(pos: _Position, move: int) -> bool:
    """Whether the opponent cannot win at once after `move`."""
    after = pos.copy()
    after.play(move)
    return after.result >= 0 or not after.winning_moves()


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
