"""Every slow search, off the serving loop: a fair, bounded scheduler in front of workers.

The table asks a thinker for an AI move (`move`) or a position's evaluation (`analyze`, which
hints use too) and gets a `Ticket`; the search runs elsewhere: in worker processes on this
machine (`ttt.workers.ProcessRunner`) or on other machines through a Redis queue
(`ttt.workers.QueueRunner`). The scheduler is the same for both:

- one search at a time per player, and the queue served round-robin by client address, so
  one address with many games or tabs gets its share and no more;
- `analyze` waits in a bounded queue or is refused (`Busy`); an AI move is never refused:
  it waits its turn, and the table lands it when it comes;
- a repeated request costs nothing: evaluations are cached by position (LRU), and a second
  request for a search already queued or running (a `join` while the AI thinks) shares it;
- the budget shrinks with the backlog, so nobody waits long; the ticket says what it got.

Waiting uses `threading` primitives only: under gunicorn's gevent worker they are patched,
so a greenlet waiting on a ticket yields the hub, and the drivers' pipes are cooperative.
`Inline` runs the search on the caller's thread: unit tests and the command line.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

log = logging.getLogger("ttt.thinker")

ANALYZE_SECONDS = 0.4      # an evaluation's full budget (the ultimate variant's analyze)
MIN_SECONDS = 0.1          # the least a search is given, however long the queue
RETRIES = 3                # a task whose worker died this many times is given up


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

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "variant": self.variant, "moves": list(self.moves),
                "level": self.level, "seed": self.seed}

    def full_budget(self) -> float:
        """The seconds this search gets when nobody waits."""
        if self.kind == "analyze":
            return ANALYZE_SECONDS
        from ttt.variants import VARIANTS
        return getattr(VARIANTS[self.variant].player(self.level or ""), "seconds", None) or 1.0


def search(task: dict[str, Any], seconds: float) -> Any:
    """Run one search (in a worker): a move's cell, or an evaluation; at most `seconds`."""
    from ttt import mcts
    from ttt.variants import VARIANTS

    rules = VARIANTS[task["variant"]]
    board = rules.from_moves(task["moves"])
    if task["kind"] == "move":
        picker = rules.player(task["level"])
        if getattr(picker, "seconds", None):  # the ultimate levels: cap the wall-clock time
            picker = replace(picker, seconds=min(picker.seconds, seconds))
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
    result: Any = None
    error: str | None = None
    attempts: int = 0
    seconds: float = 0.0               # how long the search that answered took
    queued: float = field(default_factory=time.monotonic)  # when it was asked (queue wait)
    callbacks: list[Callable[[Ticket], None]] = field(default_factory=list)
    _done: threading.Event = field(default_factory=threading.Event)

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Whether it finished within `timeout` (cooperative under gevent)."""
        return self._done.wait(timeout)


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


class _Memo:
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


class Scheduler:
    """The fair, bounded queue in front of `runners`, one driver thread (or greenlet) each."""

    def __init__(self, runners: list[Runner], max_queue: int | None = None,
                 per_address: int | None = None, cache: int = 4096,
                 capacity: Callable[[], int] | None = None) -> None:
        self.runners = runners
        self.slots = max(1, len(runners))
        # How many searches really run at once, when the runners cannot know (remote workers
        # on a queue): asked now and then; budgets shrink by it rather than by the runners.
        self._capacity = capacity
        self._working = self.slots
        self._asked_at = float("-inf")
        self.max_queue = max_queue or 4 * self.slots
        self.per_address = per_address or max(1, self.max_queue // 2)
        self._lock = threading.Condition()
        self._queues: OrderedDict[str, deque[Ticket]] = OrderedDict()  # by address, in turn
        self._queued = 0
        self._running: set[str] = set()          # owners with a search on a worker
        self._by_key: dict[Hashable, Ticket] = {}
        self._cache = _Memo(cache)
        self._budgets = _Memo(10_000)
        self._served = _Memo(10_000)             # address -> the turn it was last served
        self._turn = 0
        self._drivers: list[threading.Thread] = []
        self._closed = False
        self.searches = 0                        # searches run (tests count them)
        # Told how long each search waited in the queue before a worker took it (metrics).
        self.waited: Callable[[float], None] = lambda seconds: None

    # --- asking ------------------------------------------------------------------------------

    def move(self, task: Task, owner: str, address: str, game: str, rev: int,
             on_done: Callable[[Ticket], None]) -> Ticket:
        """The AI's move in `game` at `rev`: queued (never refused), or the one already asked."""
        with self._lock:
            ticket = self._by_key.get(("move", game, rev))
            if ticket is None:
                ticket = Ticket(task, owner, address, ("move", game, rev), callbacks=[on_done])
                self._enqueue(ticket)
            return ticket

    def analyze(self, task: Task, owner: str, address: str) -> Ticket:
        """An evaluation: from the cache, shared with the same one asked, or queued; Busy when
        the queue, this address's share of it, or this player's one search is taken."""
        key = ("analyze", task.variant, task.moves)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                ticket = Ticket(task, owner, address, key, result=cached)
                ticket._done.set()
                return ticket
            ticket = self._by_key.get(key)
            if ticket is not None:
                return ticket
            mine = any(t.owner == owner and t.task.kind == "analyze"
                       for t in self._by_key.values())
            if (mine or self._queued >= self.max_queue
                    or len(self._queues.get(address, ())) >= self.per_address):
                raise Busy("the AI workers are all taken; try again shortly")
            ticket = Ticket(task, owner, address, key)
            self._enqueue(ticket)
            return ticket

    def budget_of(self, game: str) -> float | None:
        """The seconds the AI's latest search in this game was given."""
        with self._lock:
            return self._budgets.get(game)

    def _enqueue(self, ticket: Ticket, first: bool = False) -> None:
        self._by_key[ticket.key] = ticket
        line = self._queues.setdefault(ticket.address, deque())
        line.appendleft(ticket) if first else line.append(ticket)
        self._queued += 1
        self._start()
        self._lock.notify()

    # --- the drivers -------------------------------------------------------------------------

    def _start(self) -> None:
        """Start the drivers on the first search (an app that never searches starts none)."""
        if self._drivers or self._closed:
            return
        for runner in self.runners:
            driver = threading.Thread(target=self._drive, args=(runner,), daemon=True,
                                      name="ttt-thinker")
            self._drivers.append(driver)
            driver.start()

    def _next(self) -> Ticket | None:
        """The next ticket, round-robin over addresses, skipping players already searching."""
        with self._lock:
            while not self._closed:
                ready = self._ready()
                if ready:
                    # The address served longest ago (or never) goes first.
                    _, address, ticket = min(ready, key=lambda r: r[0])
                    self._turn += 1
                    self._served.put(address, self._turn)
                    line = self._queues[address]
                    line.remove(ticket)
                    if not line:
                        del self._queues[address]
                    self._queued -= 1
                    self._running.add(ticket.owner)
                    # Under load every search gets less time, so nobody waits long.
                    backlog = self._queued + len(self._running)
                    full = ticket.task.full_budget()
                    ticket.budget = round(max(min(full, MIN_SECONDS),
                                              full * min(1.0, self._working / backlog)), 2)
                    if ticket.task.kind == "move":
                        self._budgets.put(ticket.key[1], ticket.budget)
                    return ticket
                self._lock.wait()
            return None

    def _ready(self) -> list[tuple[int, str, Ticket]]:
        """Each address's first ticket whose player has no search running, with its turn."""
        ready = []
        for address, line in self._queues.items():
            ticket = next((t for t in line if t.owner not in self._running), None)
            if ticket is not None:
                ready.append((self._served.get(address) or 0, address, ticket))
        return ready

    def _count_workers(self) -> None:
        """Refresh how many searches can run at once (remote workers come and go)."""
        now = time.monotonic()
        if self._capacity is None or now - self._asked_at < 5:
            return
        self._asked_at = now
        try:
            self._working = max(1, min(self.slots, self._capacity()))
        except Exception as error:  # the queue's Redis is down: keep the last count
            log.warning("could not count the search workers: %s", error)

    def _drive(self, runner: Runner) -> None:
        while True:
            self._count_workers()
            ticket = self._next()
            if ticket is None:
                return
            assert ticket.budget is not None
            started = time.monotonic()
            if not ticket.attempts:  # a retried search waited once, when first asked
                self.waited(started - ticket.queued)
            try:
                result, error = runner.run(ticket.task.as_json(), ticket.budget), None
                ticket.seconds = time.monotonic() - started
            except WorkerLost as lost:
                ticket.attempts += 1
                log.warning("a worker died during a search (%s): attempt %d", lost,
                            ticket.attempts)
                if ticket.attempts < RETRIES:
                    with self._lock:  # again, first in its address's line
                        self._running.discard(ticket.owner)
                        self._enqueue(ticket, first=True)
                    continue
                result, error = None, f"worker lost: {lost}"
            except Exception as failure:  # a bug in a search: the ticket says so
                log.exception("a search failed")
                result, error = None, f"{type(failure).__name__}: {failure}"
            self._finish(ticket, result, error)

    def _finish(self, ticket: Ticket, result: Any, error: str | None) -> None:
        ticket.result, ticket.error = result, error
        with self._lock:
            self.searches += error is None
            if error is None and ticket.task.kind == "analyze":
                self._cache.put(ticket.key, result)
        ticket._done.set()
        for callback in ticket.callbacks:
            try:
                callback(ticket)
            except Exception:  # the driver must outlive any one landing
                log.exception("landing a search failed")
        # Only now may the same game and rev be asked again: the move has landed (a new rev),
        # so a `join` in between shares this ticket rather than starting a second search.
        with self._lock:
            self._running.discard(ticket.owner)
            self._by_key.pop(ticket.key, None)
            self._lock.notify_all()

    def waiting(self) -> int:
        """How many searches wait for a worker now (the metrics' queue depth)."""
        with self._lock:
            return sum(len(line) for line in self._queues.values())

    def close(self) -> None:
        """Stop the drivers and the workers."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        for runner in self.runners:
            runner.close()


class Inline(Scheduler):
    """Searches on the caller's thread, at once (unit tests, the command line)."""

    def __init__(self) -> None:
        super().__init__([])

    def _enqueue(self, ticket: Ticket, first: bool = False) -> None:
        ticket.budget = ticket.task.full_budget()
        if ticket.task.kind == "move":
            self._budgets.put(ticket.key[1], ticket.budget)
        self._lock.release()  # the search and the landing run outside the lock
        try:
            try:
                result, error = search(ticket.task.as_json(), ticket.budget), None
            except Exception as failure:
                result, error = None, f"{type(failure).__name__}: {failure}"
            self._finish(ticket, result, error)
        finally:
            self._lock.acquire()
