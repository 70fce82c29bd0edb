"""Live games nobody plays do not count for long: a friend game nobody joined is purged
after half an hour; one joined with no move is called off after an hour; games nobody has
joined count against a small allowance per person and per address."""

from __future__ import annotations

import random

import pytest

from tests.support.clock import Clock
from tests.unit.test_table import Person
from ttt.master.limits import Limits, MemoryLimiter
from ttt.master.presence import MemorySeats, Presence
from ttt.master.table import Table
from ttt.store import open_store
from ttt.web.ops.settings import DEFAULTS
from ttt.web.realtime.housekeeping import UNPLAYED_SECONDS, end_unplayed

STRANGERS = "203.0.113.50"


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def table(clock):
    store = open_store("memory://")
    presence = Presence(MemorySeats(clock), clock, limiter=MemoryLimiter(clock))
    yield Table(store, presence, clock=clock, rng=random.Random(2),
                limits=Limits(creations_per_minute=1000, unjoined_per_player=3,
                              unjoined_per_address=6, live_total=1000))
    store.close()


def open_link(person: Person) -> dict:
    return person("new_game", mode="friend", you="X").answer


def test_the_allowance_of_unjoined_games_holds_strangers_and_not_a_new_person_elsewhere(table):
    first = Person(table, address=STRANGERS)
    for _ in range(3):
        assert open_link(first)["ok"]
    refused = open_link(first)["error"]  # the person's own allowance
    assert refused["code"] == "not_allowed" and "nobody has joined" in refused["message"]
    second = Person(table, address=STRANGERS)
    for _ in range(3):
        assert open_link(second)["ok"]
    third = Person(table, address=STRANGERS)  # the address's allowance is spent too
    refused = open_link(third)["error"]
    assert refused["code"] == "rate_limited" and "your address" in refused["message"]
    # A new person elsewhere still makes a link, a friend joins, and they play.
    host, friend = Person(table, address="198.51.100.20"), Person(table, address="192.0.2.1")
    game = open_link(host)["game"]["id"]
    friend.ok("join", game=game)
    host.ok("move", game=game, cell=4)
    friend.ok("move", game=game, cell=0)
    # A joined link no longer counts against the person's allowance of waiting ones.
    for _ in range(2):
        assert open_link(host)["ok"]


def test_a_joined_game_nobody_moves_in_is_called_off_after_an_hour(table, clock):
    host, friend = Person(table, address="198.51.100.21"), Person(table, address="192.0.2.2")
    idle = open_link(host)["game"]["id"]
    friend.ok("join", game=idle)
    played = open_link(host)["game"]["id"]
    friend.ok("join", game=played)
    host.ok("move", game=played, cell=4)
    clock.now += UNPLAYED_SECONDS / 2
    assert end_unplayed(table, clock.now) == []
    clock.now += UNPLAYED_SECONDS
    pushes = end_unplayed(table, clock.now)
    assert pushes and table.store.get(idle).status == "aborted"
    assert table.store.get(played).status == "playing"  # a game with a move goes on
    assert table.store.count_live(host.player) == 1


def test_an_unjoined_game_expires_within_half_an_hour():
    assert DEFAULTS["TTT_UNTOUCHED_TTL"] <= 1800
    store = open_store("memory://")
    clock = Clock()
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock)
    host = Person(table, address="198.51.100.22")
    game = open_link(host)["game"]["id"]
    store.purge(clock.now - 7 * 86400, clock.now - 30 * 86400,
                clock.now + 1 - DEFAULTS["TTT_UNTOUCHED_TTL"])
    assert store.get(game) is not None  # not yet
    assert store.purge(clock.now - 7 * 86400, clock.now - 30 * 86400, clock.now + 1) == 1
    assert store.get(game) is None
    store.close()
