"""The search trees a worker keeps between a game's moves (`ttt.ai.mcts`'s `hard`), and their count.

A worker keeps each game's tree from one AI move to the next (the subtree of the move it
played; the rest is freed), so the next search starts with those visits. A tree holds at most
one node per visit of its root (an iteration adds one node at most): TREE_NODES bounds one
game's tree (the search stops growing it there), TREES_NODES all of a worker's; past that,
and past TREE_IDLE seconds unused, the least recently used trees go. A tree is dropped when
the game ends on the AI's move; otherwise idleness or its game's next search ends it (a
search from another position than the kept one starts afresh). Nothing here is shared
between processes: a game whose search lands on another worker (or a restarted one) starts
afresh there. `tree_report()` is what a worker tells the server after each search (the
metrics' ttt_ai_tree_* figures).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from ttt.ai.mcts_search import Node

TREE_NODES = 150_000   # about 45 MB of nodes at most for one game (NODE_BYTES each)
TREES_NODES = 600_000
TREE_IDLE = 300.0
NODE_BYTES = 300       # a node with its lists: 312 measured with tracemalloc (20,000 visits, 3.11)
# Why a kept tree was dropped: its game ended (over), it sat unused (idle), the worker's bound
# made room for another (full), or its game came back at another position than kept (stale).
DROP_REASONS = ("over", "idle", "full", "stale")


@dataclass(slots=True)
class _Kept:
    moves: tuple[int, ...]   # the game's moves up to the kept root
    root: Node
    used: float


_TREES: OrderedDict[str, _Kept] = OrderedDict()
# Trees dropped in this process since it started, by reason; and searches that started from a
# kept tree (the game's search came back to the worker that kept it, at the position kept).
DROPPED: dict[str, int] = dict.fromkeys(DROP_REASONS, 0)
REUSED = {"searches": 0}
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
    node: Node | None = kept.root
    if history[:len(kept.moves)] != kept.moves:
        node = None
    for move in history[len(kept.moves):]:
        if node is None:
            break
        node = next((c for c in node.children if c.move == move), None)
    if node is None:
        DROPPED["stale"] += 1
    else:
        REUSED["searches"] += 1
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
        idle = now - oldest.used > TREE_IDLE
        if total <= TREES_NODES and not idle:
            break
        total -= oldest.root.visits
        del _TREES[game]
        DROPPED["idle" if idle else "full"] += 1


def forget_game(game: str) -> None:
    """Drop a game's tree (its game is over)."""
    if _TREES.pop(game, None) is not None:
        DROPPED["over"] += 1


def tree_stats() -> dict[str, int]:
    """The trees kept in this process: how many games, and their nodes at most."""
    _trim_trees()
    return {"games": len(_TREES), "nodes": sum(k.root.visits for k in _TREES.values())}


def tree_report() -> dict[str, int]:
    """`tree_stats()` with the bytes those nodes take at most, the searches that reused a
    kept tree ("reused") and the trees dropped so far by reason ("dropped_over", ...): a
    worker's answer carries it to the server's metrics."""
    stats = tree_stats()
    stats["bytes"] = stats["nodes"] * NODE_BYTES
    stats["reused"] = REUSED["searches"]
    stats.update({f"dropped_{reason}": DROPPED[reason] for reason in DROP_REASONS})
    return stats
