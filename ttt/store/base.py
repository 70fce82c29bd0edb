"""The store's shared words: the interface every backend keeps, its errors and helpers.

Apart from `ttt.store` (which picks a backend) so the backends import these from a module
that imports none of them back (tests/test_import_cycles.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from ttt.game.match import MODES, Match
from ttt.game.variants import RECORD_LEVELS, VARIANTS

MAX_RETRIES = 20
OUTCOMES = ("wins", "draws", "losses")
# Every kind of game, (mode, variant): the live counts name each one, zeros included.
KINDS: tuple[tuple[str, str], ...] = tuple((m, v) for m in MODES for v in VARIANTS)


class Profile(NamedTuple):
    """A player as a new game reads them (Store.profile)."""

    name: str | None
    current: str | None
    record: dict[str, dict[str, int]]
    live: list[str]  # the ids of their unfinished games, sorted


class Update(NamedTuple):
    """What a change writes: the match, and what goes with it in the same transaction."""

    match: Match
    credits: tuple[tuple[str, str, str], ...] = ()  # (player id, level, outcome) to add one to
    create: Match | None = None                     # a new game, made with the change
    caps: Caps | None = None                        # its live-game caps, checked in the write
    current: str | None = None  # the player shown it next: a store may set their current game
    #                             in the write, then their `set_current` costs nothing
    around: Any = None  # so with their connection's lease change (Presence.plan)


Change = Callable[[Match], "Match | Update"]
# Gives a running clock back the time the server was down: (match, last seen up, downtime).
Credit = Callable[[Match, float, float], Match]


def as_update(result: Match | Update) -> Update:
    """A change's result as an Update."""
    return result if isinstance(result, Update) else Update(result)


@dataclass(frozen=True)
class Caps:
    """Live games allowed per player, per creator's address and in all; checked in the
    creating transaction."""

    per_player: int
    total: int
    per_origin: int = 0  # 0: no cap per address


class CapReached(Exception):
    """A create refused by its caps; `per_player` says which one (`per_address`: the
    creator's address's, a per-player cap of the '@' owner)."""

    def __init__(self, per_player: bool, per_address: bool = False) -> None:
        super().__init__("per address" if per_address else
                         "per player" if per_player else "total")
        self.per_player = per_player
        self.per_address = per_address


class StoreUnavailable(RuntimeError):
    """The backing service cannot be reached."""


class GameStore(Protocol):
    """Where matches live: each change a compare-and-set on the match's revision."""

    def create(self, match: Match, caps: Caps | None = None, current: str | None = None,
               around: Any = None) -> None:
        """Add a new match; CapReached when its creator or the server has too many live ones.
        `current`: the player about to be shown it (`set_current` follows): a store may set
        it in the same write, then that `set_current` costs nothing (Redis); so
        with `around`, the connection's lease change (Presence.plan), then not made again."""

    def get(self, game_id: str) -> Match | None:
        """The match with that id, or None."""

    def get_many(self, game_ids: list[str]) -> list[Match | None]:
        """The matches with those ids, in their order (None for each one not there), in one
        read (one round trip on Redis, one statement on SQLite) however many they are."""

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        """Apply `change` atomically; (before, after), or None when there is no such game.

        `change` may raise, which leaves everything untouched. It may be called more
        than once when another writer got in first. A result with the same `rev`
        as before means "nothing to write". A game created with caps raises CapReached
        (and writes nothing) when they are reached, counted inside the same write.
        """

    def delete(self, game_id: str) -> None:
        """Remove a game."""

    def live_games(self, player_id: str) -> list[str]:
        """The ids of the games still on in which this player sits."""

    def count_live(self, player_id: str | None = None) -> int:
        """Games still being played (by this player, if given)."""


class ProfileStore(Protocol):
    """What the server keeps about a player: the record, the current game, the name."""

    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        """The player's wins, draws and losses against the AI, per level."""

    def current(self, player_id: str) -> str | None:
        """The id of the player's current game."""

    def set_current(self, player_id: str, game_id: str) -> None:
        """Remember the player's current game."""

    def name(self, player_id: str) -> str | None:
        """The player's display name."""

    def profile(self, player_id: str) -> Profile:
        """What a new game reads of its player, in one read: the name, the current
        game, the record (as `record` gives it) and the live games (as `live_games`)."""

    def set_name(self, player_id: str, name: str) -> None:
        """Keep the player's display name."""

    def mark_played(self, player_id: str) -> None:
        """Remember that the player has made a move (in any game), for as long as the
        player's profile is kept (the newcomers' allowance reads it)."""

    def played(self, player_id: str) -> bool:
        """Whether the player was marked as having made a move."""


class Housekeeping(Protocol):
    """The server's own rounds: clocks that ran out, purges, health."""

    def live_ids(self) -> list[str]:
        """Every unfinished game's id (start-up: the AI moves that were waiting)."""

    def count_live_by_kind(self) -> dict[tuple[str, str], int]:
        """Games still being played per (mode, variant): every kind in KINDS, zeros
        included; they add up to count_live(). Cheap enough for every metrics scrape."""

    def due(self, now: float) -> list[str]:
        """The ids of timed games whose side on move ran out of time by `now`."""

    def resume(self, clock: Callable[[], float], grace: float, credit: Credit) -> list[Match]:
        """Stamp `clock()` as the last moment a server was seen up. When the stamp it replaces
        is older than `grace` (no server ran, or the store was out of reach), first apply
        `credit(match, stamp, now - stamp)` to every live timed game, in the same transaction,
        so no process can end one on time before its clock is given the downtime back.
        `clock` is read once the stamp is read (a call that waited on the store must not
        stamp the moment it started). The matches credited."""

    def purge(self, finished_before: float, idle_before: float,
              untouched_before: float | None = None) -> int:
        """Delete finished games not touched since the first time, any since the second,
        and games nobody moved in or joined since the third; forget players with no live
        game not seen since the second (their names, records and current game)."""

    def ping(self) -> bool:
        """Whether the backend answers."""

    def close(self) -> None:
        """Release connections."""


class Store(GameStore, ProfileStore, Housekeeping, Protocol):
    """Everything the table needs from storage; each backend implements all three parts."""

    url: str  # the store's address (memory://, sqlite:///path, redis://...): the bot book
    #           beside it opens at the same one (ttt.bots.book.open_book)


def empty_record() -> dict[str, dict[str, int]]:
    """A record with no games."""
    return {level: dict.fromkeys(OUTCOMES, 0) for level in RECORD_LEVELS}


def by_kind(counts: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    """Live counts with every kind named, zeros included, KINDS first."""
    return {**dict.fromkeys(KINDS, 0), **counts}


def add_credits(record: dict[str, dict[str, int]], player_id: str,
                credits: tuple[tuple[str, str, str], ...]) -> bool:
    """Count into `record` the credits for that player; whether any."""
    changed = False
    for who, level, outcome in credits:
        if who == player_id:
            record.setdefault(level, dict.fromkeys(OUTCOMES, 0))[outcome] += 1
            changed = True
    return changed
