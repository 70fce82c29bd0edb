"""The names of the Redis keys the store writes: games, players and the indexes of live games;
and what is read back from them (a record, a cap refused)."""

from __future__ import annotations

from ttt.store.base import KINDS, OUTCOMES, CapReached, empty_record

PREFIX = "ttt:"
LIVE = f"{PREFIX}live"            # sorted set: live game id -> last change
DEADLINES = f"{PREFIX}deadlines"  # sorted set: timed game id -> when its side on move runs out
BEAT = f"{PREFIX}beat"             # when a server process was last seen up


def game_key(game_id: str) -> str:
    """One game's JSON body."""
    return f"{PREFIX}game:{game_id}"


def player_key(player_id: str) -> str:
    """One player's hash: record, current game, name."""
    return f"{PREFIX}player:{player_id}"


def live_of(owner: str) -> str:
    """The live games of one owner (player, or '@' address): sorted set like LIVE."""
    return f"{PREFIX}live:{owner}"


def kind_key(mode: str, variant: str) -> str:
    """The live games of one kind: sorted set like LIVE, which it always agrees with."""
    return f"{PREFIX}live-kind:{mode}:{variant}"


KIND_INDEXES = tuple(kind_key(mode, variant) for mode, variant in KINDS)


def record_of(fields: dict[str, str]) -> dict[str, dict[str, int]]:
    """A player's record from the fields of their hash (`level:outcome` counts)."""
    record = empty_record()
    for field, count in fields.items():
        level, _, outcome = field.partition(":")
        if level in record and outcome in OUTCOMES:
            record[level][outcome] = int(count)
    return record


def cap_reached(refused: int, owners: list[tuple[str, int]]) -> CapReached:
    """The refusal of a WRITE over a cap (2: on all games; 2 + i: on owner i's)."""
    by_address = refused > 2 and owners[refused - 3][0].startswith(live_of("@"))
    return CapReached(per_player=refused != 2, per_address=by_address)
