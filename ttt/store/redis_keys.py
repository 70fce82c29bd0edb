"""The names of the Redis keys the store writes: games, players and the indexes of live games."""

from __future__ import annotations

from ttt.store.base import KINDS

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
