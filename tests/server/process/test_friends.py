"""Friend games through a link on a real server: seats, views, and endings that are fair."""

import time

import pytest

from tests.support.servers import Remote, Server, close_all

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def quick_claims(tmp_path_factory):
    """A real server whose absent players may be claimed against after 2 s, not 60."""
    log = tmp_path_factory.mktemp("friends") / "server.log"
    server = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "friends-test",
                     "TTT_CLAIM_AFTER": "2", "TTT_BLIP": "0.5"}, log=log).start()
    made: list[Remote] = []
    yield lambda: made.append(Remote(server.url)) or made[-1]
    close_all(made)  # in parallel: each close waits for a close frame
    server.stop()
    assert "Traceback" not in log.read_text()


def check_view(view, role):
    """The view's role and the events it offers agree with the game it shows."""
    assert view["you"] == role
    playing = view["status"] == "playing"
    if role == "spectator":
        assert view["can"] == ([] if playing else ["analyze"])
    else:
        assert ("move" in view["can"]) == (playing and view["turn"] == role)
        assert ("resign" in view["can"]) == playing and "react" in view["can"]


def test_two_friends_and_a_spectator_play_through_a_link(remotes):
    alice, bob, carol = remotes(), remotes(), remotes()
    created = alice.call("new_game", {"mode": "friend", "you": "X"})
    game = created["game"]
    assert created["you"] == "X" and created["link"] == f"/g/{game['id']}"
    assert game["seats"] == {"X": "human", "O": "open"}
    assert game["online"] == {"X": True, "O": False}

    joined = bob.call("join", {"game": game["id"]})
    assert joined["you"] == "O" and joined["game"]["seats"] == {"X": "human", "O": "human"}
    alice.wait_for("game", lambda g: g["online"] == {"X": True, "O": True})
    watching = carol.call("join", {"game": game["id"]})
    assert watching["you"] == "spectator"
    alice.wait_for("watchers", lambda w: w == {"game": game["id"], "watchers": 1})

    assert bob.call("move", {"game": game["id"], "cell": 0})["error"]["code"] == "not_your_turn"
    assert carol.call("move", {"game": game["id"], "cell": 0})["error"]["code"] == "spectator"
    assert alice.call("analyze", {"game": game["id"]})["error"]["code"] == "not_allowed"

    script = [(alice, 4), (bob, 0), (alice, 2), (bob, 6), (alice, 3), (bob, 5), (alice, 1),
              (bob, 7), (alice, 8)]
    roles = {id(alice): "X", id(bob): "O", id(carol): "spectator"}
    for ply, (who, cell) in enumerate(script, start=1):
        answer = who.call("move", {"game": game["id"], "cell": cell})
        assert answer["ok"], answer
        check_view(answer["game"], roles[id(who)])
        for watcher in (alice, bob, carol):
            if watcher is not who:
                view = watcher.wait_for("game", lambda g, n=ply: g["version"] == n)
                check_view(view, roles[id(watcher)])
    final = answer["game"]
    assert final["status"] == "draw" and final["turn"] is None
    assert final["score"] == {"X": 0, "O": 0, "draws": 1}
    assert alice.call("analyze", {"game": game["id"]})["ok"]
    assert carol.call("rematch", {"game": game["id"]})["error"]["code"] == "spectator"

    offer = bob.call("rematch", {"game": game["id"]})
    assert offer["ok"] and offer["started"] is False and offer["game"]["offer"] == {"rematch": "O"}
    seen = alice.wait_for("game", lambda g: g["offer"] == {"rematch": "O"})
    assert "rematch" in seen["can"] and "decline" in seen["can"]
    accepted = alice.call("rematch", {"game": game["id"]})
    fresh = accepted["game"]
    assert accepted["started"] and accepted["you"] == "O" and fresh["version"] == 0
    assert fresh["score"] == {"X": 0, "O": 0, "draws": 1}
    for other, role in ((bob, "X"), (carol, "spectator")):
        pushed = other.wait_for("rematch", lambda r: r["from"] == game["id"])
        assert pushed["game"]["id"] == fresh["id"] and pushed["game"]["you"] == role
    assert bob.call("join", {"game": fresh["id"]})["you"] == "X"
    assert carol.call("join", {"game": fresh["id"]})["you"] == "spectator"
    assert alice.call("rematch", {"game": game["id"]})["game"]["id"] == fresh["id"]


def test_a_seat_survives_reload_and_presence_is_pushed(remotes, live_server):
    alice, bob = remotes(), remotes()
    game = alice.call("new_game", {"mode": "friend", "you": "O"})["game"]
    assert bob.call("join", {"game": game["id"]})["you"] == "X"
    alice.wait_for("game", lambda g: g["online"]["X"])
    assert bob.call("move", {"game": game["id"], "cell": 4})["ok"]
    assert alice.call("move", {"game": game["id"], "cell": 0})["ok"]  # both moved (v5)
    started = time.monotonic()  # before: the client's disconnect() returns only once closed
    bob.sio.disconnect()
    # Told once the blip (TTT_BLIP, 1 s on this server) is over, not before: v5.
    away = alice.wait_for("game", lambda g: g["online"] == {"X": False, "O": True}
                          and len(g["moves"]) == 2, timeout=10)  # not the views before Bob came
    assert time.monotonic() - started >= 0.9
    assert 55 < away["claimable_in"] <= 60 and "claim" not in away["can"]
    assert alice.call("claim", {"game": game["id"]})["error"]["code"] == "not_allowed"
    back = Remote(live_server, cookie=bob.cookie)  # the same player, reloaded
    assert back.call("join", {})["you"] == "X"
    here = alice.wait_for("game", lambda g: g["online"] == {"X": True, "O": True}, timeout=2)
    assert here["claimable_in"] is None
    assert back.call("move", {"game": game["id"], "cell": 8})["ok"]
    back.close()


def friends(player):
    ana, ben = player(), player()
    game = ana.call("new_game", {"mode": "friend", "you": "X"})["game"]
    assert ben.call("join", {"game": game["id"]})["you"] == "O"
    ana.wait_for("game", lambda g: g["online"]["O"])
    return ana, ben, game["id"]


def test_dead_end_one_the_friend_leaves_on_their_own_turn_and_is_claimed(quick_claims):
    ana, ben, gid = friends(quick_claims)
    assert ana.call("move", {"game": gid, "cell": 4})["ok"]
    assert ben.call("move", {"game": gid, "cell": 0})["ok"]  # both moved: claimable (v5)
    assert ana.call("move", {"game": gid, "cell": 8})["ok"]  # Ben's turn now
    ben.sio.disconnect()
    away = ana.wait_for("game", lambda g: not g["online"]["O"])
    assert away["turn"] == "O" and 0 < away["claimable_in"] <= 2
    ready = ana.wait_until("join", {"game": gid}, lambda a: "claim" in a["game"]["can"])
    assert ready["game"]["claimable_in"] == 0
    won = ana.call("claim", {"game": gid})
    assert won["ok"] and won["game"]["winner"] == "X" and won["game"]["reason"] == "claim"


def test_dead_end_two_leaving_mid_game_for_a_new_one_lets_the_friend_claim(quick_claims):
    ana, ben, gid = friends(quick_claims)
    assert ana.call("move", {"game": gid, "cell": 4})["ok"]
    assert ben.call("move", {"game": gid, "cell": 0})["ok"]  # both moved: claimable (v5)
    assert ben.call("new_game", {"mode": "ai", "you": "X", "level": "easy"})["ok"]
    ana.wait_for("game", lambda g: not g["online"]["O"])
    ana.wait_until("join", {"game": gid}, lambda a: "claim" in a["game"]["can"])
    assert ana.call("claim", {"game": gid})["game"]["reason"] == "claim"


def test_dead_end_three_a_rematch_never_pulls_in_a_player_who_did_not_ask(quick_claims):
    ana, ben, gid = friends(quick_claims)
    assert ben.call("resign", {"game": gid})["game"]["winner"] == "X"
    offer = ben.call("rematch", {"game": gid})
    assert offer["started"] is False
    ana.wait_for("game", lambda g: g["offer"] == {"rematch": "O"})
    assert ana.pushed("rematch") == []  # still on the finished game, reading the review
    assert ana.call("join", {})["game"]["id"] == gid
    declined = ana.call("decline", {"game": gid})
    assert declined["game"]["offer"] is None
    ben.wait_for("game", lambda g: g["offer"] is None and g["version"] == 0)
    assert ben.pushed("rematch") == [] and ana.pushed("rematch") == []


def test_a_timed_game_ends_by_itself_for_both_players_and_a_spectator(quick_claims):
    ana, ben = quick_claims(), quick_claims()
    game = ana.call("new_game", {"mode": "friend", "you": "X", "clock": 10})["game"]
    assert game["clock"] == 10 and game["time_left"] == 30  # waiting for a friend: v5, a number
    assert game["first_move"] is None
    joined = ben.call("join", {"game": game["id"]})["game"]
    assert 29 < joined["time_left"] <= 30  # a fair start: the first-move window
    assert joined["first_move"] == 30  # ...and the view says that is what time_left counts
    cy = quick_claims()
    cy.call("join", {"game": game["id"]})
    first = ana.call("move", {"game": game["id"], "cell": 4})["game"]
    assert first["first_move"] == 30 and 29 < first["time_left"] <= 30  # O's own window
    moved = ben.call("move", {"game": game["id"], "cell": 0})["game"]
    assert 9 < moved["time_left"] <= 10  # both have moved: the clock runs
    assert moved["first_move"] is None
    for who in (ana, ben, cy):  # nobody sends anything: the server ends it
        ended = who.wait_for("game", lambda g: g["status"] == "won", timeout=20)
        assert ended["reason"] == "time" and ended["winner"] == "O"


def test_reactions_and_names_reach_everyone_in_the_game(quick_claims):
    ana, ben, gid = friends(quick_claims)
    cy = quick_claims()
    cy.call("join", {"game": gid})
    assert ana.call("set_name", {"name": "<i>Ana</i>"})["name"] == "<i>Ana</i>"
    cy.wait_for("game", lambda g: g["names"]["X"] == "<i>Ana</i>")
    assert ben.call("react", {"game": gid, "reaction": "👏"})["ok"]
    for who in (ana, ben, cy):
        assert who.wait_for("reaction", lambda r: r["game"] == gid)["from"] == "O"
    assert ben.call("react", {"game": gid, "reaction": "gg"})["error"]["code"] == "rate_limited"
