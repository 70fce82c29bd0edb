"""Who picks a move: the perfect player, the difficulty levels, and random.

Every level follows one rule a player can understand: with a stated chance it
plays a uniformly random legal move, otherwise the perfect player's move. The
randomness source is always an injected `random.Random`, so a seed replays.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from ttt.ai import solver
from ttt.rules.classic import BITS, CELL_OF_BIT, FULL, LINE_OF, Board


@dataclass(frozen=True, slots=True)
class Tree:
    """Every reachable position numbered densely (0 is the empty board), with its moves."""

    keys: list[int]                      # Board.key of each state
    index: dict[int, int]                # Board.key -> state
    over: list[int]                      # 0 playing, 1 X won, 2 O won, 3 draw
    cells: list[tuple[int, ...]]         # legal cells of each state
    children: list[tuple[int, ...]]      # the state after each legal cell, aligned with cells
    perfect: list[tuple[int, ...]]       # indices into cells/children: the perfect choices


def _walk() -> tuple[list[int], dict[int, int], list[int], list[tuple[int, ...]],
                    list[tuple[int, ...]]]:
    """Every reachable position, breadth first: (keys, index, over, cells, children)."""
    keys, index = [0], {0: 0}
    over: list[int] = []
    cells: list[tuple[int, ...]] = []
    children: list[tuple[int, ...]] = []
    for key in keys:  # grows while we walk it: a breadth-first walk
        x, o = key & FULL, key >> 9
        x_turn = x.bit_count() == o.bit_count()
        empty = FULL ^ (x | o)
        state_over = 1 if LINE_OF[x] >= 0 else 2 if LINE_OF[o] >= 0 else 0 if empty else 3
        over.append(state_over)
        bits = BITS[empty] if not state_over else ()
        cells.append(tuple(CELL_OF_BIT[b] for b in bits))
        kids = []
        for bit in bits:
            child = (x | bit) | o << 9 if x_turn else x | (o | bit) << 9
            if child not in index:
                index[child] = len(keys)
                keys.append(child)
            kids.append(index[child])
        children.append(tuple(kids))
    return keys, index, over, cells, children


def _perfect_choices(keys: list[int], over: list[int],
                     children: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """For each state, the indices of the perfect player's moves that do best against a
    uniformly random opponent."""
    table = solver.scores()

    def move_value(state: int, child: int) -> int:
        x, o = keys[child] & FULL, keys[child] >> 9
        x_moved = x.bit_count() > o.bit_count()
        return -table[(o << 9 | x) if x_moved else (x << 9 | o)]

    # Expected result (+1 win, 0 draw, -1 loss) for a perfect player P against
    # a uniformly random opponent: mine[s] when P is to move, theirs[s] when the
    # opponent is. Among optimal moves, P takes the one with the best theirs[].
    mine: dict[int, float] = {}
    theirs: dict[int, float] = {}
    perfect: list[tuple[int, ...]] = [()] * len(keys)

    def p_to_move(s: int) -> float:
        if s in mine:
            return mine[s]
        if over[s]:
            value = 0.0 if over[s] == 3 else -1.0
        else:
            values = [move_value(s, c) for c in children[s]]
            top = max(values)
            optimal = [i for i, v in enumerate(values) if v == top]
            expected = [r_to_move(children[s][i]) for i in optimal]
            value = max(expected)
            perfect[s] = tuple(i for i, e in zip(optimal, expected, strict=True)
                               if e > value - 1e-12)
        mine[s] = value
        return value

    def r_to_move(s: int) -> float:
        if s in theirs:
            return theirs[s]
        if over[s]:
            value = 0.0 if over[s] == 3 else 1.0
        else:
            value = sum(p_to_move(c) for c in children[s]) / len(children[s])
        theirs[s] = value
        return value

    for s in range(len(keys)):
        if not over[s]:
            p_to_move(s)
    return perfect


def _build_tree() -> Tree:
    keys, index, over, cells, children = _walk()
    return Tree(keys, index, over, cells, children, _perfect_choices(keys, over, children))


@cache
def tree() -> Tree:
    """The position tree with the perfect player's choices, built once per process."""
    return _build_tree()


@dataclass(frozen=True, slots=True)
class Player:
    """A move picker: a random legal move with chance `randomness`, else the perfect move."""

    name: str
    randomness: float
    description: str = field(default="", compare=False)

    def choose(self, board: Board, rng: random.Random) -> int:
        """The cell this player marks on a board where the game is still on."""
        t = tree()
        state = t.index[board.key]
        if not t.cells[state]:
            raise ValueError("the game is over")
        if self.randomness and rng.random() < self.randomness:
            return rng.choice(t.cells[state])
        return t.cells[state][rng.choice(t.perfect[state])]


LEVELS: dict[str, Player] = {
    p.name: p
    for p in (
        Player("random", 1.0, "plays any empty cell, uniformly at random"),
        Player("easy", 0.6, "a random move 60% of the time, else the perfect move"),
        Player("medium", 0.3, "a random move 30% of the time, else the perfect move"),
        Player("hard", 0.1, "a random move 10% of the time, else the perfect move"),
        Player("perfect", 0.0, "never loses, wins as fast as it can, sets the most traps"),
    )
}
AI_LEVELS = ("easy", "medium", "hard", "perfect")


def player(name: str) -> Player:
    """The player of that level name; ValueError for an unknown one."""
    try:
        return LEVELS[name]
    except KeyError:
        raise ValueError(f"unknown level {name!r}: choose one of {', '.join(LEVELS)}") from None


@dataclass
class Tally:
    """The results of many games: totals and, per side, results by that side's first move."""

    games: int = 0
    x_wins: int = 0
    o_wins: int = 0
    draws: int = 0
    # by_first[side][cell] = [x_wins, o_wins, draws] over games where `side` opened on `cell`
    by_first: dict[str, list[list[int]]] = field(
        default_factory=lambda: {"X": [[0, 0, 0] for _ in range(9)],
                                 "O": [[0, 0, 0] for _ in range(9)]}
    )


def arena(
    x: Player,
    o: Player,
    games: int,
    rng: random.Random,
    progress: Callable[[int], None] | None = None,
) -> Tally:
    """Play `games` games of x against o; the same rng state gives the same tally."""
    t = tree()
    over, children, perfect, keys = t.over, t.children, t.perfect, t.keys
    rnd = rng.random
    ex, eo = x.randomness, o.randomness
    # results[over][first X cell][first O cell]: counted flat, folded at the end.
    counts = [0] * (4 * 81)
    chunk = max(1, min(games // 100, 5000))
    for played in range(games):
        s, ply, s1, s2 = 0, 0, 0, 0
        while not over[s]:
            eps = eo if ply & 1 else ex
            kids = children[s]
            if eps and rnd() < eps:
                s = kids[int(rnd() * len(kids))]
            else:
                choice = perfect[s]
                s = kids[choice[int(rnd() * len(choice))] if len(choice) > 1 else choice[0]]
            ply += 1
            if ply == 1:
                s1 = s
            elif ply == 2:
                s2 = s
        # X opens on the only X cell of s1; O on the only O cell of s2.
        fx = CELL_OF_BIT[keys[s1] & FULL]
        fo = CELL_OF_BIT[keys[s2] >> 9] if s2 else 0
        counts[over[s] * 81 + fx * 9 + fo] += 1
        if progress and played % chunk == chunk - 1:
            progress(played + 1)
    tally = Tally(games=games)
    for result, column in ((1, 0), (2, 1), (3, 2)):
        for fx in range(9):
            for fo in range(9):
                n = counts[result * 81 + fx * 9 + fo]
                tally.by_first["X"][fx][column] += n
                tally.by_first["O"][fo][column] += n
    tally.x_wins = sum(row[0] for row in tally.by_first["X"])
    tally.o_wins = sum(row[1] for row in tally.by_first["X"])
    tally.draws = sum(row[2] for row in tally.by_first["X"])
    if progress:
        progress(games)
    return tally
