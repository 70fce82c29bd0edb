"""The master with a fake clock: every event, every refusal, views per receiver, fair endings."""

from __future__ import annotations

import threading

import pytest

from ttt.game.match import FIRST_MOVE
from ttt.master.limits import Limits
from ttt.master.presence import MemorySeats, Presence
from ttt.master.replies import Reply, room
from ttt.master.table import Table
from ttt.pool.thinker import Inline, Scheduler
from ttt.store import open_store


class Person:
    """One player's connection to the table."""

    count = 0

    def __init__(self, table: Table, player: str | None = None, address: str = "10.0.0.1"):
        Person.count += 1
        self.table = table
        self.player = player or f"player{Person.count:016d}"[:22].ljust(22, "p")
        self.sid = f"sid{Person.count}"
        assert table.connect(self.sid, self.player, address)

    def __call__(self, event: str, **payload):
        return self.table.handle(event, self.sid, payload)

    def ok(self, event: str, **payload):
        reply = self(event, **payload)
        assert reply.answer["ok"], reply.answer
        return reply

    def code(self, event: str, **payload) -> str:
        answer = self(event, **payload).answer
        assert answer["ok"] is False, answer
        assert answer["error"]["message"]
        return answer["error"]["code"]

    def leave(self):
        return Reply({"ok": True}, self.table.disconnect(self.sid))


def pushed(reply, role_room: str, event: str = "game"):
    found = [p.body() for p in reply.pushes if p.room == role_room and p.event == event]
    assert found, [(p.event, p.room) for p in reply.pushes]
    return found[-1]


def friends(table: Table, **options):
    """Ana at X, Ben at O, in a friend game; and its id."""
    ana, ben = Person(table), Person(table)
    game = ana.ok("new_game", mode="friend", you="X", **options).answer["game"]
    ben.ok("join", game=game["id"])
    return ana, ben, game["id"]


# --- views -------------------------------------------------------------------------------------

def test_one_change_reaches_x_o_and_spectators_as_their_own_views(table):
    ana, ben, gid = friends(table)
    cy = Person(table)
    assert cy.ok("join", game=gid).answer["you"] == "spectator"
    reply = ana.ok("move", game=gid, cell=4)
    assert reply.answer["game"]["you"] == "X" and reply.answer["game"]["can"] == [
        "resign", "abort", "react"]
    o_view = pushed(reply, room(gid, "O"))
    assert o_view["you"] == "O" and o_view["can"] == ["move", "resign", "abort", "react"]
    watch = pushed(reply, room(gid, "spectator"))
    assert watch["you"] == "spectator" and watch["can"] == [] and watch["watchers"] == 1
    assert watch["claimable_in"] is None and watch["offer"] is None
    assert o_view["score"] == {"X": 0, "O": 0, "draws": 0} and o_view["clock"] is None
    assert all(p.skip_sender for p in reply.pushes)


def test_every_view_is_right_for_x_o_and_a_spectator_after_every_move(table):
    ana, ben, gid = friends(table)
    cy = Person(table)
    cy.ok("join", game=gid)
    for cell, mover in zip((0, 4, 8, 1, 7, 6, 2, 5, 3), "XOXOXOXOX", strict=True):
        player = ana if mover == "X" else ben
        reply = player.ok("move", game=gid, cell=cell)
        views = {"X" if player is ana else "O": reply.answer["game"]}
        views.update({r: pushed(reply, room(gid, r)) for r in ("X", "O", "spectator")
                      if r not in views})
        game = views["X"]
        for role, view in views.items():
            assert view["you"] == role and view["version"] == game["version"]
            if role == "spectator":
                assert view["can"] == ([] if game["status"] == "playing" else ["analyze"])
            elif game["status"] == "playing":
                assert ("move" in view["can"]) == (game["turn"] == role)
            else:
                assert "move" not in view["can"] and "rematch" in view["can"]
    assert game["status"] == "draw" and game["score"] == {"X": 0, "O": 0, "draws": 1}


def test_refusals_are_answers_with_codes(table):
    ana, ben, gid = friends(table)
    cy = Person(table)
    assert ana.code("move", game=gid, cell=9) == "bad_request"
    assert ana.code("move", game=gid, cell=True) == "bad_request"
    assert ana.code("move", game="nope", cell=1) == "bad_request"
    assert ana.code("move", game="a" * 22, cell=1) == "not_found"
    assert ben.code("move", game=gid, cell=1) == "not_your_turn"
    assert cy.code("move", game=gid, cell=1) == "spectator"
    ana.ok("move", game=gid, cell=1)
    assert ben.code("move", game=gid, cell=1) == "occupied"
    assert ben.code("move", game=gid, cell=2, version=0) == "stale"
    assert ana.code("analyze", game=gid) == "not_allowed"
    assert ana.code("hint", game=gid) == "not_allowed"
    assert ana.code("nonsense") == "bad_request"
    assert table.handle("move", ana.sid, ["x"]).answer["error"]["code"] == "bad_request"
    assert ana.code("new_game", mode="ai", you="X", level="perfect", clock=10) == "bad_request"
    assert ana.code("new_game", mode="friend", you="X", clock=15) == "bad_request"
    assert ana.code("new_game", mode="ai", you="X", level="perfect", variant="chess") \
        == "bad_request"
    assert ana.code("react", game=gid, reaction="💩") == "bad_request"
    assert cy.code("rematch", game=gid) == "spectator"
    assert cy.code("decline", game=gid) == "spectator"
    assert ana.code("decline", game=gid) == "not_allowed"


# --- fair endings ------------------------------------------------------------------------------

@pytest.mark.parametrize("mover", ["X", "O"])
def test_either_player_claims_after_sixty_seconds_away_whoever_is_on_move(table, clock, mover):
    ana, ben, gid = friends(table)
    ana.ok("move", game=gid, cell=4)
    ben.ok("move", game=gid, cell=0)  # both have moved: a claim can be (PROTOCOL v5)
    if mover == "O":
        ana.ok("move", game=gid, cell=8)  # now Ben is on move, and Ben leaves
    reply = ben.leave()
    view = pushed(reply, room(gid, "X"))
    assert view["online"]["O"] is False and view["claimable_in"] == 60.0
    clock.now += 59
    assert ana.code("claim", game=gid) == "not_allowed"
    assert ana.ok("join", game=gid).answer["game"]["claimable_in"] == 1.0
    clock.now += 2
    fresh = ana.ok("join", game=gid).answer["game"]
    assert fresh["claimable_in"] == 0 and "claim" in fresh["can"]
    won = ana.ok("claim", game=gid)
    assert won.answer["game"]["winner"] == "X" and won.answer["game"]["reason"] == "claim"
    assert pushed(won, room(gid, "spectator"))["reason"] == "claim"


def test_a_seat_never_seen_counts_away_from_when_it_was_taken_not_from_the_start(table, clock):
    """A rematch's other seat is not claimable at once (the old hole)."""
    ana, ben, gid = friends(table)
    ben.ok("resign", game=gid)
    ana.ok("rematch", game=gid)
    clock.now += 3600
    started = ben.ok("rematch", game=gid).answer
    new = started["game"]["id"]
    # Ana has not followed yet: her new seat was taken just now, not an hour ago; and nobody
    # has moved in the new game, so there is no claim at all, only an abort (PROTOCOL v5).
    assert ben.code("claim", game=new) == "not_allowed"
    assert started["game"]["claimable_in"] is None and "abort" in started["game"]["can"]


def test_claim_is_refused_while_the_friend_is_online_or_never_came(table):
    ana = Person(table)
    gid = ana.ok("new_game", mode="friend", you="X").answer["game"]["id"]
    assert ana.code("claim", game=gid) == "not_allowed"  # the seat is still open
    ben = Person(table)
    ben.ok("join", game=gid)
    assert ana.code("claim", game=gid) == "not_allowed"
    ai = ana.ok("new_game", mode="ai", you="X", level="easy").answer["game"]["id"]
    assert ana.code("claim", game=ai) == "not_allowed"


def test_resign_against_the_ai_counts_as_a_loss_and_pushes_the_record(table):
    ana = Person(table)
    gid = ana.ok("new_game", mode="ai", you="X", level="hard").answer["game"]["id"]
    reply = ana.ok("resign", game=gid)
    assert reply.answer["game"]["reason"] == "resign" and reply.answer["game"]["winner"] == "O"
    assert reply.answer["record"]["hard"]["losses"] == 1
    assert pushed(reply, f"p:{ana.player}", "record")["hard"]["losses"] == 1
    assert ana.code("resign", game=gid) == "game_over"


def test_abort_before_both_moved_then_not(table):
    ana, ben, gid = friends(table)
    ana.ok("move", game=gid, cell=4)
    gone = ben.ok("abort", game=gid).answer["game"]
    assert gone["status"] == "aborted" and gone["winner"] is None
    assert gone["can"] == ["analyze", "rematch", "react"]
    assert gone["aborted"] == {"reason": "abort", "by": "O"}
    more, other, gid2 = friends(table)
    more.ok("move", game=gid2, cell=4)
    other.ok("move", game=gid2, cell=0)
    assert more.code("abort", game=gid2) == "not_allowed"


# --- rematch offers ----------------------------------------------------------------------------

def test_a_rematch_offer_is_accepted_by_the_other_player_only(table):
    ana, ben, gid = friends(table)
    cy = Person(table)
    cy.ok("join", game=gid)
    ana.ok("resign", game=gid)
    offer = ben.ok("rematch", game=gid)
    assert offer.answer["started"] is False and offer.answer["game"]["offer"] == {"rematch": "O"}
    assert "rematch" not in offer.answer["game"]["can"]
    assert "decline" in offer.answer["game"]["can"]
    to_ana = pushed(offer, room(gid, "X"))
    assert to_ana["offer"] == {"rematch": "O"} and "rematch" in to_ana["can"]
    again = ben.ok("rematch", game=gid)  # asking twice is still an offer, not a start
    assert again.answer["started"] is False
    accepted = ana.ok("rematch", game=gid)
    assert accepted.answer["started"] is True and accepted.answer["you"] == "O"
    new = accepted.answer["game"]
    assert new["seats"] == {"X": "human", "O": "human"} and new["score"] == {
        "X": 1, "O": 0, "draws": 0}  # Ben won as O and now sits at X
    follow = {p.room: p.body() for p in accepted.pushes if p.event == "rematch"}
    assert follow[room(gid, "O")]["game"]["you"] == "X"
    assert follow[room(gid, "spectator")]["game"]["you"] == "spectator"
    assert follow[room(gid, "X")]["from"] == gid
    # Ben follows: the same game, not another one.
    assert ben.ok("rematch", game=gid).answer["game"]["id"] == new["id"]


def test_a_rematch_offer_declined_or_withdrawn_goes_back_to_none(table):
    ana, ben, gid = friends(table)
    ana.ok("resign", game=gid)
    ana.ok("rematch", game=gid)
    declined = ben.ok("decline", game=gid)
    assert declined.answer["game"]["offer"] is None
    assert pushed(declined, room(gid, "X"))["offer"] is None
    ana.ok("rematch", game=gid)
    assert ana.ok("decline", game=gid).answer["game"]["offer"] is None
    assert ana.code("decline", game=gid) == "not_allowed"


def test_racing_acceptances_start_exactly_one_rematch(table):
    ana, ben, gid = friends(table)
    ana.ok("resign", game=gid)
    ana.ok("rematch", game=gid)
    tabs = [Person(table, ben.player) for _ in range(6)]
    start = threading.Barrier(len(tabs))
    answers = []

    def accept(tab):
        start.wait()
        answers.append(tab("rematch", game=gid).answer)

    threads = [threading.Thread(target=accept, args=(t,)) for t in tabs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a["ok"] and a["started"] for a in answers)
    assert len({a["game"]["id"] for a in answers}) == 1
    assert table.store.count_live(ben.player) == 1


def test_ai_rematch_starts_at_once_with_sides_swapped(table):
    ana = Person(table)
    gid = ana.ok("new_game", mode="ai", you="X", level="perfect").answer["game"]["id"]
    ana.ok("resign", game=gid)
    started = ana.ok("rematch", game=gid).answer
    assert started["started"] is True and started["you"] == "O"
    assert started["game"]["score"] is None and started["game"]["version"] == 1


# --- timed games -------------------------------------------------------------------------------

def started(table, clock, seconds=10):
    """A timed friend game in which both sides made their first move: X on move, clock on."""
    ana, ben, gid = friends(table, clock=seconds)
    ana.ok("move", game=gid, cell=4)
    ben.ok("move", game=gid, cell=0)
    return ana, ben, gid


def test_the_clock_waits_for_the_second_player_then_ends_the_game_by_itself(table, clock):
    ana = Person(table)
    gid = ana.ok("new_game", mode="friend", you="X", clock=10).answer["game"]["id"]
    clock.now += 100
    assert table.tick() == []  # nobody to play against yet: no clock
    ben = Person(table)
    joined = ben.ok("join", game=gid).answer["game"]
    assert joined["clock"] == 10 and joined["time_left"] == FIRST_MOVE
    ana.ok("move", game=gid, cell=4)
    ben.ok("move", game=gid, cell=0)
    clock.now += 9.9
    assert table.tick() == []
    clock.now += 0.1
    pushes = table.tick()
    views = {p.room: p.body() for p in pushes}
    assert views[room(gid, "O")]["winner"] == "O" and views[room(gid, "O")]["reason"] == "time"
    assert room(gid, "spectator") in views
    assert table.tick() == []  # ended once


def test_a_timed_game_is_not_lost_before_it_is_seen_it_is_called_off(table, clock):
    """The creator away sending the link: no first move in 30 s ends it with no result."""
    ana, ben, gid = friends(table, clock=10)
    clock.now += 10
    assert table.tick() == []  # the clock of X has not started: X has not moved yet
    assert ana.ok("join", game=gid).answer["game"]["time_left"] == FIRST_MOVE - 10
    clock.now += FIRST_MOVE - 10
    views = {p.room: p.body() for p in table.tick()}
    to_ana = views[room(gid, "X")]
    assert to_ana["status"] == "aborted" and to_ana["winner"] is None
    assert to_ana["aborted"] == {"reason": "no_start", "by": None}
    assert to_ana["score"] == {"X": 0, "O": 0, "draws": 0} and "rematch" in to_ana["can"]
    # One tap each: an offer and its acceptance start a new game on the same chain.
    ana.ok("rematch", game=gid)
    fresh = ben.ok("rematch", game=gid).answer
    assert fresh["started"] is True and fresh["game"]["time_left"] == FIRST_MOVE


def test_o_has_its_own_first_move_window_then_loses_on_time_only_later(table, clock):
    ana, ben, gid = friends(table, clock=10)
    clock.now += 25
    moved = ana.ok("move", game=gid, cell=4).answer["game"]
    assert moved["time_left"] == FIRST_MOVE  # O's window starts with X's first move
    clock.now += FIRST_MOVE
    ended = {p.room: p.body() for p in table.tick()}[room(gid, "X")]
    assert ended["status"] == "aborted" and ended["aborted"]["reason"] == "no_start"


def test_a_reload_does_not_reset_the_clock(table, clock):
    ana, ben, gid = started(table, clock, seconds=30)
    clock.now += 20
    ben.leave()
    ben = Person(table, ben.player)
    assert ben.ok("join", game=gid).answer["game"]["time_left"] == 10


def test_a_move_in_the_same_instant_as_the_timeout_loses_to_it_exactly_once(table, clock):
    ana, ben, gid = started(table, clock)
    clock.now += 10
    late = ana("move", game=gid, cell=8)
    assert late.answer["error"]["code"] == "game_over"
    assert pushed(late, room(gid, "O"))["reason"] == "time"
    assert table.tick() == []
    game = ana.ok("join", game=gid).answer["game"]
    assert game["winner"] == "O" and game["moves"] == [4, 0]


def test_a_move_after_the_time_ran_out_shows_the_mover_the_ending(table, clock):
    """The refusal carries the ended game and the push reaches the mover's connections too
    (before: no game in the answer, and every push skipped the sender)."""
    ana, ben, gid = started(table, clock)
    tab = Person(table, ana.player)  # the mover's other tab
    tab.ok("join", game=gid)
    clock.now += 10.5  # the server's tick has not run yet
    late = ana("move", game=gid, cell=8)
    assert late.answer["ok"] is False and late.answer["error"]["code"] == "game_over"
    game = late.answer["game"]
    assert game["status"] == "won" and game["winner"] == "O" and game["reason"] == "time"
    assert game["you"] == "X" and "rematch" in game["can"]
    to_x = [p for p in late.pushes if p.room == room(gid, "X")]
    assert to_x and not any(p.skip_sender for p in to_x)


def test_a_late_first_move_shows_the_mover_the_game_called_off(table, clock):
    ana, ben, gid = friends(table, clock=10)
    clock.now += FIRST_MOVE
    late = ana("move", game=gid, cell=4).answer
    assert late["error"]["code"] == "game_over" and "called off" in late["error"]["message"]
    assert late["game"]["status"] == "aborted" and late["game"]["aborted"]["reason"] == "no_start"


def test_a_move_in_time_restarts_the_clock_for_the_other_side(table, clock):
    ana, ben, gid = started(table, clock)
    clock.now += 9.9
    moved = ana.ok("move", game=gid, cell=8).answer["game"]
    assert moved["time_left"] == 10 and moved["turn"] == "O"


def test_downtime_is_given_back_to_the_clocks_once(table, clock):
    """No stamp for longer than `outage_after` (server or store down): the clocks resume
    with the time they had; a short pause between ticks is no outage."""
    table.resume_clocks()
    ana, ben, gid = started(table, clock)
    clock.now += 4
    assert table.tick() == []
    clock.now += 120  # nothing ran: the server was down
    pushes = table.tick()  # resumes first: the game is not ended
    view = pushed(Reply({}, pushes), room(gid, "X"))
    assert view["status"] == "playing" and view["time_left"] == 6
    assert table.tick() == []
    clock.now += 3
    assert table.tick() == []
    clock.now += 3
    assert [p.body()["reason"] for p in table.tick() if p.room == room(gid, "O")] == ["time"]


def test_a_move_right_after_an_outage_resumes_the_clocks_before_judging(table, clock):
    table.resume_clocks()
    ana, ben, gid = started(table, clock)
    clock.now += 60  # the store was out of reach: no tick stamped it
    moved = ana.ok("move", game=gid, cell=8).answer["game"]
    assert moved["status"] == "playing" and moved["moves"] == [4, 0, 8]


def test_without_a_clock_loop_nothing_is_resumed(table, clock):
    ana, ben, gid = started(table, clock)
    clock.now += 60
    assert ana("move", game=gid, cell=8).answer["error"]["code"] == "game_over"


# --- names, watchers, reactions ----------------------------------------------------------------

def test_names_are_checked_kept_and_pushed_to_every_game_the_person_sits_in(table):
    ana, ben, gid = friends(table)
    for bad in ("", "   ", "x" * 25, "a\nb", "a\u202eb", 5, None):
        assert ana.code("set_name", name=bad) == "bad_request"
    reply = ana.ok("set_name", name="  Ana <b>  ")
    assert reply.answer == {"ok": True, "name": "Ana <b>"}
    assert pushed(reply, room(gid, "O"))["names"] == {"X": "Ana <b>", "O": None}
    assert all(not p.skip_sender for p in reply.pushes)  # the renamer's own page hears it too
    # A later game takes the name from the start.
    later = ana.ok("new_game", mode="friend", you="O").answer["game"]
    assert later["names"] == {"X": None, "O": "Ana <b>"}


def test_watchers_are_counted_and_pushed(table, clock):
    ana, ben, gid = friends(table)
    cy, di = Person(table), Person(table)
    first = cy.ok("join", game=gid)
    assert pushed(first, room(gid, "X"), "watchers") == {"game": gid, "watchers": 1}
    assert di.ok("join", game=gid).answer["game"]["watchers"] == 2
    gone = cy.leave()  # within the second: told at the next tick after it
    assert not gone.pushes
    clock.now += 1.0
    assert pushed(Reply({}, table.tick()), room(gid, "O"), "watchers")["watchers"] == 1


def test_reactions_reach_the_whole_room_once_a_second_at_most(table, clock):
    ana, ben, gid = friends(table)
    cy = Person(table)
    reply = ana.ok("react", game=gid, reaction="gg")
    for seen in ("X", "O", "spectator"):
        assert pushed(reply, room(gid, seen), "reaction") == {
            "game": gid, "from": "X", "reaction": "gg"}
    assert ana.code("react", game=gid, reaction="👍") == "rate_limited"
    clock.now += 1
    ana.ok("react", game=gid, reaction="👍")
    assert cy.code("react", game=gid, reaction="👍") == "spectator"
    ai = ana.ok("new_game", mode="ai", you="X", level="easy").answer["game"]["id"]
    clock.now += 1
    assert ana.code("react", game=ai, reaction="👍") == "not_allowed"
    alone = ana.ok("new_game", mode="friend", you="X").answer["game"]
    assert "react" not in alone["can"]
    assert ana.code("react", game=alone["id"], reaction="👍") == "not_allowed"


# --- caps and limits ---------------------------------------------------------------------------

def test_creations_are_limited_per_player_and_per_address(clock):
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=6))
    ana = Person(table, address="10.1.1.1")
    for _ in range(6):
        ana.ok("new_game", mode="local")
    assert ana.code("new_game", mode="local") == "rate_limited"
    # Other cookies from the same address share its budget.
    assert Person(table, address="10.1.1.1").code("new_game", mode="local") == "rate_limited"
    Person(table, address="10.2.2.2").ok("new_game", mode="local")
    clock.now += 10  # one more a minute/6
    ana.ok("new_game", mode="local")


def test_live_games_per_player_are_capped(clock):
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=0, live_per_player=2, live_total=3))
    ana, ben = Person(table), Person(table)
    ai = {"mode": "ai", "you": "X", "level": "easy", "from": None}  # several tabs: none left
    ana.ok("new_game", **ai)
    ana.ok("new_game", **ai)
    assert "too many" in ana("new_game", **ai).answer["error"]["message"]
    ben.ok("new_game", **ai)
    assert "full" in ben("new_game", **ai).answer["error"]["message"]


def test_pass_and_play_games_left_behind_do_not_fill_the_cap(clock):
    """Before: each pass-and-play game stayed live for 30 days, and the fourth was refused."""
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=0, live_per_player=3))
    ana = Person(table)
    tab = Person(table, ana.player)
    first = ana.ok("new_game", mode="local").answer["game"]["id"]
    tab.ok("join", game=first)
    ana.ok("move", game=first, cell=4)
    for _ in range(6):
        reply = ana.ok("new_game", mode="local")
        assert store.count_live(ana.player) == 1
    assert reply.answer["game"]["status"] == "playing"
    # The other tab that showed the first game is told it ended, with no result.
    left = store.get(first)
    assert left.status == "aborted" and left.finish.termination == "abandoned"
    gid = reply.answer["game"]["id"]
    gone = ana.ok("abort", game=gid).answer["game"]  # or called off by its player
    assert gone["status"] == "aborted" and gone["aborted"] == {"reason": "abort", "by": None}
    assert store.count_live(ana.player) == 0
    again = ana.ok("rematch", game=gid).answer["game"]["id"]
    assert ana.ok("rematch", game=again).answer["started"] and store.count_live(ana.player) == 1


def test_starting_a_game_tells_the_other_tabs_the_pass_and_play_game_ended(table):
    ana = Person(table)
    tab = Person(table, ana.player)
    first = ana.ok("new_game", mode="local").answer["game"]["id"]
    tab.ok("join", game=first)
    reply = ana.ok("new_game", mode="ai", you="X", level="easy")
    view = pushed(reply, room(first, "both"))
    assert view["status"] == "aborted" and view["aborted"]["reason"] == "abandoned"


def test_a_rematch_is_a_new_game_to_the_caps_and_the_creation_rate(clock):
    store = open_store("memory://")
    table = Table(store, Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=0, live_per_player=1, live_total=100,
                                live_per_address=2))
    # Ana finishes a friend game; Ben then fills his own cap elsewhere: Ana's acceptance
    # would seat Ben in one game more than he may have.
    ana, ben, gid = friends(table)
    ana.ok("resign", game=gid)
    ben.ok("rematch", game=gid)
    ben.ok("new_game", mode="local")
    assert "too many" in ana("rematch", game=gid).answer["error"]["message"]
    # A chain of AI rematches counts against the address that started it: the address cap
    # holds, however many fresh cookies it uses.
    cyd, dot, eve = (Person(table, address="10.9.9.9") for _ in range(3))
    first = cyd.ok("new_game", mode="ai", you="X", level="easy").answer["game"]["id"]
    cyd.ok("resign", game=first)
    again = cyd.ok("rematch", game=first).answer["game"]["id"]
    assert store.get(again).origin == store.get(first).origin is not None
    dot.ok("new_game", mode="local")  # the address's second live game: its cap
    assert eve.code("new_game", mode="local") == "not_allowed"


def test_rematches_share_the_creation_rate(clock):
    table = Table(open_store("memory://"), Presence(MemorySeats(clock), clock), clock=clock,
                  limits=Limits(creations_per_minute=2))
    ana = Person(table)
    gid = ana.ok("new_game", mode="local").answer["game"]["id"]
    gid = ana.ok("rematch", game=gid).answer["game"]["id"]
    assert ana.code("rematch", game=gid) == "rate_limited"


def test_too_many_connections_of_one_player_are_refused(clock):
    presence = Presence(MemorySeats(clock), clock, max_connections=3)
    table = Table(open_store("memory://"), presence, clock=clock)
    player = "p" * 22
    assert all(table.connect(f"s{i}", player) for i in range(3))
    assert not table.connect("s3", player)
    table.disconnect("s0")
    assert table.connect("s4", player)
    assert not table.connect("s5", "short")


def test_the_rate_limit_is_per_player_across_connections(clock):
    presence = Presence(MemorySeats(clock), clock)
    player = "q" * 22
    for i in range(4):
        presence.connect(f"t{i}", player)
    taken = sum(presence.take_token(f"t{i % 4}", 2) for i in range(40))
    assert taken <= 5  # one bucket of 4 (plus a refill in the run), not four


def test_hints_count_once_per_position(table):
    ana = Person(table)
    gid = ana.ok("new_game", mode="ai", you="X", level="easy").answer["game"]["id"]
    for _ in range(3):
        reply = ana.ok("hint", game=gid)
    assert reply.answer["game"]["hints"] == {"X": 1, "O": 0} and reply.answer["best"]
    assert reply.pushes == []  # nothing changed the third time


def test_join_without_a_game_answers_null_then_the_current_game(table):
    ana = Person(table)
    assert ana.ok("join").answer["game"] is None
    gid = ana.ok("new_game", mode="local").answer["game"]["id"]
    tab = Person(table, ana.player)
    answer = tab.ok("join").answer
    assert answer["game"]["id"] == gid and answer["you"] == "both"
    assert answer["game"]["can"] == ["move", "hint", "analyze", "abort", "rematch"]


def test_leaving_for_another_game_leaves_the_seat_offline(table):
    ana, ben, gid = friends(table)
    reply = ben.ok("new_game", mode="ai", you="X", level="easy")
    assert pushed(reply, room(gid, "X"))["online"]["O"] is False


# --- ultimate ----------------------------------------------------------------------------------

def test_an_ultimate_game_against_the_ai_sends_the_opponent_to_the_matching_board(table):
    ana = Person(table)
    assert ana.code("new_game", mode="ai", you="X", level="perfect",
                    variant="ultimate") == "bad_request"
    game = ana.ok("new_game", mode="ai", you="X", level="easy", variant="ultimate").answer["game"]
    assert game["variant"] == "ultimate" and len(game["board"]) == 81
    assert game["boards"] == "........." and game["next"] is None
    assert ana.code("move", game=game["id"], cell=81) == "bad_request"
    published: list = []
    table.publish = published.extend  # where the AI's move is pushed when a worker finds it
    first = ana("move", game=game["id"], cell=40)  # the centre of the centre board
    shown = {p.room: p.body() for p in published}
    assert shown[room(game["id"], "X")]["moves"][0] == 40  # the reply is pushed to the mover
    answer = first.answer  # the inline thinker has already played: the answer carries both
    assert answer["ok"] and answer["played"]["moves"] == [40]
    reply = answer["game"]["moves"][-1]
    assert len(answer["game"]["moves"]) == 2 and reply // 9 == 4  # sent to board 4
    assert answer["game"]["next"] == reply % 9
    wrong = next(c for c in range(81) if c // 9 != reply % 9 and answer["game"]["board"][c] == ".")
    assert ana.code("move", game=game["id"], cell=wrong) == "not_allowed"
    assert ana.code("move", game=game["id"], cell=40) == "occupied"
    judged = ana.ok("analyze", game=game["id"]).answer["analysis"]
    assert judged["turn"] == "X" and judged["best"]
    # A move the search saw too little has no score (PROTOCOL v4's honest analysis: null).
    assert all((m["score"] is None or 0 <= m["score"] <= 1) and m["cell"] // 9 == reply % 9
               for m in judged["moves"])
    assert any(m["score"] is not None for m in judged["moves"])


def test_an_ultimate_friend_game_and_its_rematch_keep_the_variant(table):
    ana, ben = Person(table), Person(table)
    gid = ana.ok("new_game", mode="friend", you="X", variant="ultimate").answer["game"]["id"]
    ben.ok("join", game=gid)
    ana.ok("move", game=gid, cell=0)
    assert ben.code("move", game=gid, cell=9) == "not_allowed"  # must play in board 0
    ben.ok("move", game=gid, cell=1)
    ben.ok("resign", game=gid)
    ben.ok("rematch", game=gid)
    fresh = ana.ok("rematch", game=gid).answer["game"]
    assert fresh["variant"] == "ultimate" and fresh["boards"] == "........."


class Stalled(Scheduler):
    """A thinker whose workers never start: the process stops while the AI thinks."""

    def __init__(self) -> None:
        super().__init__([])

    def _start(self) -> None:
        pass


def test_a_stuck_ai_turn_is_played_when_someone_joins(table):
    """A process that stopped while the ultimate AI was thinking leaves its turn; join heals."""
    table.thinker = Stalled()
    ana = Person(table)
    game = ana.ok("new_game", mode="ai", you="X", level="easy", variant="ultimate").answer["game"]
    moved = ana.ok("move", game=game["id"], cell=40).answer["game"]  # answered before the AI
    assert moved["moves"] == [40] and moved["turn"] == "O" and moved["budget"] == 0.1
    assert len(table.store.get(game["id"]).moves) == 1
    table.thinker = Inline()  # the next process: its join plays the stuck turn
    healed = ana.ok("join", game=game["id"]).answer["game"]
    assert len(healed["moves"]) == 2 and healed["turn"] == "X"


def test_a_restart_asks_again_for_every_ai_move_left_waiting(table):
    table.thinker = Stalled()
    ana = Person(table)
    game = ana.ok("new_game", mode="ai", you="X", level="easy", variant="ultimate").answer["game"]
    ana.ok("move", game=game["id"], cell=40)
    # A second tab (X to move: nothing waits there); the first game stays on.
    ana.ok("new_game", mode="ai", you="X", level="easy", variant="ultimate", **{"from": None})
    table.thinker = Inline()
    assert table.resume() == 1
    assert len(table.store.get(game["id"]).moves) == 2


# --- an absent friend never wins on your clock (PROTOCOL v4) -----------------------------------

@pytest.mark.parametrize("seconds", [10, 30, 60])
def test_an_absent_friend_never_wins_on_the_clock_of_the_player_on_move(table, clock, seconds):
    """Ben leaves on Ana's turn: Ana keeps the turn, the move and her clock; her move puts the
    clock on Ben, who loses on time if he does not come back. The claim delay is unchanged."""
    ana, ben, gid = started(table, clock, seconds=seconds)
    away = pushed(ben.leave(), room(gid, "X"))
    assert away["online"]["O"] is False and away["turn"] == "X"
    assert "move" in away["can"] and away["time_left"] == seconds
    assert away["claimable_in"] == table.limits.claim_after
    clock.now += seconds - 1  # all through her time, she is the one to move
    mine = ana.ok("join", game=gid).answer["game"]
    assert mine["turn"] == "X" and "move" in mine["can"] and mine["time_left"] == 1
    assert mine["legal"] and mine["status"] == "playing"
    moved = ana.ok("move", game=gid, cell=8).answer["game"]
    assert moved["turn"] == "O" and moved["time_left"] == seconds
    # PROTOCOL v5: no claim offered when the absent side's own clock ends the game first.
    wait = table.limits.claim_after - (seconds - 1)
    assert moved["claimable_in"] == (wait if wait < seconds else None)
    assert ("claim" in moved["can"]) is False
    clock.now += seconds
    views = {p.room: p.body() for p in table.tick()}
    ended = views[room(gid, "X")]
    assert ended["status"] == "won" and ended["winner"] == "X" and ended["reason"] == "time"


# --- your games in one list (PROTOCOL v4 `games`) ----------------------------------------------

def test_games_lists_the_live_friend_games_of_the_sender_only(table, clock):
    ana, ben, first = friends(table, clock=30)
    ben.ok("set_name", name="Ben")
    ana.ok("move", game=first, cell=4)
    second = ana.ok("new_game", mode="friend", you="O").answer["game"]["id"]  # nobody came yet
    ana.ok("new_game", mode="ai", you="X", level="easy")  # not a friend game: not listed
    lines = ana.ok("games").answer["games"]
    assert [line["id"] for line in lines] == [first, second] or [
        line["id"] for line in lines] == [second, first]
    by_id = {line["id"]: line for line in lines}
    assert by_id[first] == {
        "id": first, "link": f"/g/{first}", "variant": "classic", "you": "X", "turn": "O",
        "your_turn": False, "opponent": "Ben", "seated": True, "online": True, "clock": 30,
        "time_left": by_id[first]["time_left"], "moves": 1}
    assert by_id[first]["time_left"] == 30.0  # Ben's first-move window
    assert by_id[second]["seated"] is False and by_id[second]["opponent"] is None
    mine = ben.ok("games").answer["games"]
    assert [(line["id"], line["your_turn"], line["you"]) for line in mine] == [(first, True, "O")]
    ben.ok("resign", game=first)
    assert [line["id"] for line in ana.ok("games").answer["games"]] == [second]
    assert Person(table).ok("games").answer["games"] == []
