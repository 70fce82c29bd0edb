"""What the master and its parts work with, named: one frozen `Services` value, and the
`typing.Protocol`s of the collaborators the web layer hands in (presence, the thinker, a
store's cache).

The parts (ttt.master.views, ttt.master.ai_turns, ttt.master.endgame, ttt.master.clocks) take
a match and these services; none holds the Table. The Table builds them again when it is
handed a new collaborator.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ttt.game.match import Match, MatchError
from ttt.master.limits import Limiter, Limits, prefix_of
from ttt.pool.thinker import Task, Ticket
from ttt.store import Caps, Store, Update, as_update

if TYPE_CHECKING:
    from ttt.master.replies import Push


class Connection(Protocol):
    """One connection as presence knows it (ttt.master.presence.Connection)."""

    player: str
    address: str
    origin: str | None
    game: str | None
    protocol: int


class Presence(Protocol):
    """Who is connected, to which seat (ttt.master.presence.Presence)."""

    limiter: Limiter  # the one limiter of every rate and slot (shared through Redis)
    started: float    # absence is never counted from before this process saw it

    def connect(self, sid: str, player: str, address: str = "",
                origin: str | None = None) -> bool: ...
    def connection(self, sid: str) -> Connection | None: ...
    def plan(self, sid: str, match: Match) -> Any: ...
    def attach(self, sid: str, match: Match, planned: Any = None) -> dict[str, bool]: ...
    def disconnect(self, sid: str) -> dict[str, bool]: ...
    def due(self) -> list[str]: ...
    def online(self, game_id: str) -> dict[str, bool]: ...
    def watchers(self, game_id: str) -> int: ...
    def present(self, game_id: str) -> tuple[dict[str, bool], int]: ...
    def last_seen(self, game_id: str, mark: str) -> float | None: ...


class Thinker(Protocol):
    """The AI's searches, in worker processes or inline (ttt.pool.thinker.Scheduler)."""

    def move(self, task: Task, owner: str, address: str, game: str, rev: int,
             done: Callable[[Ticket], None]) -> Ticket: ...
    def analyze(self, task: Task, owner: str, address: str) -> Ticket: ...
    def budget_of(self, game: str) -> float | None: ...
    def crowded(self, task: Task, address: str, count: bool = True) -> bool: ...
    def close(self) -> None: ...


@runtime_checkable
class Cached(Protocol):
    """A store that keeps recent matches in memory (SQLite's): read without a query."""

    def cached(self, game_id: str) -> Match | None: ...


class HouseRules(Protocol):
    """Rules a write follows beside the match's own (ttt.bots.referee.BotRules: a bot's move
    deadline, casual games, ratings), applied by the master, never by a store."""

    def created(self, match: Match) -> Match: ...
    def rewrite(self, match: Match, update: Update) -> Update: ...
    def ended(self, before: Match, after: Match) -> None: ...


MARKED_KEPT = 100_000  # players this process knows are marked as having played (no rewrite)


class Marks:
    """The persons this process saw make a move: known at once, written to the store at the
    next tick (off the move's own path, tests/budget.json), each written once."""

    def __init__(self) -> None:
        self.marked: set[str] = set()
        self.unmarked: set[str] = set()   # ... not yet written to the store
        self._lock = threading.Lock()

    def mark(self, player: str) -> None:
        """The person made a move."""
        if player in self.marked:
            return
        if len(self.marked) >= MARKED_KEPT:
            self.marked.clear()
        self.marked.add(player)
        with self._lock:
            self.unmarked.add(player)

    def write(self, store: Store) -> None:
        """Write the marks of the persons who made their first move since the last tick."""
        with self._lock:
            players, self.unmarked = self.unmarked, set()
        try:
            for player in sorted(players):
                store.mark_played(player)
                players.discard(player)
        finally:  # a store away: the rest at the next tick
            with self._lock:
                self.unmarked |= players


def _nothing(pushes: list[Push]) -> None:
    """Where pushes go with no publisher (unit tests, the command line)."""


def _untimed(seconds: float) -> None:
    """Where the AI's search times go with no metrics."""


@dataclass(frozen=True)
class Services:
    """The master's collaborators, in one typed value."""

    store: Store
    presence: Presence
    thinker: Thinker
    clock: Callable[[], float]
    rng: random.Random
    limits: Limits
    salt: bytes = b""
    publish: Callable[[list[Push]], None] = _nothing  # the app's one publisher
    searched: Callable[[float], None] = _untimed     # told how long each AI search took
    answer_wait: float = 5.0      # seconds an `analyze` or hint may wait for a worker
    bot_seconds: float = 10.0     # a bot's move deadline (the house's setting)
    marks: Marks = field(default_factory=Marks)  # who this process saw make a move
    rules: HouseRules | None = None  # the house's rules for bots, on every write
    cache: Cached | None = None

    @property
    def limiter(self) -> Limiter:
        """The one limiter of every rate and slot: the presence's (shared through Redis
        when processes are)."""
        return self.presence.limiter

    def player(self, sid: str) -> str:
        """The player of a connection (connect refused an unknown one)."""
        conn = self.presence.connection(sid)
        if conn is None:
            raise MatchError("bad_request", "no session")
        return conn.player

    def origin(self, address: str) -> str | None:
        """A keyed hash of a client address: enough to count by, no address kept."""
        if not address:
            return None
        address = prefix_of(address)  # an IPv6 /64 is one address (one home, one phone)
        return hashlib.blake2b(address.encode(), key=self.salt, digest_size=8).hexdigest()

    def load(self, game_id: str) -> Match:
        """The stored match, or the `not_found` refusal."""
        return self.load_for(game_id, None)[0]

    def load_for(self, game_id: str, player: str | None) -> tuple[Match, Any]:
        """`load`, and the player's profile if the store reads it in the same round trip
        (its `get_with_profile`: Redis), else None (read it when needed)."""
        both = getattr(self.store, "get_with_profile", None) if player is not None else None
        match, profile = both(game_id, player) if both else (self.store.get(game_id), None)
        if match is None:
            raise MatchError("not_found", "no such game")
        return match, profile

    def create(self, match: Match, caps: Caps | None = None, current: str | None = None,
               around: Any = None) -> None:
        """Store a new game (its first deadline set by the house's rules); `current`, `around`:
        the player about to be shown it, the lease change (see GameStore.create)."""
        self.store.create(self.rules.created(match) if self.rules else match, caps, current,
                          around)

    def write(self, game_id: str, change: Callable[[Match], Match | Update]
              ) -> tuple[Match, Match] | None:
        """The store's compare-and-set of `change`, with the house's rules applied inside the
        same transaction and the game's end recorded after it; (before, after) or None."""
        rules = self.rules
        if rules is None:
            return self.store.update(game_id, change)
        done = self.store.update(game_id, lambda match: rules.rewrite(match, as_update(
            change(match))))
        if done is not None:
            rules.ended(*done)
        return done

    def update(self, game_id: str, change: Callable[[Match], Match | Update]
               ) -> tuple[Match, Match]:
        """`write`, or the `not_found` refusal."""
        changed = self.write(game_id, change)
        if changed is None:
            raise MatchError("not_found", "no such game")
        return changed

    def cached(self, game_id: str) -> Match | None:
        """The store's in-memory copy (maybe stale), if it keeps one; never a query."""
        return self.cache.cached(game_id) if self.cache is not None else None
