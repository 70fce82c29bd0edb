"""The tree search of ultimate tic-tac-toe (`ttt.ai.mcts`): UCT with proven results.

The search is plain UCT: walk down the tree by the UCB1 rule, add one node, finish the game
with a play-out (`ttt.ai.mcts_position`), and credit the result up the path (1 a win, 1/2 a
draw). A result known for sure (a finished game, a win in one, or every reply proven) is marked
on its node and climbs the tree as far as it holds (MCTS-Solver). With a play-out budget, a
seed replays the same search.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence

from ttt.ai.mcts_position import _playout, _Position
from ttt.rules.classic import GameOver
from ttt.rules.ultimate import UltimateBoard

# The clock of a search's `seconds`: wall-clock (a busy host answers in time with a weaker move).
# `bench.uttt --cpu` sets this thread's CPU time instead, to measure a level as a quiet machine
# would run it while other work shares the cores.
CLOCK: Callable[[], float] = time.perf_counter
EXPLORATION = 0.5  # the UCB1 constant for rewards in 0..1: beat 0.3, 0.7, 1.0 and 1.4 in arenas
Playout = Callable[[_Position, Callable[[], float]], float]


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
    playout: Playout | None = None,
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
    root = _rooted(root, root_moves)
    rnd = rng.random
    finish = playout or _playout
    clock = CLOCK
    began = clock()
    deadline = None if seconds is None else began + seconds
    limit = playouts if playouts is not None else 1 << 62
    soft_playouts = int(limit * SETTLE)
    soft_time = None if seconds is None else began + seconds * SETTLE
    grow = max_nodes or 1 << 62
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
        _iterate(root, start.copy(), rnd, finish, exploration, grow)
    return root


def _rooted(root: Node | None, root_moves: list[int]) -> Node:
    """A fresh root for these moves, or the kept one pruned to them (its proof computed
    again: a pruned move may have been what proved it)."""
    if root is None:
        return Node(-1, root_moves)
    allowed = set(root_moves)
    root.children = [c for c in root.children if c.move in allowed]
    seen = {c.move for c in root.children}
    root.untried = [m for m in root_moves if m not in seen]
    root.proven = -1.0
    if root.children:
        _prove(root)
    return root


def _iterate(root: Node, pos: _Position, rnd: Callable[[], float], finish: Playout,
             exploration: float, grow: int) -> None:
    """One iteration: select, expand, play out, back up (with any new proof)."""
    node, path = _select(root, pos, exploration)
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


def _select(root: Node, pos: _Position, exploration: float) -> tuple[Node, list[Node]]:
    """Walk down by UCB1 while every move of the node has been tried, playing on `pos`; the
    node reached and the path to it. A move proven lost for its maker is never followed, a
    proven node is not searched further."""
    sqrt, log = math.sqrt, math.log
    node = root
    path = [root]
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
    return node, path


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
