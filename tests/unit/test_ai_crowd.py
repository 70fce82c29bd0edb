"""The AI under a crowd, on a virtual clock: no real search, simulated searches of known cost.

Eighty clients from eighty addresses play Ultimate `hard` and move the instant the AI replies;
one honest player was already in a game before they came. The scheduler keeps the honest
player's reply within the bound, serves every game it let start, and answers the rest `busy`.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Callable

from ttt.pool.thinker import REPLY_BOUND, Scheduler, Task, Ticket

COST_BEYOND_BUDGET = 0.03  # a simulated search takes its budget and this much more
WORKERS = 2
EPSILON = 1e-6  # the virtual clock's float sums


class World:
    """A virtual clock, its events, and the scheduler's workers run on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.pool = Scheduler([], slots=WORKERS, clock=lambda: self.now)
        self.free = WORKERS

    def at(self, when: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._events, (when, next(self._seq), action))

    def dispatch(self) -> None:
        """Give every free worker the scheduler's next ticket."""
        while self.free:
            with self.pool._lock:
                ticket = self.pool._pick()
            if ticket is None:
                return
            self.free -= 1
            cost = ticket.budget + COST_BEYOND_BUDGET
            self.at(self.now + cost, lambda t=ticket, c=cost: self._finish(t, c))

    def _finish(self, ticket: Ticket, cost: float) -> None:
        self.free += 1
        ticket.seconds = cost
        self.pool._finish(ticket, 40, None)

    def run(self, until: float) -> None:
        while self._events and self._events[0][0] <= until:
            self.now, _, action = heapq.heappop(self._events)
            action()
            self.dispatch()


class Client:
    """A player in one Ultimate game against the AI: asks for a reply, waits, thinks, asks."""

    def __init__(self, world: World, name: str, think: float, level: str = "hard") -> None:
        self.world, self.name, self.think, self.level = world, name, think, level
        self.rev = 0
        self.waits: list[float] = []
        self.budgets: list[float] = []

    def task(self) -> Task:
        return Task("move", "ultimate", (self.rev,), self.level, 1)

    def ask(self) -> None:
        asked = self.world.now
        self.world.pool.move(self.task(), self.name, self.name, f"game-{self.name}", self.rev,
                             lambda ticket: self._landed(ticket, asked))

    def _landed(self, ticket: Ticket, asked: float) -> None:
        self.waits.append(self.world.now - asked)
        self.budgets.append(ticket.budget)
        self.rev += 1
        self.world.at(self.world.now + self.think, self.ask)


def test_the_honest_player_keeps_a_bounded_wait_and_nobody_starves():
    world = World()
    honest = Client(world, "honest", think=2.0)
    world.at(0.0, honest.ask)
    crowd = [Client(world, f"203.0.113.{n}", think=0.0) for n in range(80)]
    admitted: list[Client] = []
    refused: list[Client] = []

    capacities: list[int] = []

    def arrive(client: Client) -> None:
        capacities.append(world.pool.capacity())
        if world.pool.crowded(client.task(), client.name):
            refused.append(client)
        else:
            admitted.append(client)
            client.ask()

    for n, client in enumerate(crowd):  # the crowd comes within a second, after the honest one
        world.at(5.0 + n / 80, lambda c=client: arrive(c))
    world.run(until=180.0)

    # Past capacity the rest were told `busy`: the rotation holds what the bound allows.
    assert refused and len(admitted) + 1 <= max(capacities)
    assert world.pool.crowded_refusals == len(refused)
    # The honest player's every reply came within the bound, before and during the crowd.
    assert len(honest.waits) > 40
    assert max(honest.waits) <= REPLY_BOUND + EPSILON, max(honest.waits)
    # Nobody starves: every game let in was answered all along, within the bound once the
    # searches started before the crowd (at the level's full 1.2 s) are done.
    for client in admitted:
        assert len(client.waits) > 100, (client.name, len(client.waits))
        assert max(client.waits) <= REPLY_BOUND + 1.2, (client.name, max(client.waits))
        assert max(client.waits[3:]) <= REPLY_BOUND + EPSILON, (client.name, client.waits[:9])
    counts = [len(c.waits) for c in admitted]
    assert min(counts) >= 0.9 * max(counts)  # shares within a tenth of each other
    # Budgets are told truthfully: reduced under the crowd, counted, and the view's figure.
    assert min(honest.budgets) < 1.2 and world.pool.reduced > 0
    assert world.pool.budget_of("game-honest") == honest.budgets[-1]
    # A refused player can still start the level that costs no more than the floor.
    assert not world.pool.crowded(Task("move", "ultimate", (), "easy", 1), refused[0].name)


def test_without_a_crowd_the_ai_takes_its_full_time():
    world = World()
    players = [Client(world, f"198.51.100.{n}", think=1.0) for n in range(2)]
    for player in players:
        assert not world.pool.crowded(player.task(), player.name)
        world.at(0.0, player.ask)
    world.run(until=30.0)
    assert all(b == 1.2 for p in players for b in p.budgets)
    assert world.pool.reduced == 0


def test_one_prefix_with_many_games_gets_one_turn_per_round():
    """Eighty games from one address take one seat in the rotation (one search on a worker at
    a time), taken in turn by game: a player elsewhere keeps a short wait, and every one of
    the eighty games moves."""
    world = World()
    honest = Client(world, "honest", think=2.0)
    world.at(0.0, honest.ask)
    games = [Client(world, f"g{n}", think=0.0) for n in range(80)]
    waits: dict[str, int] = defaultdict(int)
    for game in games:  # same address and player for all: one person with eighty tabs
        def ask(g: Client = game) -> None:
            world.pool.move(g.task(), f"one-{g.name}", "one-address", f"game-{g.name}", g.rev,
                            lambda ticket, g=g: (waits.__setitem__(g.name, waits[g.name] + 1),
                                                 setattr(g, "rev", g.rev + 1),
                                                 world.at(world.now, lambda: ask(g))))
        world.at(1.0, ask)
    world.run(until=120.0)
    assert max(honest.waits) <= REPLY_BOUND + EPSILON
    # One worker's share, taken by game in turn: every game answered, none twice ahead.
    assert len(waits) == 80 and min(waits.values()) >= max(waits.values()) - 1 >= 1


def test_past_capacity_a_new_hard_game_is_busy_naming_the_level_that_starts():
    """The table's side: new Ultimate `hard` games from new addresses are answered `busy` with
    `available` once the rotation is full; an address already in it, an easy game, a classic
    game and a move in a running game all go on."""
    from tests.support.clock import Clock
    from tests.unit.test_table import Person
    from ttt.master.limits import Limits
    from ttt.master.presence import MemorySeats, Presence
    from ttt.master.table import Table
    from ttt.store import open_store

    clock = Clock()
    pool = Scheduler([], slots=1)  # no worker: searches wait, nothing runs
    table = Table(open_store("memory://"), Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=0), thinker=pool)
    hard = {"mode": "ai", "variant": "ultimate", "level": "hard", "you": "X"}
    first = Person(table, address="2001:db8:0:1::1")
    game = first.ok("new_game", **hard).answer["game"]
    assert game["budget_full"] == 1.2
    for n in range(2, pool.capacity() + 1):
        Person(table, address=f"10.0.0.{n}").ok("new_game", **hard)
    late = Person(table, address="10.0.1.1")
    answer = late("new_game", **hard).answer
    assert answer["error"]["code"] == "busy" and answer["available"] == ["easy"]
    assert answer["error"]["available"] == ["easy"] and "hard" in answer["error"]["message"]
    assert pool.crowded_refusals == 1
    late.ok("new_game", **{**hard, "level": "easy"})          # the level named starts
    late.ok("new_game", mode="ai", level="hard", you="X")     # classic's AI is instant
    # Another device in the first player's /64 is the same prefix: already in the rotation.
    Person(table, address="2001:db8:0:1:ffff::2").ok("new_game", **hard)
    # The player already in a game moves, and the AI's reply is asked for (never refused).
    first.ok("move", game=game["id"], cell=40)
    assert pool.waiting() >= 1
