"""Fair before the first move, and a join that rides the connect (PROTOCOL v5, issue 42).

The master with a fake clock (no claim while the absent side has not moved, abort instead;
no claim when the absent side's own clock ends the game first; a blip is not announced), then
Socket.IO test clients (the connect's `auth` answered with the view, older clients unchanged).
"""

from __future__ import annotations

import pytest

from tests.support.servers import Remote, Server, close_all
from tests.unit.test_table import Person, friends, pushed, started
from ttt.master.presence import MemorySeats, RedisSeats
from ttt.master.replies import room
from ttt.web import get_socketio


def test_no_claim_while_the_absent_side_has_never_moved_abort_instead(table, clock):
    """A makes a link and closes the tab; B opens it: B may call it off, never claim."""
    ana, ben, gid = friends(table)
    away = pushed(ana.leave(), room(gid, "O"))
    assert away["online"]["X"] is False
    assert away["claimable_in"] is None and "claim" not in away["can"]
    assert "abort" in away["can"]
    clock.now += 3600  # however long A stays away
    view = ben.ok("join", game=gid).answer["game"]
    assert view["claimable_in"] is None and "claim" not in view["can"] and "abort" in view["can"]
    assert ben.code("claim", game=gid) == "not_allowed"
    ended = ben.ok("abort", game=gid).answer["game"]
    assert ended["status"] == "aborted" and ended["winner"] is None
    assert ended["score"] == {"X": 0, "O": 0, "draws": 0}  # counted nowhere


def test_no_claim_when_only_the_present_side_has_moved(table, clock):
    """X moves and O leaves before its first move (or the reverse): still only an abort."""
    ana, ben, gid = friends(table)
    ana.ok("move", game=gid, cell=4)
    away = pushed(ben.leave(), room(gid, "X"))
    assert away["claimable_in"] is None and "abort" in away["can"]
    clock.now += 120
    assert ana.code("claim", game=gid) == "not_allowed"
    assert "abort" in ana.ok("join", game=gid).answer["game"]["can"]


def test_a_claim_once_both_have_moved_after_the_claim_delay(table, clock):
    ana, ben, gid = friends(table)
    ana.ok("move", game=gid, cell=4)
    ben.ok("move", game=gid, cell=0)
    away = pushed(ben.leave(), room(gid, "X"))
    assert away["claimable_in"] == table.limits.claim_after and "abort" not in away["can"]
    clock.now += table.limits.claim_after
    won = ana.ok("claim", game=gid).answer["game"]
    assert won["winner"] == "X" and won["reason"] == "claim"


@pytest.mark.parametrize("seconds", [10, 30])
def test_no_claim_when_the_absent_sides_clock_ends_the_game_first(table, clock, seconds):
    """Ben leaves on his own turn with a move clock shorter than the claim delay: the clock
    ends the game (he loses on time), no 60 s countdown is shown beside it."""
    ana, ben, gid = started(table, clock, seconds=seconds)
    ana.ok("move", game=gid, cell=8)  # Ben on move, his clock running
    away = pushed(ben.leave(), room(gid, "X"))
    assert away["time_left"] == seconds
    assert away["claimable_in"] is None and "claim" not in away["can"]
    clock.now += seconds
    ended = {p.room: p.body() for p in table.tick()}[room(gid, "X")]
    assert ended["winner"] == "X" and ended["reason"] == "time"


def test_a_claim_when_the_absent_sides_clock_outlasts_the_delay(table, clock):
    """A 60 s clock with Ben away for 59 s already when his turn starts: the claim comes first."""
    ana, ben, gid = started(table, clock, seconds=60)
    away = pushed(ben.leave(), room(gid, "X"))  # Ana on move: her own clock runs
    assert away["claimable_in"] == table.limits.claim_after
    clock.now += 59
    moved = ana.ok("move", game=gid, cell=8).answer["game"]  # now Ben's 60 s run
    assert moved["claimable_in"] == 1 and moved["time_left"] == 60


def test_a_blip_is_not_announced_and_a_longer_absence_is(table, clock):
    """Under the blip, the seat stays online and nobody is told; past it, the views go out."""
    table.presence.blip = 5.0
    ana, ben, gid = friends(table)
    ana.ok("move", game=gid, cell=4)
    ben.ok("move", game=gid, cell=0)
    gone = ben.leave()
    assert not [p for p in gone.pushes if p.event == "game"]  # no news yet
    here = ana.ok("join", game=gid).answer["game"]
    assert here["online"]["O"] is True and here["claimable_in"] is None
    assert "resign" in here["can"]
    clock.now += 4
    assert table.tick() == []
    # Ben is back within the blip (a new connection, the same player): nothing ever said.
    back = Person(table, player=ben.player)
    back.ok("join", game=gid)
    clock.now += 2
    assert table.tick() == []
    # Gone again, for longer: told once the blip is over, with the full claim delay.
    back.leave()
    clock.now += 4.9
    assert table.tick() == []
    clock.now += 0.1
    views = {p.room: p.body() for p in table.tick()}
    told = views[room(gid, "X")]
    assert told["online"]["O"] is False and told["claimable_in"] == table.limits.claim_after
    assert table.tick() == []  # told once


def test_a_blip_in_shared_presence_keeps_the_seat_online(redis_url, clock):
    seats = RedisSeats(redis_url, clock)
    seats.add("g-blip", "X", "s1")
    seats.remove("g-blip", "X", "s1", grace=5.0)
    assert seats.online("g-blip")["X"] is True
    clock.now += 5.01
    assert seats.online("g-blip")["X"] is False
    assert seats.last_seen("g-blip", "X") == pytest.approx(clock.now - 0.01)


def test_a_blip_in_memory_dates_the_departure_after_it(clock):
    seats = MemorySeats(clock)
    seats.add("g", "O", "s1")
    seats.remove("g", "O", "s1", grace=5.0)
    assert seats.present("g") == ({"X": False, "O": True}, 0)
    assert seats.last_seen("g", "O") == clock.now  # never in the future
    clock.now += 6
    assert seats.online("g")["O"] is False and seats.last_seen("g", "O") == clock.now - 1


# --- the join rides the connect ----------------------------------------------------------------

def connect(app, flask_client, auth):
    flask_client.get("/")
    sio = get_socketio(app).test_client(app, flask_test_client=flask_client, auth=auth)
    assert sio.is_connected()
    return sio


def joined_of(sio) -> list[dict]:
    return [e["args"][0] for e in sio.get_received() if e["name"] == "joined"]


def test_a_version_5_connect_with_a_game_gets_its_view_without_join(app, make_player):
    alice = make_player()
    made = alice.emit("new_game", {"mode": "friend", "you": "X"}, callback=True)
    gid = made["game"]["id"]
    bob = connect(app, app.test_client(), {"protocol": 5, "game": gid})
    [answer] = joined_of(bob)
    assert answer["ok"] and answer["you"] == "O" and answer["game"]["id"] == gid
    assert answer["game"]["you"] == "O" and answer["link"] == f"/g/{gid}"
    assert answer["seated"] is True  # this join took the seat: the page says the side
    assert answer["game"]["moves"] == [] and answer["game"]["status"] == "playing"
    # It is the join: bob's connection is in the game's room (alice's move reaches it).
    assert alice.emit("move", {"game": gid, "cell": 4}, callback=True)["ok"]
    assert [e["args"][0]["moves"] for e in bob.get_received() if e["name"] == "game"][-1] == [4]
    # And the explicit join keeps working, with the same answer's shape.
    again = bob.emit("join", {"game": gid}, callback=True)
    assert again["ok"] and again["you"] == "O" and again["game"]["moves"] == [4]
    assert "seated" not in again  # seated already
    bob.disconnect()


def test_a_version_5_connect_with_game_null_gets_the_last_game(app, client):
    first = connect(app, client, {"protocol": 5, "game": None})
    [nothing] = joined_of(first)
    assert nothing["ok"] and nothing["game"] is None  # no game yet: none is made by a connect
    made = first.emit("new_game", {"mode": "ai", "you": "X", "level": "easy"}, callback=True)
    first.disconnect()
    again = connect(app, client, {"protocol": 5, "game": None})  # the same cookie
    [answer] = joined_of(again)
    assert answer["game"]["id"] == made["game"]["id"] and answer["you"] == "X"
    assert answer["game"]["moves"] == made["game"]["moves"]  # nothing played by a connect
    assert answer["game"]["rev"] == made["game"]["rev"]
    again.disconnect()


START = {"mode": "ai", "you": "X", "level": "easy"}


def test_a_first_connect_with_start_gets_its_first_game_without_new_game(app, client):
    """Nothing to resume: the connect's `start` is the new game, answered as `joined`."""
    first = connect(app, client, {"protocol": 5, "game": None, "start": START})
    [answer] = joined_of(first)
    assert answer["ok"] and answer["started"] is True and answer["you"] == "X"
    game = answer["game"]
    assert game["mode"] == "ai" and game["level"] == "easy" and "move" in game["can"]
    assert first.emit("move", {"game": game["id"], "cell": 4}, callback=True)["ok"]
    first.disconnect()
    # A game to resume: `start` is ignored, the connect is the join it always was.
    again = connect(app, client, {"protocol": 5, "game": None, "start": {**START, "you": "O"}})
    [resumed] = joined_of(again)
    assert resumed["game"]["id"] == game["id"] and "started" not in resumed
    assert resumed["game"]["moves"][0] == 4
    again.disconnect()


@pytest.mark.parametrize("auth", [{"protocol": 5, "game": "n" * 22, "start": START},
                                  {"protocol": 5, "game": None, "start": "ai"},
                                  {"protocol": 5, "game": None, "start": {"mode": "chess"}}])
def test_a_start_starts_nothing_beside_a_named_game_or_when_malformed(app, client, auth):
    sio = connect(app, client, auth)
    [answer] = joined_of(sio)
    assert "started" not in answer
    assert sio.emit("join", {}, callback=True)["game"] is None  # no game was made
    sio.disconnect()


def test_a_connect_for_a_game_that_is_not_there_is_answered_as_join_would(app, client):
    sio = connect(app, client, {"protocol": 5, "game": "n" * 22})
    [answer] = joined_of(sio)
    assert answer["ok"] is False and answer["error"]["code"] == "not_found"
    sio2 = connect(app, app.test_client(), {"protocol": 5, "game": 42})
    assert joined_of(sio2)[0]["error"]["code"] == "bad_request"
    assert sio.is_connected() and sio2.is_connected()
    sio.disconnect()
    sio2.disconnect()


@pytest.mark.parametrize("auth", [None, {"protocol": 3}, {"protocol": 3, "game": None},
                                  {"protocol": 4, "game": None}])
def test_older_clients_connect_as_before_with_no_joined(app, client, auth):
    client.get("/")
    sio = get_socketio(app).test_client(app, flask_test_client=client, auth=auth)
    assert sio.is_connected() and joined_of(sio) == []
    answer = sio.emit("join", {}, callback=True)
    assert answer["ok"] and answer["game"] is None and answer["you"] == "spectator"
    sio.disconnect()


def test_a_blip_over_sockets_is_not_pushed(app, make_player):
    """A friend's connection drops: nothing is pushed at once, and the seat reads online."""
    app.extensions["ttt_presence"].blip = 3600.0  # however slow this machine is today
    alice, bob = make_player(), make_player()
    gid = alice.emit("new_game", {"mode": "friend", "you": "X"}, callback=True)["game"]["id"]
    bob.emit("join", {"game": gid}, callback=True)
    assert alice.emit("move", {"game": gid, "cell": 4}, callback=True)["ok"]
    assert bob.emit("move", {"game": gid, "cell": 0}, callback=True)["ok"]
    alice.get_received()
    bob.disconnect()
    assert [e for e in alice.get_received() if e["name"] == "game"] == []
    view = alice.emit("join", {"game": gid}, callback=True)["game"]
    assert view["online"]["O"] is True and view["claimable_in"] is None
    assert "resign" in view["can"]


# --- two processes on Redis: the connect's join and the told departure cross the queue --------

@pytest.mark.server
@pytest.mark.redis
def test_the_connects_join_and_a_departure_cross_processes(redis_url, tmp_path):
    env = {"TTT_STORE": redis_url, "TTT_MESSAGE_QUEUE": redis_url, "TTT_BLIP": "0.5",
           "TTT_SECRET_KEY": "shared-by-both-processes"}
    one, two = (Server(env, log=tmp_path / f"server{i}.log").start() for i in (1, 2))
    made: list[Remote] = []
    try:
        alice = Remote(one.url)
        made.append(alice)
        gid = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]["id"]
        bob = Remote(two.url, connect=False)
        made.append(bob)
        joined: list[dict] = []
        bob.sio.on("joined", joined.append)
        bob.sio.connect(two.url, headers={"Cookie": f"session={bob.cookie}"},
                        transports=["websocket"], wait_timeout=5,
                        auth={"protocol": 5, "game": gid})
        assert len(joined) == 1  # before the connect returned: sent ahead of its ack
        assert joined[0]["ok"] and joined[0]["you"] == "O" and joined[0]["seated"] is True
        alice.wait_for("game", lambda g: g["online"] == {"X": True, "O": True})
        assert alice.call("move", {"game": gid, "cell": 4})["ok"]
        assert bob.call("move", {"game": gid, "cell": 0})["ok"]
        bob.sio.disconnect()
        # Told by the process bob left, after the blip, to alice on the other one.
        away = alice.wait_for("game", lambda g: g["online"]["O"] is False, timeout=10)
        assert away["claimable_in"] is not None and "resign" in away["can"]
    finally:
        close_all(made)
        one.stop()
        two.stop()
    for i in (1, 2):
        assert "Traceback" not in (tmp_path / f"server{i}.log").read_text()
