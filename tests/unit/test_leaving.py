"""Leaving a game against the AI is the server's rule (PROTOCOL v4 "Leaving an AI game"):
`new_game` and `rematch` end the game the page showed, called off while it is abortable,
resigned (a loss, in the record) after; friend games never; the idle purge by the same rule."""

from __future__ import annotations

import contextlib

import pytest

from tests.unit.test_table import Person  # `clock` and `table`: tests/conftest.py
from ttt.master.limits import Limits
from ttt.master.presence import MemorySeats, Presence
from ttt.master.table import Table
from ttt.store import open_store
from ttt.web import create_app
from ttt.web.realtime import housekeeping

PERFECT = {"mode": "ai", "you": "X", "level": "perfect"}


def moved(person: Person, game: dict, times: int) -> dict:
    """The game after the person's `times` moves, each on the first legal cell."""
    for _ in range(times):
        game = person.ok("move", game=game["id"], cell=game["legal"][0]).answer["game"]
    return game


def test_a_new_game_after_two_moves_against_the_ai_is_a_loss(table):
    """Before: the old game stayed `playing` and the record was untouched."""
    ana = Person(table)
    old = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 2)
    assert "abort" not in old["can"]
    answer = ana.ok("new_game", **PERFECT, **{"from": old["id"]}).answer
    assert answer["left"] == {"game": old["id"], "status": "won", "reason": "resign"}
    left = table.store.get(old["id"])
    assert left.status == "won" and left.winner == "O"
    assert answer["record"]["perfect"]["losses"] == 1


def test_a_new_game_after_one_move_calls_the_old_one_off(table):
    ana = Person(table)
    old = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 1)
    assert "abort" in old["can"]
    answer = ana.ok("new_game", mode="local", **{"from": old["id"]}).answer
    assert answer["left"] == {"game": old["id"], "status": "aborted", "reason": "abort"}
    assert answer["record"]["perfect"] == {"wins": 0, "draws": 0, "losses": 0}


def test_the_left_game_is_pushed_to_its_other_tabs(table):
    ana = Person(table)
    tab = Person(table, ana.player)
    old = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 2)
    tab.ok("join", game=old["id"])
    reply = ana.ok("new_game", **PERFECT, **{"from": old["id"]})
    ended = [p.body() for p in reply.pushes
             if p.event == "game" and p.room == f"g:{old['id']}:X"]
    assert ended and ended[-1]["status"] == "won" and ended[-1]["reason"] == "resign"
    assert any(p.event == "record" for p in reply.pushes)


def test_sixty_rounds_of_two_moves_then_a_new_game_are_never_refused(clock):
    """Before: every such game stayed live, and the 50th new game was refused (the cap)."""
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=0))
    ana = Person(table)
    game = ana.ok("new_game", **PERFECT).answer["game"]
    for _ in range(60):
        game = moved(ana, game, 2)
        game = ana.ok("new_game", **PERFECT, **{"from": game["id"]}).answer["game"]
    assert store.count_live(ana.player) == 1
    assert store.record(ana.player)["perfect"]["losses"] == 60


def test_a_version_3_client_leaves_its_most_recent_live_ai_game(table, clock):
    ana = Person(table)
    first = ana.ok("new_game", **PERFECT, **{"from": None}).answer["game"]
    clock.now += 1
    second = moved(ana, ana.ok("new_game", **PERFECT, **{"from": None}).answer["game"], 2)
    answer = ana.ok("new_game", **PERFECT).answer  # no `from` at all
    assert answer["left"]["game"] == second["id"]
    assert table.store.get(first["id"]).status == "playing"


def test_friend_games_are_never_ended_by_leaving(table):
    ana, ben = Person(table), Person(table)
    game = ana.ok("new_game", mode="friend", you="X").answer["game"]
    ben.ok("join", game=game["id"])
    game = ana.ok("move", game=game["id"], cell=0).answer["game"]
    ben.ok("move", game=game["id"], cell=1)
    ana.ok("move", game=game["id"], cell=2)
    answer = ana.ok("new_game", **PERFECT, **{"from": game["id"]}).answer
    assert answer["left"] is None
    assert answer.get("left", "absent") is None
    assert table.store.get(game["id"]).status == "playing"


def test_only_the_senders_own_game_is_left(table):
    ana, ben = Person(table), Person(table)
    anas = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 2)
    assert ben.ok("new_game", **PERFECT, **{"from": anas["id"]}).answer["left"] is None
    assert table.store.get(anas["id"]).status == "playing"


@pytest.mark.parametrize("bad", [5, "x", "a" * 65, ["a" * 22]])
def test_a_from_that_is_no_game_id_is_refused_and_nothing_changes(table, bad):
    ana = Person(table)
    old = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 2)
    assert ana.code("new_game", **PERFECT, **{"from": bad}) == "bad_request"
    assert ana.code("rematch", game=old["id"], **{"from": bad}) == "bad_request"
    assert table.store.get(old["id"]).status == "playing"


def test_a_rematch_in_the_middle_of_an_ai_game_resigns_it_first(table):
    """Before: a rematch mid-game marked the old game continued with no result at all."""
    ana = Person(table)
    old = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 2)
    answer = ana.ok("rematch", game=old["id"], **{"from": old["id"]}).answer
    assert answer["started"] is True
    assert answer["left"] == {"game": old["id"], "status": "won", "reason": "resign"}
    assert answer["record"]["perfect"]["losses"] == 1
    # An older client's rematch (no `from`) of a game in progress leaves the game rematched.
    mid = moved(ana, ana.ok("new_game", **PERFECT, **{"from": None}).answer["game"], 2)
    again = ana.ok("rematch", game=mid["id"]).answer
    assert again["left"]["game"] == mid["id"]
    assert again["record"]["perfect"]["losses"] == 2


def test_a_rematch_of_a_finished_game_leaves_nothing(table):
    ana = Person(table)
    old = ana.ok("new_game", **PERFECT).answer["game"]
    ended = ana.ok("resign", game=old["id"]).answer["game"]
    assert ana.ok("rematch", game=ended["id"], **{"from": ended["id"]}).answer["left"] is None


def test_the_idle_purge_ends_abandoned_ai_games_by_the_same_rule(table, clock):
    ana, ben, cat = Person(table), Person(table), Person(table)
    lost = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 2)
    called_off = moved(ben, ben.ok("new_game", **PERFECT).answer["game"], 1)
    friends = cat.ok("new_game", mode="friend", you="X").answer["game"]
    clock.now += 3600
    fresh = moved(cat, cat.ok("new_game", **PERFECT, **{"from": None}).answer["game"], 2)
    pushes = table.leave_idle(clock.now - 600)
    assert table.store.get(lost["id"]).reason == "resign"
    assert table.store.record(ana.player)["perfect"]["losses"] == 1
    assert table.store.get(called_off["id"]).status == "aborted"
    assert table.store.get(friends["id"]).status == "playing"
    assert table.store.get(fresh["id"]).status == "playing"
    assert {p.room for p in pushes if p.event == "game"} >= {f"g:{lost['id']}:X"}


def test_a_refused_new_game_or_rematch_leaves_nothing(table):
    """A refusal changes nothing: the game shown is left only once the new one is made."""
    table.limits = Limits(creations_per_minute=0, live_per_player=2)
    store = table.store
    ana = Person(table)
    ana.ok("new_game", mode="friend", you="X")
    shown = moved(ana, ana.ok("new_game", **PERFECT, **{"from": None}).answer["game"], 2)
    assert ana.code("new_game", **PERFECT, **{"from": shown["id"]}) == "not_allowed"
    assert store.get(shown["id"]).status == "playing"
    assert store.record(ana.player)["perfect"]["losses"] == 0
    # A rematch ends the game it replaces in its own write: whether that game still counts
    # against the cap there is the store's (SQLite counts after the write, the others before);
    # either way a refusal changes nothing and an acceptance is the loss.
    answer = ana("rematch", game=shown["id"], **{"from": shown["id"]}).answer
    if answer["ok"]:
        assert answer["left"]["reason"] == "resign" and store.count_live(ana.player) == 2
        assert store.record(ana.player)["perfect"]["losses"] == 1
    else:
        assert answer["error"]["code"] == "not_allowed"
        assert store.get(shown["id"]).status == "playing"
        assert store.record(ana.player)["perfect"]["losses"] == 0


def test_the_purge_round_ends_ai_games_left_untouched():
    """Closing the tab does not escape the rule: the served app's purge round ends them."""
    app = create_app({"TESTING": True, "SECRET_KEY": "x", "TTT_STORE": "memory://",
                      "TTT_PURGE_EVERY": 0, "TTT_AI_LEFT_AFTER": 0})
    table = app.extensions["ttt_table"]
    ana = Person(table)
    game = moved(ana, ana.ok("new_game", **PERFECT).answer["game"], 2)

    class Stop(BaseException):
        pass

    class OneRound:
        def __init__(self, real) -> None:
            self.real, self.rounds = real, 0

        def __getattr__(self, name):
            return getattr(self.real, name)

        def sleep(self, seconds) -> None:
            self.rounds += 1
            if self.rounds > 1:
                raise Stop

    real = app.extensions["ttt_socketio"]
    app.extensions["ttt_socketio"] = OneRound(real)
    try:
        with contextlib.suppress(Stop):
            housekeeping._leases_and_purges(app)
    finally:
        app.extensions["ttt_socketio"] = real
    store = app.extensions["ttt_store"]
    assert store.get(game["id"]).reason == "resign"
    assert store.record(ana.player)["perfect"]["losses"] == 1
    table.thinker.close()
    store.close()


def test_a_new_game_after_a_finished_one_neither_reads_nor_writes_it(clock, tmp_path):
    """issue 28: the finished game, cached as this process wrote it, cannot be left (a finished
    game stays finished): new_game skips the leaving change and the presence read of it."""
    store = open_store(f"sqlite:///{tmp_path / 'g.sqlite3'}")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=0))
    ana = Person(table)
    old = ana.ok("new_game", **PERFECT).answer["game"]
    assert ana.ok("resign", game=old["id"]).answer["game"]["status"] == "won"
    touched: list[str] = []

    def counting(call):
        def counted(game_id, *rest):
            touched.append(game_id)
            return call(game_id, *rest)
        return counted

    store.get, store.update = counting(store.get), counting(store.update)
    answer = ana.ok("new_game", **PERFECT).answer  # a version 3 client: no `from`
    assert "left" not in answer or answer["left"] is None
    assert old["id"] not in touched
    assert store.get(old["id"]).status == "won" and answer["game"]["status"] == "playing"
    # A live one is still left, through the store's compare-and-set as before.
    game = moved(ana, answer["game"], 2)
    touched.clear()
    left = ana.ok("new_game", **PERFECT).answer["left"]
    assert left == {"game": game["id"], "status": "won", "reason": "resign"}
    assert game["id"] in touched
    store.close()


@pytest.mark.parametrize("variant", ["classic", "ultimate"])
def test_abortable_counts_the_persons_moves_as_the_board_shows_them(variant):
    """issue 28: `abortable` counts the person's moves by ply; the board agrees, for either
    side, with or without preset moves."""
    import random
    from dataclasses import replace

    from ttt.game.endings import abortable
    from ttt.game.match import AI, create

    dice = random.Random(5)
    for _ in range(200):
        you = dice.choice(["X", "O"])
        match = create("ai", "p" * 22, 0.0, you=you, level="easy", rng=dice, variant=variant)
        board = match.board
        moves = list(match.moves)
        for _ in range(dice.randrange(0, 7)):
            legal = board.legal_moves()
            if not legal:
                break
            moves.append(dice.choice(legal))
            board = board.play(moves[-1])
        start = dice.randrange(0, len(moves) + 1) if dice.random() < 0.3 else 0
        played = replace(match, moves=tuple(moves), start=start)
        person = next(m for m in ("X", "O") if played.seats[m] != AI)
        by_board = sum(1 for cell in played.moves[start:]
                       if played.board.cell(cell) == person) < 2
        assert abortable(played) == by_board
