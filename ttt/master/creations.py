"""The allowances a new game draws on: the person's and the address's rates, the caps of live
games, the AI's capacity and the friend games nobody joined; and the marks of who has played.

Functions of the services (ttt.master.services): each refusal is a `MatchError` naming its limit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ttt.game.endings import abandon
from ttt.game.match import MatchError
from ttt.game.variants import VARIANTS
from ttt.master.replies import Push
from ttt.master.services import Services
from ttt.master.views import Views
from ttt.pool.thinker import Task
from ttt.runtime.translation import N_
from ttt.store import CapReached, Caps

# A shared address (a school, a carrier's NAT) makes this many persons' worth of new games a
# minute; its newcomers (cookies that have not played yet) together make one person's worth.
PEOPLE_PER_ADDRESS = 10
NEWCOMERS_PER_ADDRESS = 1


class Crowded(MatchError):
    """A new game the AI has no room for now: `busy`, with the levels that still start."""

    def __init__(self, message: str, available: list[str]) -> None:
        super().__init__("busy", message)
        self.available = available


def has_played(svc: Services, player: str, record: dict | None = None) -> bool:
    """Whether the person has made a move: in any game (the store's lasting mark), or a
    game against the AI finished before the mark was kept (its record: `record` if just
    read, else read here)."""
    if player in svc.marks.marked:
        return True
    if record is not None and any(any(c.values()) for c in record.values()):
        return True
    if svc.store.played(player):
        return True
    if record is None:
        record = svc.store.record(player)
    return any(any(counts.values()) for counts in record.values())


def take_creation(svc: Services, player: str, address: str, new: bool = False,
                  record: dict | None = None) -> None:
    """Count one new game (a rematch, a seat taken too): the person's own rate first and
    strictest; then the address's, loose enough for a school or a carrier's NAT; a person
    who has not played yet (a new cookie) also draws on the address's small allowance for
    newcomers, so a flood of fresh cookies is held there and not by the people already
    playing behind that address. Only a `new` game (not a seat in a friend's game, which
    its maker paid for, nor a rematch, which follows a game) asks, outside any store
    transaction (it reads the store; `record`: the person's, if just read). Each refusal
    names the limit that answered."""
    per_minute = svc.limits.creations_per_minute
    if per_minute <= 0:
        return
    origin = svc.origin(address)
    # The buckets in the order they answer, each with its refusal: taken in one call (one
    # round trip on Redis), as the sequence of takes it was.
    buckets = [(f"create:p:{player}", per_minute, "too many new games from you: wait a moment")]
    if origin is not None:
        if new and not has_played(svc, player, record):
            buckets.append((f"create:new:{origin}", per_minute * NEWCOMERS_PER_ADDRESS,
                            "too many new games from new players at your address: play a "
                            "move first, or wait a moment"))
        buckets.append((f"create:a:{origin}", per_minute * PEOPLE_PER_ADDRESS,
                        "too many new games from your address (a shared network): wait a "
                        "moment"))
    refused = svc.limiter.take_all([(key, burst / 60, burst) for key, burst, _ in buckets])
    if refused is not None:
        raise MatchError("rate_limited", buckets[refused][2])


def room_for_unjoined(svc: Services, player: str, address: str, waiting: int) -> None:
    """A friend game waits for its friend on a small allowance: the person's few open
    links, then the address's; so strangers cannot fill the site with games nobody plays
    (the global cap is left to games people join). `waiting`: the player's friend games
    nobody has joined yet."""
    limits = svc.limits
    if limits.creations_per_minute <= 0:
        return
    if waiting >= limits.unjoined_per_player:
        raise MatchError("not_allowed", N_("you have too many friend games nobody has joined "
                                           "yet: share a link, or wait for them to expire"))
    origin = svc.origin(address)
    per_address = limits.unjoined_per_address
    if origin and not svc.limiter.take(f"unjoined:a:{origin}", per_address / 1800, per_address):
        raise MatchError("rate_limited", "too many friend games waiting for a friend from "
                         "your address: wait a moment")


def room_for_ai(svc: Services, variant: str, level: str, address: str) -> None:
    """Past the AI's capacity a new game at a slow level is refused `busy`, naming the
    levels that still start, so the games already running keep a bounded wait."""
    crowded = svc.thinker.crowded
    rules = VARIANTS[variant]
    task = Task("move", variant, (), level)
    if rules.instant_ai or not crowded(task, svc.origin(address) or ""):
        return
    available = [other for other in rules.levels
                 if not crowded(Task("move", variant, (), other), "", count=False)]
    raise Crowded(f"the AI is at capacity: no new {level} games for now"
                  + (f" (try {' or '.join(available)})" if available else ""), available)


def abandon_local(views: Views, local: list[str]) -> list[Push]:
    """End the player's other unfinished pass-and-play games (`local`: their ids, as read
    before the new one was made): a new game takes their screen, and nobody else can ever
    finish them (they would count against the caps for 30 days). After the new game is
    made, so a refused new game changes nothing."""
    svc = views.services
    pushes: list[Push] = []
    for game_id in local:
        ended = svc.write(game_id, lambda m: abandon(m, svc.clock()))
        if ended and ended[1].rev != ended[0].rev:
            pushes += views.game_pushes(ended[1])
    return pushes


def caps(svc: Services) -> Caps:
    """The caps of live games a create is counted against."""
    limits = svc.limits
    return Caps(limits.live_per_player, limits.live_total, limits.live_per_address)


def _cap_words(cap: CapReached) -> str:
    """Which live-game cap refused a new game, said."""
    if cap.per_address:
        return N_("too many unfinished games from your address (a shared network): finish some")
    if cap.per_player:
        return N_("you have too many unfinished games")
    return N_("the server is full; try again in a moment")


@contextlib.contextmanager
def capped() -> Iterator[None]:
    """A create refused by its caps, as the refusal the player gets."""
    try:
        yield
    except CapReached as cap:
        raise MatchError("not_allowed", _cap_words(cap)) from None
