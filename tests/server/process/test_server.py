"""A real `python app.py` process driven by python-socketio clients over websockets."""

import random

import pytest
import requests

from tests.support.servers import Remote, Server, close_all

pytestmark = pytest.mark.server


def play_out(remote: Remote, game: dict, rng: random.Random) -> dict:
    """Play random legal moves for the human side until the game ends."""
    while game["status"] == "playing":
        empty = [i for i, c in enumerate(game["board"]) if c == "."]
        answer = remote.call("move", {"game": game["id"], "cell": rng.choice(empty),
                                      "version": game["version"]})
        assert answer["ok"], answer
        game = answer["game"]
    return game


@pytest.mark.parametrize("level", ["easy", "medium", "hard", "perfect"])
@pytest.mark.parametrize("side", ["X", "O"])
def test_complete_games_against_every_level_from_both_sides(remotes, level, side):
    remote = remotes()
    rng = random.Random(f"{level}-{side}")
    results = []
    for _ in range(6):
        answer = remote.call("new_game", {"mode": "ai", "you": side, "level": level})
        assert answer["ok"] and answer["you"] == side
        game = play_out(remote, answer["game"], rng)
        assert game["status"] in ("won", "draw") and game["turn"] is None
        assert len(game["moves"]) == game["version"] and game["board"].count(".") == 9 - len(
            game["moves"])
        results.append(game["winner"])
        if level == "perfect":
            assert game["winner"] != side, "the perfect AI lost"
    record = remote.call("join", {})["record"][level]
    assert record["wins"] + record["draws"] + record["losses"] == 6
    assert record["wins"] == results.count(side)


def test_two_tabs_of_one_player_see_each_others_moves(remotes):
    first = remotes()
    second = remotes(cookie=first.cookie)
    game = first.call("new_game", {"mode": "local"})["game"]
    assert second.call("join", {})["game"]["id"] == game["id"]
    first.call("move", {"game": game["id"], "cell": 4})
    pushed = second.wait_for("game", lambda g: g["board"] == "....X....")
    assert pushed["turn"] == "O"


def test_page_routes_and_connection_rules(live_server):
    assert requests.get(live_server + "/healthz", timeout=5).json()["ok"] is True
    page = requests.get(live_server + "/", timeout=5)
    assert page.status_code == 200 and "session" in page.cookies
    assert '<button' in page.text and 'data-cell="8"' in page.text
    import socketio

    anonymous = socketio.Client(reconnection=False)
    with pytest.raises(socketio.exceptions.ConnectionError):
        anonymous.connect(live_server, transports=["websocket"], wait_timeout=5)
    evil = socketio.Client(reconnection=False,
                           websocket_extra_options={"origin": "http://evil.example"})
    with pytest.raises(socketio.exceptions.ConnectionError):
        evil.connect(live_server, transports=["websocket"], wait_timeout=5,
                     headers={"Cookie": f"session={page.cookies['session']}"})


def test_a_killed_sqlite_server_gives_every_player_their_game_and_record_back(tmp_path):
    env = {"TTT_STORE": f"sqlite:///{tmp_path / 'ttt.sqlite3'}", "TTT_SECRET_KEY": "kill-test"}
    server = Server(env, log=tmp_path / "server.log").start()
    try:
        alice = Remote(server.url)
        finished = alice.call("new_game", {"mode": "ai", "you": "X", "level": "perfect"})["game"]
        finished = play_out(alice, finished, random.Random(3))
        live = alice.call("new_game", {"mode": "ai", "you": "X", "level": "easy"})["game"]
        live = alice.call("move", {"game": live["id"], "cell": 4})["game"]
        record = alice.call("join", {})["record"]
        server.kill()
        alice.sio.disconnect()
        server = Server(env, port=server.port, log=tmp_path / "server.log").start()
        back = Remote(server.url, cookie=alice.cookie)
        answer = back.call("join", {})
        assert answer["game"] == {**live, "online": answer["game"]["online"]}
        assert answer["you"] == "X" and answer["record"] == record
        assert back.call("join", {"game": finished["id"]})["game"]["moves"] == finished["moves"]
        close_all([back])
    finally:
        server.stop()
