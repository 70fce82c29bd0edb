"""Every slow search, off the serving loop: a fair, bounded scheduler in front of workers.

The table asks a thinker for an AI move (`move`) or a position's evaluation (`analyze`, which
hints use too) and gets a `Ticket`; the search runs elsewhere: in worker processes on this
machine (`ttt.pool.workers.ProcessRunner`) or on other machines through a Redis queue
(`ttt.pool.workers.QueueRunner`). The scheduler is the same for both:

- one search at a time per player, and the queue served round-robin by client address
  prefix (the caller hashes an IPv4 address whole, an IPv6 one by its /64), then by game
  inside a prefix, so one address with many games or tabs gets its share and no more;
- `analyze` waits in a bounded queue or is refused (`Busy`); an AI move is never refused:
  it waits its turn, and the table lands it when it comes;
- a repeated request costs nothing: evaluations are cached by position (LRU), and a second
  request for a search already queued or running (a `join` while the AI thinks) shares it;
- the budget shrinks with the number of prefixes in the rotation, down to a floor, so an AI
  reply (the wait plus the search) stays within `REPLY_BOUND`; the ticket says what it got;
- past capacity (more prefixes than the floor keeps within the bound) a *new* game at a slow
  level is refused (`crowded`), so the games already running keep their bounded wait;
- an evaluation (`analyze`, hints) takes a seat in the same rotation as an AI game: its
  prefix counts toward the capacity, and past it an evaluation from a prefix not yet in the
  rotation is refused (`Busy`) as a new game is (else forty addresses asking analyses
  stretch a `hard` reply to 2.4 s, uncounted in the capacity).

Waiting uses `threading` primitives only: under gunicorn's gevent worker they are patched,
so a greenlet waiting on a ticket yields the hub, and the drivers' pipes are cooperative.
`Inline` runs the search on the caller's thread: unit tests and the command line. What a
search is (`Task`, `Ticket`, `search`, the `Thinker` and `Runner` interfaces) is in
`ttt.pool.tickets`, and importable from here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

from ttt.pool.tickets import (
    ANALYZE_SECONDS,
    Busy,
    Memo,
    Runner,
    Task,
    Thinker,
    Ticket,
    WorkerLost,
    game_of,
    search,
)

log = logging.getLogger("ttt.thinker")

MIN_SECONDS = 0.1          # the least a search is given, however long the queue
REPLY_BOUND = 1.5          # seconds an AI reply (its wait and its search) should stay within
ACTIVE_SECONDS = 60.0      # a prefix whose AI game asked this recently is in the rotation
OVERHEAD = 0.05            # a search's cost beyond its budget (pipes, set-up): learnt as it runs
RETRIES = 3                # a task whose worker died this many times is given up

__all__ = ["ACTIVE_SECONDS", "ANALYZE_SECONDS", "MIN_SECONDS", "OVERHEAD", "REPLY_BOUND",
           "RETRIES", "Busy", "Inline", "Runner", "Scheduler", "Task", "Thinker", "Ticket",
           "WorkerLost", "search"]


class Scheduler:
    """The fair, bounded queue in front of `runners`, one driver thread (or greenlet) each."""

    def __init__(self, runners: list[Runner], max_queue: int | None = None,
                 per_address: int | None = None, cache: int = 4096,
                 capacity: Callable[[], int] | None = None, slots: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.runners = runners
        self.slots = slots or max(1, len(runners))
        self.clock = clock
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
        self._searching: set[str] = set()        # prefixes with a search on a worker
        self._by_key: dict[Hashable, Ticket] = {}
        self._cache = Memo(cache)
        self._budgets = Memo(10_000)
        self._served = Memo(10_000)             # address -> the turn it was last served
        self._turn = 0
        self._drivers: list[threading.Thread] = []
        self._closed = False
        self.searches = 0                        # searches run (tests count them)
        self._games_served = Memo(10_000)       # game -> the turn it was last served
        self._active: dict[str, float] = {}      # prefix -> when its slow AI game last asked
        self._overhead = OVERHEAD
        # The crowd's figures (the metrics read them): searches given less than their level's
        # time, new games refused as crowded, and each search's wait for a worker.
        self.reduced = 0
        self.crowded_refusals = 0
        self.evaluations_refused = 0             # evaluations refused past capacity
        self.on_wait: Callable[[float], None] = lambda seconds: None
        self.failed: dict[str, int] = {}         # searches failed, by cause (the metrics')
        self._homes = Memo(10_000)              # game -> the runner that keeps its tree
        self._busy: set[Any] = set()             # runners running a search now

    # --- asking ------------------------------------------------------------------------------

    def move(self, task: Task, owner: str, address: str, game: str, rev: int,
             on_done: Callable[[Ticket], None]) -> Ticket:
        """The AI's move in `game` at `rev`: queued (never refused), or the one already asked."""
        with self._lock:
            ticket = self._by_key.get(("move", game, rev))
            if ticket is None:
                task = task if task.game else replace(task, game=game)
                ticket = Ticket(task, owner, address, ("move", game, rev), callbacks=[on_done])
                if task.full_budget() > MIN_SECONDS:
                    self._active[address] = self.clock()
                self._enqueue(ticket)
            return ticket

    def capacity(self) -> int:
        """How many prefixes the rotation can hold with every search at the floor and every
        reply still within `REPLY_BOUND`."""
        in_a_row = int(REPLY_BOUND / (MIN_SECONDS + self._overhead))  # searches on one worker
        return max(1, in_a_row * self._working)

    def crowded(self, task: Task, address: str, count: bool = True) -> bool:
        """Whether a *new* game whose AI searches like `task` would push the rotation past
        capacity: refused then, so the games already running keep their bound. A level at the
        floor's cost, or a prefix already in the rotation, always starts. `count`: a game is
        being made (its prefix joins the rotation, a refusal is counted), else only asked."""
        if task.full_budget() <= MIN_SECONDS:
            return False
        with self._lock:
            now = self._prune()
            room = address in self._active or len(self._active) < self.capacity()
            if count and room:
                self._active[address] = now  # held from the start: a crowd arrives at once
            self.crowded_refusals += count and not room
            return not room

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
            if not self._seat(address):
                self.evaluations_refused += 1
                raise Busy("the AI is at capacity; try again shortly")
            ticket = Ticket(task, owner, address, key)
            self._enqueue(ticket)
            return ticket

    def _seat(self, address: str) -> bool:
        """Whether an evaluation from this prefix has a seat in the rotation (taken now, for
        `ACTIVE_SECONDS`, as a slow game's): a prefix already in it always has (under the
        lock)."""
        now = self._prune()
        if address not in self._active and len(self._active) >= self.capacity():
            return False
        self._active[address] = now
        return True

    def budget_of(self, game: str) -> float | None:
        """The seconds the AI's latest search in this game was given."""
        with self._lock:
            return self._budgets.get(game)

    def _enqueue(self, ticket: Ticket, first: bool = False) -> None:
        self._by_key[ticket.key] = ticket
        ticket.asked = self.clock()
        line = self._queues.setdefault(ticket.address, deque())
        line.appendleft(ticket) if first else line.append(ticket)
        self._queued += 1
        self._start()
        self._lock.notify_all()  # every driver: a move may be for one worker's tree (_routed)

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

    def _prune(self) -> float:
        """Forget the prefixes whose slow AI games stopped asking; the time now."""
        now = self.clock()
        for prefix, seen in list(self._active.items()):
            if now - seen > ACTIVE_SECONDS:
                del self._active[prefix]
        return now

    def _next(self, runner: Runner | None = None) -> Ticket | None:
        """The next ticket for `runner` (waited for), or None once closed."""
        with self._lock:
            while not self._closed:
                ticket = self._pick(runner)
                if ticket is not None:
                    return ticket
                self._lock.wait()
            return None

    def _pick(self, runner: Runner | None = None) -> Ticket | None:
        """The next ticket now, if any (under the lock): the prefix served longest ago (or
        never) first, inside it the game served longest ago, skipping players already
        searching; its budget set from the rotation's size."""
        ready = self._ready(runner)
        if not ready:
            return None
        _, address, ticket = min(ready, key=lambda r: r[0])
        self._route(ticket, runner)
        self._turn += 1
        self._served.put(address, self._turn)
        self._games_served.put(game_of(ticket), self._turn)
        line = self._queues[address]
        line.remove(ticket)
        if not line:
            del self._queues[address]
        self._queued -= 1
        self._running.add(ticket.owner)
        self._searching.add(address)
        ticket.budget = self._budget(ticket)
        self.on_wait(max(0.0, self.clock() - ticket.asked))
        if ticket.task.kind == "move":
            self._budgets.put(ticket.key[1], ticket.budget)
            self.reduced += ticket.budget < ticket.task.full_budget()
        return ticket

    def _budget(self, ticket: Ticket) -> float:
        """The seconds this search gets: a turn of the rotation (every prefix with a search
        queued or running, or whose slow game asked lately and will again: one search each)
        fits in `REPLY_BOUND` on the workers there are, and a prefix's games share its seat
        (its other searches waiting are served in its next turns); never under the floor,
        never over the level's own time."""
        full = ticket.task.full_budget()
        self._prune()
        prefixes = max(len(set(self._queues) | self._searching), len(self._active))
        rounds = -(-max(1, prefixes) // self._working)  # searches in a row on one worker
        own = 1 + len(self._queues.get(ticket.address, ()))  # this one and its prefix's others
        fair = REPLY_BOUND / (rounds * own) - self._overhead
        return round(max(min(full, MIN_SECONDS), min(full, fair)), 2)

    def _ready(self, runner: Runner | None = None) -> list[tuple[int, str, Ticket]]:
        """Each prefix's ticket to serve (its game served longest ago, whose player has no
        search running), with the prefix's turn. A prefix has one search on a worker at a
        time: eighty games behind one address take one seat of the rotation, not every
        worker (a search already running cannot be cut short for someone who comes)."""
        ready = []
        for address, line in self._queues.items():
            if address in self._searching:
                continue
            free = [t for t in line if t.owner not in self._running and self._routed(t, runner)]
            if free:
                ticket = min(free, key=lambda t: self._games_served.get(game_of(t)) or 0)
                ready.append((self._served.get(address) or 0, address, ticket))
        return ready

    # --- a game's moves to the worker that keeps its tree --------------------------------------

    def _routed(self, ticket: Ticket, runner: Runner | None) -> bool:
        """Whether `runner` may take this ticket: any search but a move whose game's tree is
        kept by another worker that is free now (that worker takes it; a busy one's game is
        taken by whoever is free, and starts afresh there: a reply never waits for a tree)."""
        game = ticket.task.game if ticket.task.kind == "move" else None
        home = self._homes.get(game) if game and runner is not None else None
        return home is None or home is runner or home in self._busy

    def _route(self, ticket: Ticket, runner: Runner | None) -> None:
        """`runner` runs this ticket: busy until it finishes, and its game's home from now."""
        if runner is None:
            return
        self._busy.add(runner)
        if ticket.task.kind == "move" and ticket.task.game:
            self._homes.put(ticket.task.game, runner)

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
            ticket = self._next(runner)
            if ticket is None:
                return
            assert ticket.budget is not None
            started = time.monotonic()
            try:
                result, error = runner.run(ticket.task.as_json(), ticket.budget), None
                ticket.seconds = time.monotonic() - started
            except WorkerLost as lost:
                with self._lock:
                    self._busy.discard(runner)
                ticket.attempts += 1
                self._failed("worker_lost")
                log.warning("a worker died during a search (%s): attempt %d", lost,
                            ticket.attempts)
                if ticket.attempts < RETRIES:
                    with self._lock:  # again, first in its address's line
                        self._running.discard(ticket.owner)
                        self._searching.discard(ticket.address)
                        self._enqueue(ticket, first=True)
                    continue
                result, error = None, f"worker lost: {lost}"
                self._failed("gave_up")
            except Exception as failure:  # a bug in a search: the ticket says so
                log.exception("a search failed")
                self._failed("error")
                result, error = None, f"{type(failure).__name__}: {failure}"
            with self._lock:
                self._busy.discard(runner)
            self._finish(ticket, result, error)

    def _failed(self, cause: str) -> None:
        with self._lock:
            self.failed[cause] = self.failed.get(cause, 0) + 1

    def _finish(self, ticket: Ticket, result: Any, error: str | None) -> None:
        ticket.result, ticket.error = result, error
        with self._lock:
            self.searches += error is None
            if error is None and ticket.budget is not None and ticket.seconds:
                # What a search costs beyond its budget, so the budgets leave room for it.
                spent = max(0.0, ticket.seconds - ticket.budget)
                self._overhead = min(0.5, 0.9 * self._overhead + 0.1 * spent)
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
            self._searching.discard(ticket.address)
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

    def crowded(self, task: Task, address: str, count: bool = True) -> bool:
        """Never: each search runs on its caller's thread."""
        return False

    def _seat(self, address: str) -> bool:
        """Always: each search runs on its caller's thread."""
        return True

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
