"""A lasting "has played" mark (issue 41): a person who made a move in any game is no
newcomer, whatever their live games; the mark is kept by the store, across a restart."""

from __future__ import annotations

import random

import pytest

from tests.support.clock import Clock
from tests.unit.test_table import Person
from ttt.master.limits import Limits, MemoryLimiter
from ttt.master.presence import MemorySeats, Presence
from ttt.master.table import Table
from ttt.store import open_store

SCHOOL = "192.0.2.7"


def new_table(store, clock) -> Table:
    presence = Presence(MemorySeats(clock), clock, limiter=MemoryLimiter(clock))
    return Table(store, presence, clock=clock, rng=random.Random(5),
                 limits=Limits(creations_per_minute=30, live_per_address=500))


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = ("memory://" if request.param == "memory"
               else f"sqlite:///{tmp_path / 'played.sqlite3'}")
    store = open_store(url)
    yield store
    store.close()


def finished_friend_games(ana: Person, friend: Person, count: int) -> None:
    for _ in range(count):
        game = ana.ok("new_game", mode="friend", you="X").answer["game"]["id"]
        friend.ok("join", game=game)
        for who, cell in ((ana, 0), (friend, 3), (ana, 1), (friend, 4), (ana, 2)):
            who.ok("move", game=game, cell=cell)


def drain_the_newcomers(table: Table) -> None:
    for _ in range(40):  # an attacker's fresh cookies at the same address
        Person(table, address=SCHOOL)("new_game", mode="ai", level="easy", you="X")


def test_a_player_of_finished_friend_games_is_no_newcomer(store):
    clock = Clock()
    table = new_table(store, clock)
    ana = Person(table, address=SCHOOL)
    friend = Person(table, address="198.51.100.9")
    finished_friend_games(ana, friend, 3)
    for _ in range(5):  # live games she has not moved in, first in her list as often as not
        ana.ok("new_game", mode="friend", you="O")
    drain_the_newcomers(table)
    assert ana("new_game", mode="ai", level="easy", you="X").answer["ok"]


def test_the_mark_survives_a_restart(store):
    clock = Clock()
    table = new_table(store, clock)
    ana = Person(table, address=SCHOOL)
    friend = Person(table, address="198.51.100.9")
    finished_friend_games(ana, friend, 1)
    table.tick()  # the marks are written at the tick after the move
    assert store.played(ana.player) and not store.played(Person(table).player)
    again = new_table(store, clock)  # a restarted process: nothing known in memory
    drain_the_newcomers(again)
    assert Person(again, ana.player, SCHOOL)("new_game", mode="ai", level="easy",
                                             you="X").answer["ok"]
