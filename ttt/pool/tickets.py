"""A search asked of the thinker: its task, its ticket, the run in a worker, the interfaces.

Plain values the scheduler (`ttt.pool.thinker`) queues and the workers (`ttt.pool.workers`) run.
"""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

ANALYZE_SECONDS = 0.4      # an evaluation's full budget (the ultimate variant's analyze)


class Busy(Exception):
    """The queue is full: the request would wait too long."""


class WorkerLost(Exception):
    """The worker running a task died (or went silent) before it answered."""


@dataclass(frozen=True)
class Task:
    """One search: what to think about, in plain JSON-able values (it crosses processes)."""

    kind: str                  # "move" | "analyze"
    variant: str
    moves: tuple[int, ...]
    level: str | None = None   # a move's AI level
    seed: int = 0              # a move's dice
    game: str | None = None    # a move's game: its worker may keep the game's search tree

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "variant": self.variant, "moves": list(self.moves),
                "level": self.level, "seed": self.seed, "game": self.game}

    def full_budget(self) -> float:
        """The seconds this search gets when nobody waits."""
        if self.kind == "analyze":
            return ANALYZE_SECONDS
        from ttt.game.variants import VARIANTS
        return getattr(VARIANTS[self.variant].player(self.level or ""), "seconds", None) or 1.0


def search(task: dict[str, Any], seconds: float) -> Any:
    """Run one search (in a worker): a move's cell, or an evaluation; at most `seconds`."""
    from ttt.ai import mcts
    from ttt.game.variants import VARIANTS

    rules = VARIANTS[task["variant"]]
    board = rules.from_moves(task["moves"])
    if task["kind"] == "move":
        picker = rules.player(task["level"])
        if getattr(picker, "seconds", None):  # the ultimate levels: cap the wall-clock time
            picker = replace(picker, seconds=min(picker.seconds, seconds))
        if isinstance(picker, mcts.Player) and task.get("game"):  # its tree kept between moves
            return picker.choose(board, random.Random(task["seed"]), game=task["game"],
                                 history=task["moves"])
        return picker.choose(board, random.Random(task["seed"]))
    if rules.instant_ai:
        return rules.analyze(board)
    return mcts.analyze(board, playouts=3_000, seconds=seconds)


@dataclass(eq=False)
class Ticket:
    """A search asked for: wait on it, read `result` (or `error`), see its `budget`."""

    task: Task
    owner: str
    address: str
    key: Hashable
    budget: float | None = None
    asked: float = 0.0                 # when it was queued (the scheduler's clock)
    result: Any = None
    error: str | None = None
    attempts: int = 0
    seconds: float = 0.0               # how long the search that answered took
    callbacks: list[Callable[[Ticket], None]] = field(default_factory=list)
    _done: threading.Event = field(default_factory=threading.Event)

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether it finished within `timeout` (cooperative under gevent)."""
        return self._done.wait(timeout)


def game_of(ticket: Ticket) -> Hashable:
    """What a search is for, to take turns inside a prefix: a move's game, a player's
    evaluations."""
    return ticket.key[1] if ticket.task.kind == "move" else ("analyze", ticket.owner)


class Thinker(Protocol):
    """What the table asks of a thinker."""

    def move(self, task: Task, owner: str, address: str, game: str, rev: int,
             on_done: Callable[[Ticket], None]) -> Ticket: ...
    def analyze(self, task: Task, owner: str, address: str) -> Ticket: ...
    def budget_of(self, game: str) -> float | None: ...
    def close(self) -> None: ...


class Runner(Protocol):
    """One worker slot: runs a task, or raises WorkerLost if its worker died."""

    def run(self, task: dict[str, Any], seconds: float) -> Any: ...
    def close(self) -> None: ...


class Memo:
    """A bounded map, oldest out first (the evaluation cache, the budgets shown)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

