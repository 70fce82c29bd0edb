"""Friend games through a link: two players and a spectator on a real server."""

import time

import pytest

from tests.servers import Remote

pytestmark = pytest.mark.server


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

    assert bob.call("move", {"game": game["id"], "cell": 0})["error"]["code"] == "not_your_turn"
    assert carol.call("move", {"game": game["id"], "cell": 0})["error"]["code"] == "spectator"
    assert alice.call("analyze", {"game": game["id"]})["error"]["code"] == "not_allowed"

    script = [(alice, 4), (bob, 0), (alice, 2), (bob, 6), (alice, 3), (bob, 5), (alice, 1),
              (bob, 7), (alice, 8)]
    for ply, (who, cell) in enumerate(script, start=1):
        answer = who.call("move", {"game": game["id"], "cell": cell})
        assert answer["ok"], answer
        for watcher in (alice, bob, carol):
            if watcher is not who:
                watcher.wait_for("game", lambda g, n=ply: g["version"] == n)
    final = answer["game"]
    assert final["status"] == "draw" and final["turn"] is None
    assert alice.call("analyze", {"game": game["id"]})["ok"]
    assert carol.call("rematch", {"game": game["id"]})["error"]["code"] == "spectator"

    rematch = bob.call("rematch", {"game": game["id"]})
    fresh = rematch["game"]
    assert rematch["you"] == "X" and fresh["version"] == 0
    for other in (alice, carol):
        pushed = other.wait_for("rematch", lambda r: r["from"] == game["id"])
        assert pushed["game"]["id"] == fresh["id"]
    assert alice.call("join", {"game": fresh["id"]})["you"] == "O"
    assert carol.call("join", {"game": fresh["id"]})["you"] == "spectator"
    assert alice.call("rematch", {"game": game["id"]})["game"]["id"] == fresh["id"]


def test_a_seat_survives_reload_and_presence_is_pushed(remotes, live_server):
    alice, bob = remotes(), remotes()
    game = alice.call("new_game", {"mode": "friend", "you": "O"})["game"]
    assert bob.call("join", {"game": game["id"]})["you"] == "X"
    alice.wait_for("game", lambda g: g["online"]["X"])
    bob.sio.disconnect()
    started = time.monotonic()
    alice.wait_for("game", lambda g: g["online"] == {"X": False, "O": True}, timeout=2)
    assert time.monotonic() - started < 2
    assert alice.call("claim", {"game": game["id"]})["error"]["code"] in ("not_your_turn",
                                                                          "not_allowed")
    back = Remote(live_server, cookie=bob.cookie)  # the same player, reloaded
    assert back.call("join", {})["you"] == "X"
    alice.wait_for("game", lambda g: g["online"] == {"X": True, "O": True}, timeout=2)
    assert back.call("move", {"game": game["id"], "cell": 4})["ok"]
    back.close()


def test_claim_after_the_opponent_is_away_sixty_seconds(app, make_player, monkeypatch):
    """Presence uses a clock; move it on instead of waiting a minute."""
    alice, bob = make_player(), make_player()
    game = alice.emit("new_game", {"mode": "friend", "you": "X"}, callback=True)["game"]
    bob.emit("join", {"game": game["id"]}, callback=True)
    bob.disconnect()
    presence = app.extensions["ttt_presence"]
    now = time.time()
    monkeypatch.setattr(presence, "_clock", lambda: now + 59)
    early = alice.emit("claim", {"game": game["id"]}, callback=True)
    assert early["error"]["code"] == "not_allowed"
    monkeypatch.setattr(presence, "_clock", lambda: now + 61)
    won = alice.emit("claim", {"game": game["id"]}, callback=True)
    assert won["ok"] and won["game"]["winner"] == "X" and won["game"]["reason"] == "claim"
    assert alice.emit("move", {"game": game["id"], "cell": 0},
                      callback=True)["error"]["code"] == "game_over"
