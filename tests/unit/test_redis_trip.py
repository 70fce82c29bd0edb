"""What rides in the Redis store's one round trip (issue 44), and when it is read again.

A game's presence read in the round trip of its write serves the event's views, but never
after this process changed the game's leases, nor once the clock moved on; a connection's
leases and the presence before and after are one pipeline that says what MemorySeats says;
the records a change credits are read with it and serve the one `record` that follows.
"""

from __future__ import annotations

import time

import pytest
import redis

from ttt.game.match import create, play, take_seat
from ttt.master.presence import WATCH, MemorySeats, RedisSeats
from ttt.store.base import Update
from ttt.store.redis import RedisStore

X, O = "x" * 22, "o" * 22  # noqa: E741 - the sides


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def commands(redis_url):
    """How many commands Redis ran so far (INFO aside), read on one connection of its own."""
    counter = redis.Redis.from_url(redis_url)

    def count() -> int:
        stats = counter.info("commandstats")
        return sum(v["calls"] for k, v in stats.items() if k != "cmdstat_info")

    yield count
    counter.close()


def test_the_presence_read_with_a_write_serves_the_views_until_a_lease_changes(redis_url, commands):
    clock = Clock()
    store, seats = RedisStore(redis_url), RedisSeats(redis_url, clock=clock)
    store.riders.append(seats.ride)
    match = take_seat(create("friend", X, clock.now, you="X"), O, clock.now)
    seats.add(match.id, "X", "sid-x")
    store.create(match)  # the presence rides in the create's round trip
    before = commands()
    assert seats.present(match.id) == ({"X": True, "O": False}, 0)
    assert seats.online(match.id) == {"X": True, "O": False} and seats.watchers(match.id) == 0
    assert commands() == before  # no read: the ride's answer
    seats.add(match.id, WATCH, "sid-w")  # a lease changed here: read again
    assert seats.present(match.id) == ({"X": True, "O": False}, 1)
    store.update(match.id, lambda m: play(m, X, 4, clock.now))
    clock.now += 31  # the leases ran out: the ride's answer is not served past its moment
    assert seats.present(match.id) == ({"X": False, "O": False}, 0)
    store.close()
    seats._redis.close()


def test_a_connections_shift_says_what_memory_seats_say(redis_url):
    clock = Clock()
    shared, local = RedisSeats(redis_url, clock=clock), MemorySeats(clock=clock)
    steps = [(None, ("g1", ("X",))), (("g1", ("X",), 0.0), ("g2", (WATCH,))),
             (("g2", (WATCH,), 0.0), ("g1", ("X", "O"))), (("g1", ("X", "O"), 5.0), None)]
    for leave, join in steps:
        assert shared.shift("sid", leave, join) == local.shift("sid", leave, join)
        for game in ("g1", "g2"):
            assert shared.present(game) == local.present(game)
    shared._redis.close()


def test_a_shift_riding_a_create_says_what_memory_seats_say_and_a_refused_one_none(redis_url):
    """A new game's lease change sent in its create's round trip (Presence.plan): the same
    answer and leases as a shift; a create refused by its caps changes no lease."""
    from ttt.store.base import CapReached, Caps

    clock = Clock()
    store, shared, local = RedisStore(redis_url), RedisSeats(redis_url, clock=clock), \
        MemorySeats(clock=clock)
    old = create("friend", X, clock.now, you="X")
    store.create(old)
    assert shared.shift("sid", None, (old.id, ("X",))) == local.shift("sid", None, (old.id, ("X",)))
    new = create("local", X, clock.now)
    planned = shared.plan("sid", (new.id, ("X", "O")), (old.id, "X", ("X",)))
    store.create(new, around=planned)
    assert planned.found == local.shift("sid", (old.id, ("X",), 0.0), (new.id, ("X", "O")))
    for game in (old.id, new.id):
        assert shared.present(game) == local.present(game)
    refused = create("friend", X, clock.now, you="X")
    planned = shared.plan("sid", (refused.id, ("X",)), (new.id, "both", ("X", "O")))
    with pytest.raises(CapReached):
        store.create(refused, Caps(per_player=1, total=100), around=planned)
    assert shared.present(new.id) == ({"X": True, "O": True}, 0)
    assert shared.present(refused.id) == ({"X": False, "O": False}, 0)
    store.close()
    shared._redis.close()


def test_a_seats_leases_ride_the_last_try_of_a_write_retried_on_a_stale_rev(redis_url):
    """A join's write carries its lease change (steps.take_a_seat), planned again at each try:
    a try refused as stale writes no lease, the last try's plan is the one written."""
    clock = Clock()
    one, two = RedisStore(redis_url), RedisStore(redis_url)
    shared, local = RedisSeats(redis_url, clock=clock), MemorySeats(clock=clock)
    game = create("friend", X, clock.now, you="X")
    one.create(game)
    two.update(game.id, lambda m: play(m, X, 4, clock.now))  # `one`'s copy is stale now
    plans = []

    def seat(match):
        after = take_seat(match, O, clock.now)
        plans.append(shared.plan("sid-o", (game.id, ("O",)), (None, None, ())))
        return Update(after, current=O, around=plans[-1])

    one.update(game.id, seat)
    assert len(plans) == 2 and plans[-1].found is not None
    assert plans[-1].found == local.shift("sid-o", None, (game.id, ("O",)))
    assert shared.present(game.id) == local.present(game.id) == ({"X": False, "O": True}, 0)
    assert one.current(O) == game.id
    one.close()
    two.close()


def test_a_join_reads_the_game_and_the_profile_in_one_round_trip(redis_url):
    """`get_with_profile` (issue 44: a join read them one after the other): what `get` and
    `profile` say, a missing game None, in one request."""
    store = RedisStore(redis_url)
    game = create("friend", X, time.time(), you="X")
    store.create(game)
    store.set_name(O, "Olga")
    sent = []
    real = store.redis.connection_pool.get_connection

    def counted(*args, **kwargs):
        sent.append(1)
        return real(*args, **kwargs)

    store.redis.connection_pool.get_connection = counted
    both = store.get_with_profile(game.id, O)
    assert len(sent) == 1  # one request
    assert both == (store.get(game.id), store.profile(O))
    assert store.get_with_profile("n" * 22, X) == (None, store.profile(X))
    assert store.profile(O).name == "Olga" and store.profile(X).live == [game.id]
    store.close()


def test_the_records_a_change_credits_serve_the_record_read_after_it(redis_url, commands):
    store = RedisStore(redis_url)
    now = time.time()
    match = create("ai", X, now, you="X", level="perfect")
    store.create(match)
    store.update(match.id, lambda m: Update(m.changed(now), (("p" * 22, "perfect", "losses"),)))
    before = commands()
    assert store.record("p" * 22)["perfect"]["losses"] == 1
    assert commands() == before  # read with the write
    assert store.record("p" * 22)["perfect"]["losses"] == 1
    assert commands() == before + 1  # once only: then from Redis
    store.close()
