"""One limiter for every limit (ttt/master/limits.py), in memory and in Redis; the admission
gate."""

from __future__ import annotations

import pytest

from tests.support.waiting import eventually
from ttt.game.match import MatchError, create
from ttt.master.limits import Limits, MemoryLimiter, RedisLimiter
from ttt.master.presence import MemorySeats, Presence
from ttt.master.table import Table
from ttt.store import open_store
from ttt.web.transport.admission import Admission


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis"])
def limiters(request):
    """Two limiters that must share their counts (two processes on Redis; one in memory)."""
    if request.param == "memory":
        one = MemoryLimiter(Clock())
        return one, one
    url = request.getfixturevalue("redis_url")
    return RedisLimiter(url), RedisLimiter(url)


def test_a_bucket_allows_its_burst_then_refuses_across_processes(limiters):
    one, two = limiters
    taken = [(one, two)[i % 2].take("create:p:ana", 0.01, 5) for i in range(8)]
    assert taken == [True] * 5 + [False] * 3


def test_take_all_takes_in_order_and_stops_at_the_first_refused(limiters):
    """Several buckets in one call (one round trip on Redis: issue 44), as a sequence of
    `take`s: those before the refused one taken, those after it untouched."""
    one, two = limiters
    buckets = [("all:p", 0.01, 3), ("all:new", 0.01, 1), ("all:a", 0.01, 5)]
    assert one.take_all(buckets) is None
    assert two.take_all(buckets) == 1  # the newcomers' bucket is empty: "all:a" not taken
    assert one.take_all(buckets[::2]) is None  # p: its third token; a: its second
    assert two.take_all(buckets) == 0
    assert [one.take("all:a", 0.01, 5) for _ in range(4)] == [True, True, True, False]
    assert one.take_all([]) is None and one.take_all([("all:free", 0, 0)]) is None


def test_a_bucket_refills_at_its_rate():
    clock = Clock()
    limiter = MemoryLimiter(clock)
    assert limiter.take("react:ana", 1, 1) and not limiter.take("react:ana", 1, 1)
    clock.now += 0.5
    assert not limiter.take("react:ana", 1, 1)
    clock.now += 0.5
    assert limiter.take("react:ana", 1, 1)
    assert limiter.take("react:ben", 1, 1)  # keys are apart


def test_slots_are_capped_across_processes_and_given_back(limiters):
    one, two = limiters
    assert one.acquire("conn:a:x", "s1", 2) and two.acquire("conn:a:x", "s2", 2)
    assert not one.acquire("conn:a:x", "s3", 2) and two.held("conn:a:x") == 2
    assert one.acquire("conn:a:x", "s1", 2)  # a holder already in holds its own slot
    two.release("conn:a:x", "s1")
    assert one.acquire("conn:a:x", "s3", 2) and one.held("conn:a:x") == 2


def test_a_redis_slot_lapses_unless_renewed(redis_url):
    """A crashed process's connections stop counting by themselves."""
    limiter = RedisLimiter(redis_url, lease=0.3)
    assert limiter.acquire("conn:p:ana", "dead", 1) and limiter.acquire("conn:p:ben", "alive", 1)

    def lapsed() -> bool:  # ben's process is alive: it renews; ana's crashed
        limiter.renew([("conn:p:ben", "alive")])
        return not limiter.held("conn:p:ana")

    eventually(lapsed, 5, "the lease never lapsed")
    assert limiter.held("conn:p:ben") == 1 and limiter.acquire("conn:p:ana", "next", 1)


def test_a_player_and_an_address_hold_capped_connections():
    presence = Presence(MemorySeats(), max_connections=2, per_address=3)
    assert presence.connect("a1", "ana", address="1.2.3.4", origin="o1")
    assert presence.connect("a2", "ana", address="1.2.3.4", origin="o1")
    assert not presence.connect("a3", "ana", address="1.2.3.4", origin="o1")  # the player's
    assert presence.connect("b1", "ben", address="1.2.3.4", origin="o1")
    assert not presence.connect("c1", "cy", address="1.2.3.4", origin="o1")   # the address's
    assert presence.connections_of("o1") == 3
    presence.disconnect("a1")
    assert presence.connect("c1", "cy", address="1.2.3.4", origin="o1")


def test_taking_a_seat_by_join_counts_as_a_creation():
    clock = Clock()
    store = open_store("memory://")
    presence = Presence(MemorySeats(clock), clock)
    table = Table(store, presence, clock=clock, limits=Limits(creations_per_minute=2))
    table.connect("bob", "b" * 22, address="10.0.0.2")
    games = []
    for i in range(3):
        match = create("friend", f"{i}" * 22, clock(), you="X")
        store.create(match)
        games.append(match.id)
    answers = [table.handle("join", "bob", {"game": g}).answer for g in games]
    assert [a["ok"] for a in answers] == [True, True, False]
    assert answers[2]["error"]["code"] == "rate_limited"
    # Watching, or opening a game one sits in, is no creation.
    assert table.handle("join", "bob", {"game": games[0]}).answer["you"] == "O"


def test_a_rename_is_rate_limited_and_rewrites_a_bounded_batch():
    clock = Clock()
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(renames_per_minute=2, rename_batch=2))
    table.connect("bob", "b" * 22)
    for _ in range(5):
        store.create(create("friend", "b" * 22, clock(), you="X"))
    assert table.handle("set_name", "bob", {"name": "Bob"}).answer["ok"]
    named = [g for g in store.live_games("b" * 22) if store.get(g).names["X"] == "Bob"]
    assert len(named) == 2
    assert table.handle("set_name", "bob", {"name": "Bo"}).answer["ok"]
    refused = table.handle("set_name", "bob", {"name": "B"}).answer
    assert refused["error"]["code"] == "rate_limited"


def test_names_are_normalised_and_need_something_visible():
    from ttt.master.payloads import clean_name

    assert clean_name("Ｂｏｂ") == "Bob" and clean_name("👩\u200d💻") == "👩\u200d💻"
    for blank in ("\u3164", "\u2800", "\u200d", "\uffa0 \u115f", "\ufdfa" * 2):
        with pytest.raises(MatchError):
            clean_name(blank)


def admitted(gate: Admission, address: str, query: str = "EIO=4&transport=websocket") -> str:
    statuses: list[str] = []
    gate({"PATH_INFO": "/socket.io/", "QUERY_STRING": query, "REMOTE_ADDR": address},
         lambda status, headers: statuses.append(status))
    return statuses[0]


def test_the_gate_refuses_past_the_address_and_process_caps_while_requests_are_in_flight():
    held: list = []

    def app(environ, start_response):  # a websocket: in flight until the test lets it go
        start_response("200 OK", [])
        return [b""]

    gate = Admission(app, trusted=frozenset(), per_address=2, max_open=3,
                     held=lambda key: 5 if key == "9.9.9.9" else 0)
    # In flight: simulate by entering without leaving.
    for address in ("1.1.1.1", "1.1.1.1"):
        assert gate._enter(address) is None
        held.append(address)
    assert admitted(gate, "1.1.1.1").startswith("429")
    assert gate._enter("2.2.2.2") is None
    assert admitted(gate, "3.3.3.3").startswith("503")
    for address in held:
        gate._leave(address)
    assert admitted(gate, "1.1.1.1").startswith("200")
    # Held elsewhere (another process, through Redis): the handshake alone is refused.
    assert admitted(gate, "9.9.9.9").startswith("429")
    assert admitted(gate, "9.9.9.9", "EIO=4&transport=polling&sid=abc").startswith("200")
    assert gate.refused == 3 and gate.total == 1  # 2.2.2.2 is still in flight
