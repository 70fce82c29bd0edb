"""The operator's ladder endpoints through Flask's test client, and a round's waves against a
fake server: who may call them, the refusals, a game between two online bots to its end."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from tests.server.inprocess.test_bot_api import MINIMAX, Lines, auth, make_bot, post
from ttt.bots.rounds import Round, pairings
from ttt.web import create_app

OPERATOR = "operator-secret-for-tests"


def new_app(**config):
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret", "TTT_STORE": "memory://",
                       "TTT_RATE_LIMIT": 0, "TTT_BOT_MAX_GAMES": 3, **config})


@pytest.fixture
def app():
    app = new_app(TTT_OPERATOR_TOKEN=OPERATOR)
    yield app
    app.extensions["ttt_store"].close()


def start(client, x: str, o: str, token: str = OPERATOR, **extra):
    response = client.post("/api/ladder/game", json={"x": x, "o": o, **extra},
                           headers=auth(token))
    return response.status_code, response.get_json()


def online(client, app, *names: str) -> dict[str, tuple[str, Lines]]:
    """Bots made and streaming: name -> (token, stream past its hello)."""
    streams = {}
    for name in names:
        token = make_bot(app, name)
        stream = Lines(client, token)
        assert stream.next()["type"] == "hello"
        streams[name] = (token, stream)
    return streams


def test_without_an_operator_token_the_endpoints_are_not_there():
    app = new_app()
    client = app.test_client()
    for method, path in (("post", "/api/ladder/game"), ("get", "/api/ladder"),
                         ("get", "/api/ladder/game/" + "a" * 22)):
        for headers in ({}, auth(OPERATOR), auth("")):
            response = getattr(client, method)(path, json={}, headers=headers)
            assert response.status_code == 404, (path, headers)


@pytest.mark.parametrize("token", ["CHANGE-ME", "short"])
def test_a_short_operator_token_is_refused_at_start(token):
    with pytest.raises(ValueError, match="TTT_OPERATOR_TOKEN"):
        new_app(TTT_OPERATOR_TOKEN=token)


@pytest.mark.parametrize("headers", [{}, auth("wrong"), auth(OPERATOR + "x"), auth(OPERATOR[:-1]),
                                     {"Authorization": f"Basic {OPERATOR}"},
                                     {"Authorization": "Bearer"}])
def test_any_other_token_is_unauthorized(app, client, headers):
    online(client, app, "alpha", "beta")
    for method, path in (("post", "/api/ladder/game"), ("get", "/api/ladder"),
                         ("get", "/api/ladder/game/" + "a" * 22)):
        response = getattr(client, method)(path, json={"x": "alpha", "o": "beta"},
                                           headers=headers)
        assert response.status_code == 401
        assert response.get_json()["error"]["code"] == "unauthorized"
    assert app.extensions["ttt_store"].live_games(
        app.extensions["ttt_bots_book"].by_name("alpha").player) == []


def test_the_operator_starts_a_game_both_bots_get_it_and_play_it_to_a_rated_end(app, client):
    bots = online(client, app, "alpha", "beta", "gamma")
    bots["gamma"][1].close()  # gamma goes offline
    listed = client.get("/api/ladder", headers=auth(OPERATOR)).get_json()
    assert listed == {"ok": True, "online": ["alpha", "beta"], "max_games": 3,
                      "plays": {"alpha": ["classic", "ultimate"], "beta": ["classic", "ultimate"]}}
    public = {b["name"]: b["online"] for b in client.get("/api/bots").get_json()["bots"]}
    assert public == {"alpha": True, "beta": True, "gamma": False}
    status, made = start(client, "alpha", "beta")
    assert status == 200 and made["game"]["you"] == "spectator"
    game_id = made["game"]["id"]
    assert made["game"]["names"] == {"X": {"name": "alpha", "bot": True},
                                     "O": {"name": "beta", "bot": True}}
    seen = {}
    for name, side in (("alpha", "X"), ("beta", "O")):
        seen[side] = bots[name][1].until(lambda line: line["type"] == "game"
                                         and line["game"]["id"] == game_id
                                         and "open" not in line["game"]["seats"].values())
        assert seen[side]["game"]["you"] == side
    assert "move" in seen["X"]["game"]["can"] and seen["X"]["game"]["time_left"] > 0
    game, name = seen["X"]["game"], "alpha"
    while game["status"] == "playing":  # each bot plays its side from its own stream's views
        token = bots[name][0]
        assert post(client, token, f"/api/bot/game/{game_id}/move",
                    {"cell": MINIMAX(game)})[0] == 200
        name, played = ("beta" if name == "alpha" else "alpha"), game["version"] + 1
        game = bots[name][1].until(lambda line, v=played: line["type"] == "game"
                                   and line["game"]["id"] == game_id
                                   and line["game"]["version"] >= v)["game"]
    watched = client.get(f"/api/ladder/game/{game_id}", headers=auth(OPERATOR)).get_json()
    assert watched["game"]["status"] == "draw"
    rated = {b["name"]: b["vs_bots"] for b in client.get("/api/bots").get_json()["bots"]}
    assert rated["alpha"]["draws"] == rated["beta"]["draws"] == 1


def test_refusals_offline_unknown_self_bad_variant_and_the_live_game_cap(app, client):
    bots = online(client, app, "alpha", "beta")
    make_bot(app, "offline")
    cases = [
        ({"x": "alpha", "o": "offline"}, 409, "not_allowed"),
        ({"x": "offline", "o": "beta"}, 409, "not_allowed"),
        ({"x": "alpha", "o": "nobody"}, 404, "not_found"),
        ({"x": "alpha", "o": "alpha"}, 400, "bad_request"),
        ({"x": "alpha", "o": 7}, 400, "bad_request"),
        ({"x": "alpha", "o": "no way"}, 400, "bad_request"),
        ({"x": "alpha", "o": "beta", "variant": "chess"}, 400, "bad_request"),
    ]
    for body, status, code in cases:
        got_status, got = start(client, **body)
        assert (got_status, got["error"]["code"]) == (status, code), body
    alpha = app.extensions["ttt_bots_book"].by_name("alpha").player
    assert app.extensions["ttt_store"].live_games(alpha) == []  # nothing left behind
    for _ in range(3):  # the cap of live games (3 here), as a bot's own challenge has it
        assert start(client, "alpha", "beta", variant="ultimate")[0] == 200
    status, capped = start(client, "beta", "alpha")
    assert (status, capped["error"]["code"]) == (409, "not_allowed")
    assert "too many unfinished games" in capped["error"]["message"]
    assert client.get("/api/ladder/game/" + "z" * 22, headers=auth(OPERATOR)).status_code == 404
    for _, stream in bots.values():
        stream.close()


def test_pairings_every_pair_plays_n_games_sides_alternating():
    games = pairings(["a", "b", "c"], 4)
    assert len(games) == 12
    for pair in (("a", "b"), ("a", "c"), ("b", "c")):
        assert Counter(g for g in games if set(g) == set(pair)) == {pair: 2, pair[::-1]: 2}
    assert games[:3] == [("a", "b"), ("a", "c"), ("b", "c")]  # the pairs take turns


class FakeLadder:
    """A server for `Round`: each game ends at the third look (the second is refused as
    `unavailable`); it refuses a start once (rate_limited) at the fifth, and fails the test
    when a bot would sit in more than `cap` games."""

    def __init__(self, cap: int, offline: frozenset = frozenset()) -> None:
        self.cap, self.offline = cap, offline
        self.ids = itertools.count()
        self.games: dict[str, dict] = {}
        self.looks: Counter = Counter()
        self.most = Counter()
        self.starts = 0

    def live(self, name: str) -> int:
        return sum(name in (g["x"], g["o"]) for g in self.games.values()
                   if g["status"] == "playing")

    def call(self, path, body=None, method="POST"):
        if path == "/api/ladder":
            return {"ok": True, "online": [n for n in "abcd" if n not in self.offline]}
        if method == "GET":
            game_id = path.rsplit("/", 1)[1]
            self.looks[game_id] += 1
            if self.looks[game_id] == 2:  # a look the server could not answer: not an end
                return {"ok": False, "error": {"code": "unavailable", "message": "retry"}}
            game = self.games[game_id]
            if self.looks[game_id] >= 3:
                game.update(status="won", winner="X")
            return {"ok": True, "game": {"id": game_id, "status": game["status"],
                                         "winner": game["winner"], "reason": "line"}}
        self.starts += 1
        x, o = body["x"], body["o"]
        if x in self.offline or o in self.offline:
            return {"ok": False, "error": {"code": "not_allowed", "message": "not online"}}
        if self.starts == 5:
            return {"ok": False, "error": {"code": "rate_limited", "message": "slow down"}}
        if self.live(x) >= self.cap or self.live(o) >= self.cap:
            raise AssertionError("the round overfilled a bot")
        game_id = f"g{next(self.ids)}"
        self.games[game_id] = {"x": x, "o": o, "status": "playing", "winner": None}
        for name in (x, o):
            self.most[name] = max(self.most[name], self.live(name))
        return {"ok": True, "game": {"id": game_id}}


def test_a_round_plays_in_waves_within_each_bots_cap_and_counts_every_game():
    fake = FakeLadder(cap=2)
    played = Round(fake, per_bot=2, poll=0)
    assert played.play(pairings(list("abcd"), 3), timeout=30)
    assert played.played == 18 and played.skipped == 0 and not played.live
    assert max(fake.most.values()) == 2  # waves: never more than the cap, and it was used
    summary = {entry["bot"]: entry for entry in played.summary()}
    assert sum(e["wins"] for e in summary.values()) == 18
    assert sum(e["losses"] for e in summary.values()) == 18
    assert all(e["wins"] + e["losses"] == 9 for e in summary.values())


def test_a_round_drops_the_games_of_a_bot_gone_offline():
    fake = FakeLadder(cap=1, offline=frozenset("d"))
    played = Round(fake, per_bot=1, poll=0)
    assert played.play(pairings(list("abcd"), 2), timeout=30)
    assert played.played == 6 and played.skipped == 6
    assert all(g["x"] != "d" and g["o"] != "d" for g in fake.games.values())


def test_a_seat_refused_to_o_ends_the_game_x_made():
    app = new_app(TTT_OPERATOR_TOKEN=OPERATOR, TTT_MAX_LIVE_PER_PLAYER=1)
    client = app.test_client()
    streams = online(client, app, "alpha", "beta", "gamma")  # held: online while they are
    assert start(client, "alpha", "beta")[0] == 200
    # beta is under the bots' cap (3) but at a player's (1): its join is refused, and the
    # game gamma made for it is ended, not left open.
    status, refused = start(client, "gamma", "beta")
    assert (status, refused["error"]["code"]) == (409, "not_allowed")
    store, book = app.extensions["ttt_store"], app.extensions["ttt_bots_book"]
    assert store.live_games(book.by_name("gamma").player) == []
    for _, stream in streams.values():
        stream.close()
    store.close()
