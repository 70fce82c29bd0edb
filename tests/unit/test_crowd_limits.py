"""Limits that see people, not only addresses: one person flooding new games from a shared
address (one cookie, or a new cookie per game) does not stop a second person who was already
playing there; every refusal says which limit answered."""

from __future__ import annotations

import random

import pytest

from tests.support.clock import Clock
from tests.unit.test_table import Person
from ttt.master.limits import Limits, MemoryLimiter
from ttt.master.presence import MemorySeats, Presence
from ttt.master.table import Table
from ttt.store import open_store

SCHOOL = "192.0.2.7"  # one address in front of many people


@pytest.fixture
def table():
    clock = Clock()
    presence = Presence(MemorySeats(clock), clock, limiter=MemoryLimiter(clock))
    store = open_store("memory://")
    yield Table(store, presence, clock=clock, rng=random.Random(5),
                limits=Limits(creations_per_minute=30, live_per_address=500))
    store.close()


def play_a_game(person: Person) -> None:
    """Start a classic game against the AI and make a move in it."""
    game = person.ok("new_game", mode="ai", level="easy", you="X").answer["game"]
    person.ok("move", game=game["id"], cell=4)


def refusal(person: Person, **payload) -> dict:
    answer = person("new_game", **payload).answer
    assert answer["ok"] is False, answer
    return answer["error"]


def test_one_cookie_flooding_is_held_by_its_own_limit(table):
    ana = Person(table, address=SCHOOL)
    play_a_game(ana)
    flood = Person(table, address=SCHOOL)
    made = 0
    while flood("new_game", mode="ai", level="easy", you="X").answer["ok"]:
        made += 1
        assert made < 100, "the person's limit never answered"
    error = refusal(flood, mode="ai", level="easy", you="X")
    assert error["code"] == "rate_limited" and "from you" in error["message"]
    for _ in range(10):  # the person already playing there starts and plays games as before
        play_a_game(ana)


def test_a_new_cookie_per_game_is_held_by_the_addresss_newcomers(table):
    ana = Person(table, address=SCHOOL)
    play_a_game(ana)
    refused = []
    for _ in range(60):  # each game from a fresh cookie that never plays
        answer = Person(table, address=SCHOOL)("new_game", mode="ai", level="easy",
                                               you="X").answer
        if not answer["ok"]:
            refused.append(answer["error"])
    assert len(refused) >= 25
    assert all(e["code"] == "rate_limited" and "new players" in e["message"] for e in refused)
    for _ in range(10):
        play_a_game(ana)
    # Somebody at another address never noticed.
    elsewhere = Person(table, address="198.51.100.3")
    for _ in range(5):
        play_a_game(elsewhere)


def test_a_newcomer_who_plays_earns_their_own_allowance(table):
    for _ in range(40):  # the address's newcomers' allowance is spent
        Person(table, address=SCHOOL)("new_game", mode="ai", level="easy", you="X")
    ben = Person(table, address=SCHOOL)
    friend = Person(table, address="198.51.100.9")
    link = friend.ok("new_game", mode="friend", you="X").answer["game"]["id"]
    assert refusal(ben, mode="ai", level="easy", you="X")["code"] == "rate_limited"
    ben.ok("join", game=link)  # a seat in a friend's game is one way in (the newcomers' last)
    friend.ok("move", game=link, cell=0)
    ben.ok("move", game=link, cell=4)
    for _ in range(5):  # having played, ben draws on his own allowance
        play_a_game(ben)


def test_the_live_game_cap_of_an_address_says_so():
    clock = Clock()
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=0, live_per_address=3))
    people = [Person(table, address=SCHOOL) for _ in range(4)]
    for person in people[:3]:
        person.ok("new_game", mode="friend", you="X")
    error = refusal(people[3], mode="friend", you="X")
    assert error["code"] == "not_allowed" and "your address" in error["message"]
    lone = Person(table, address="198.51.100.4")
    for _ in range(3):
        lone.ok("new_game", mode="friend", you="X")
    store.close()


def test_an_ipv6_64_is_one_address_and_ipv4_is_whole():
    from ttt.master.limits import prefix_of

    assert prefix_of("2001:db8:1:2:aaaa::1") == prefix_of("2001:db8:1:2:ffff:1:2:3")
    assert prefix_of("2001:db8:1:2::1") != prefix_of("2001:db8:1:3::1")
    assert prefix_of("::ffff:192.0.2.7") == prefix_of("192.0.2.7") == "192.0.2.7"
    assert prefix_of("192.0.2.7") != prefix_of("192.0.2.8")
    clock = Clock()
    table = Table(open_store("memory://"), Presence(MemorySeats(clock), clock), clock=clock)
    assert table.origin("2001:db8:1:2::5") == table.origin("2001:db8:1:2:9::9")


@pytest.fixture(params=["memory", "sqlite", "redis"])
def any_store(request, tmp_path):
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    else:
        url = request.getfixturevalue("redis_url")
    store = open_store(url)
    yield store
    store.close()


def test_every_store_says_which_live_game_cap_answered(any_store):
    """The per-address cap is told apart from the per-player one in the creating write, and
    a create refused this way leaves nothing behind."""
    from dataclasses import replace

    from ttt.game.match import create
    from ttt.store import CapReached, Caps

    caps = Caps(per_player=1, total=100, per_origin=2)
    any_store.create(replace(create("friend", "a" * 22, 1.0, you="X"), origin="school"), caps)
    any_store.create(replace(create("friend", "b" * 22, 1.0, you="X"), origin="school"), caps)
    with pytest.raises(CapReached) as address:
        any_store.create(replace(create("friend", "c" * 22, 1.0, you="X"), origin="school"),
                         caps)
    assert address.value.per_address and address.value.per_player
    with pytest.raises(CapReached) as person:
        any_store.create(replace(create("friend", "a" * 22, 1.0, you="X"), origin="home"), caps)
    assert person.value.per_player and not person.value.per_address
    assert any_store.count_live("c" * 22) == 0
