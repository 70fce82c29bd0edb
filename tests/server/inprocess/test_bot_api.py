"""The bot API through Flask's test client: auth, the stream, challenges, refusals, pages."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ttt.bots import Bot, hash_token, new_player_id, new_token
from ttt.bots.sdk import load_move
from ttt.web import create_app, get_socketio

MINIMAX = load_move(Path(__file__).resolve().parents[3] / "examples" / "bots" / "minimax.py")


@pytest.fixture
def app():
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0, "TTT_BOT_MAX_GAMES": 3})
    yield app
    app.extensions["ttt_store"].close()


def make_bot(app, name: str, about: str = "", variants=("classic", "ultimate")) -> str:
    """A bot made as the command line makes one; its token."""
    token = new_token()
    bot = Bot(new_player_id(), name, hash_token(token), about=about, owner="tester",
              variants=list(variants))
    app.extensions["ttt_bots_book"].add(bot)
    app.extensions["ttt_store"].set_name(bot.player, name)
    return token


def auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


class Lines:
    """A bot's NDJSON stream, read line by line."""

    def __init__(self, client, token: str) -> None:
        self.response = client.get("/api/bot/stream", headers=auth(token), buffered=False)
        assert self.response.status_code == 200
        assert self.response.mimetype == "application/x-ndjson"
        self._lines = iter(self.response.response)

    def next(self) -> dict:
        return json.loads(next(self._lines))

    def until(self, test, limit: int = 40) -> dict:
        for _ in range(limit):
            line = self.next()
            if test(line):
                return line
        raise AssertionError("no such line")

    def ended(self) -> bool:
        try:
            next(self._lines)
        except StopIteration:
            return True
        return False

    def close(self) -> None:
        self.response.close()


def post(client, token: str, path: str, body: dict | None = None):
    response = client.post(path, json=body or {}, headers=auth(token))
    return response.status_code, response.get_json()


def test_calls_without_a_valid_token_are_unauthorized(app, client):
    token = make_bot(app, "minimax")
    for headers in ({}, {"Authorization": f"Basic {token}"}, auth("wrong"),
                    {"Authorization": "Bearer"}):
        response = client.post("/api/bot/challenge", json={"opponent": "ai:easy"},
                               headers=headers)
        assert response.status_code == 401
        assert response.get_json()["error"]["code"] == "unauthorized"
    # A token in the URL is never read.
    assert client.get(f"/api/bot/stream?token={token}").status_code == 401


def test_a_bot_draws_perfect_through_the_api_and_its_record_shows_it(app, client):
    token = make_bot(app, "minimax")
    status, made = post(client, token, "/api/bot/challenge", {"opponent": "ai:perfect",
                                                              "you": "X"})
    assert status == 200 and made["game"]["you"] == "X" and made["game"]["level"] == "perfect"
    game = made["game"]
    while game["status"] == "playing":
        status, moved = post(client, token, f"/api/bot/game/{game['id']}/move",
                             {"cell": MINIMAX(game)})
        assert status == 200, moved
        game = moved["game"]
    assert game["status"] == "draw"
    listed = client.get("/api/bots").get_json()["bots"]
    assert listed[0]["name"] == "minimax"
    assert listed[0]["vs_ai"]["classic"]["perfect"] == {"wins": 0, "draws": 1, "losses": 0}


def test_refusals_carry_the_socket_codes_and_an_http_status(app, client):
    token = make_bot(app, "minimax")
    _, made = post(client, token, "/api/bot/challenge", {"opponent": "ai:easy", "you": "X"})
    game_id = made["game"]["id"]
    cases = [
        (f"/api/bot/game/{game_id}/move", {"cell": 99}, 400, "bad_request"),
        (f"/api/bot/game/{game_id}/move", {"cell": "4"}, 400, "bad_request"),
        ("/api/bot/game/" + "x" * 22 + "/move", {"cell": 4}, 404, "not_found"),
        (f"/api/bot/game/{game_id}/fly", {}, 404, "not_found"),
        ("/api/bot/challenge", {"opponent": "ai:perfect", "variant": "ultimate"}, 400,
         "bad_request"),
        ("/api/bot/challenge", {"opponent": "human"}, 400, "bad_request"),
        ("/api/bot/challenge", {"opponent": "bot:nobody"}, 404, "not_found"),
        ("/api/bot/challenge", {"opponent": "ai:easy", "clock": 10}, 400, "bad_request"),
        (f"/api/bot/game/{game_id}/react", {"reaction": "gg"}, 409, "not_allowed"),
    ]
    for path, body, status, code in cases:
        got_status, got = post(client, token, path, body)
        assert (got_status, got["ok"], got["error"]["code"]) == (status, False, code), path
    post(client, token, f"/api/bot/game/{game_id}/move", {"cell": 4})
    status, taken = post(client, token, f"/api/bot/game/{game_id}/move", {"cell": 4})
    assert (status, taken["error"]["code"]) == (409, "occupied")
    response = client.post(f"/api/bot/game/{game_id}/move", data="[1]", headers={
        **auth(token), "Content-Type": "application/json"})
    assert response.status_code == 400
    huge = client.post(f"/api/bot/game/{game_id}/react", json={"reaction": "x" * 5000},
                       headers=auth(token))
    assert huge.status_code == 400 and "4096" in huge.get_json()["error"]["message"]


def test_a_bot_cannot_act_in_a_game_it_does_not_sit_in(app, client):
    owner, stranger = make_bot(app, "owner"), make_bot(app, "stranger")
    _, made = post(client, owner, "/api/bot/challenge", {"opponent": "ai:easy", "you": "X"})
    game_id = made["game"]["id"]
    for action, body in (("move", {"cell": 0}), ("resign", {}), ("claim", {}),
                         ("rematch", {}), ("react", {"reaction": "gg"})):
        status, refused = post(client, stranger, f"/api/bot/game/{game_id}/{action}", body)
        assert (status, refused["error"]["code"]) == (403, "spectator"), action


def test_a_bot_has_at_most_its_cap_of_live_games(app, client):
    token = make_bot(app, "busy")
    for _ in range(3):
        assert post(client, token, "/api/bot/challenge", {"opponent": "ai:easy"})[0] == 200
    status, refused = post(client, token, "/api/bot/challenge", {"opponent": "ai:easy"})
    assert (status, refused["error"]["code"]) == (409, "not_allowed")


def test_the_stream_says_hello_then_the_live_games_then_every_change(app, client):
    token = make_bot(app, "minimax")
    _, made = post(client, token, "/api/bot/challenge", {"opponent": "ai:easy", "you": "X"})
    game_id = made["game"]["id"]
    stream = Lines(client, token)
    assert stream.next() == {"type": "hello", "bot": "minimax"}
    first = stream.next()
    assert first["type"] == "game" and first["game"]["id"] == game_id
    assert first["game"]["online"]["X"] is True and first["game"]["names"]["X"] == {
        "name": "minimax", "bot": True}
    assert first["game"]["legal"] == list(range(9)) and first["game"]["time_left"] > 0
    # The server's analysis is not offered to bots: their `can` never lists it.
    assert first["game"]["can"] == ["move", "resign", "abort", "rematch"]
    assert made["game"]["can"] == ["move", "resign", "abort", "rematch"]
    post(client, token, f"/api/bot/game/{game_id}/move", {"cell": 4})
    after = stream.until(lambda line: line["type"] == "game" and line["game"]["version"] == 2)
    assert after["game"]["board"][4] == "X" and "move" in after["game"]["can"]
    stream.close()
    # Reconnecting gives the current state first.
    again = Lines(client, token)
    assert again.next()["type"] == "hello"
    assert again.next()["game"]["version"] == 2
    again.close()


def test_a_second_stream_replaces_the_first_which_is_told_so(app, client):
    token = make_bot(app, "minimax")
    first = Lines(client, token)
    assert first.next()["type"] == "hello"
    second = Lines(client, token)
    assert second.next()["type"] == "hello"
    assert first.next() == {"type": "replaced"}  # its last line (PROTOCOL v4)
    assert first.ended()
    second.close()


def test_revoking_a_token_closes_its_stream_at_once_and_refuses_its_calls(app, client):
    token = make_bot(app, "doomed")
    _, made = post(client, token, "/api/bot/challenge", {"opponent": "ai:easy", "you": "X"})
    stream = Lines(client, token)
    stream.until(lambda line: line["type"] == "game")
    app.extensions["ttt_bots_book"].revoke("doomed")
    began = time.monotonic()
    assert stream.ended()
    assert time.monotonic() - began < 3  # checked every second
    status, refused = post(client, token, f"/api/bot/game/{made['game']['id']}/move",
                           {"cell": 4})
    assert (status, refused["error"]["code"]) == (401, "unauthorized")


def test_bots_challenge_each_other_accept_and_decline(app, client):
    alpha, beta = make_bot(app, "alpha"), make_bot(app, "beta")
    beta_stream = Lines(client, beta)
    beta_stream.next()
    status, made = post(client, alpha, "/api/bot/challenge", {"opponent": "bot:beta",
                                                              "you": "X"})
    assert status == 200
    game_id = made["game"]["id"]
    line = beta_stream.until(lambda line: line["type"] == "challenge")
    assert line == {"type": "challenge", "id": game_id, "from": "alpha", "variant": "classic",
                    "clock": None, "rated": True}
    status, accepted = post(client, beta, f"/api/bot/challenge/{game_id}/accept")
    assert status == 200 and accepted["game"]["you"] == "O"
    assert accepted["game"]["names"] == {"X": {"name": "alpha", "bot": True},
                                         "O": {"name": "beta", "bot": True}}
    # Nobody else may accept it twice.
    assert post(client, beta, f"/api/bot/challenge/{game_id}/accept")[0] == 404
    _, again = post(client, alpha, "/api/bot/challenge", {"opponent": "bot:beta"})
    status, declined = post(client, beta, f"/api/bot/challenge/{again['game']['id']}/decline")
    assert status == 200 and declined["game"]["status"] == "aborted"
    beta_stream.close()
    _, offline = post(client, alpha, "/api/bot/challenge", {"opponent": "bot:beta"})
    assert offline["error"]["code"] == "not_allowed"


def test_a_bot_loses_on_time_when_it_does_not_answer(app, client):
    token = make_bot(app, "sleepy")
    _, made = post(client, token, "/api/bot/challenge", {"opponent": "ai:easy", "you": "X"})
    table = app.extensions["ttt_table"]
    assert table.tick() == []
    now = time.time()
    table.clock = lambda: now + 11  # the default deadline is 10 s
    table.tick()
    game = app.extensions["ttt_store"].get(made["game"]["id"])
    assert (game.status, game.reason, game.winner) == ("won", "time", "O")
    assert app.extensions["ttt_store"].record(game.seats["X"])["easy"]["losses"] == 1


def people(app, *protocols):
    """Socket.IO test clients, one person each, declaring these protocol versions."""
    made = []
    for protocol in protocols:
        flask_client = app.test_client()
        flask_client.get("/")
        sio = get_socketio(app).test_client(
            app, flask_test_client=flask_client,
            auth={"protocol": protocol} if protocol == 3 else None)
        made.append((sio, flask_client))
    return made


def test_people_see_a_bots_name_in_their_own_protocol(app, client):
    token = make_bot(app, "minimax")
    bot_stream = Lines(client, token)
    bot_stream.next()
    _, made = post(client, token, "/api/bot/challenge", {"opponent": "link", "you": "X"})
    game_id = made["game"]["id"]
    assert made["link"] == f"/g/{game_id}"
    (newer, _), (older, _) = people(app, 3, 2)
    joined = newer.emit("join", {"game": game_id}, callback=True)
    assert joined["you"] == "O" and joined["game"]["names"]["X"] == {"name": "minimax",
                                                                     "bot": True}
    watched = older.emit("join", {"game": game_id}, callback=True)
    assert watched["you"] == "spectator" and watched["game"]["names"]["X"] == "minimax"
    newer.get_received()
    older.get_received()
    post(client, token, f"/api/bot/game/{game_id}/move", {"cell": 4})
    pushed_new = [p["args"][0] for p in newer.get_received() if p["name"] == "game"]
    pushed_old = [p["args"][0] for p in older.get_received() if p["name"] == "game"]
    assert pushed_new[-1]["board"][4] == "X" and pushed_new[-1]["names"]["X"]["bot"] is True
    assert pushed_old[-1]["board"][4] == "X" and pushed_old[-1]["names"]["X"] == "minimax"
    bot_stream.close()


def test_a_person_gives_a_friend_games_empty_seat_to_an_online_bot(app, client):
    token = make_bot(app, "minimax")
    (person, person_http), (stranger, stranger_http) = people(app, 3, 3)
    made = person.emit("new_game", {"mode": "friend", "you": "X"}, callback=True)
    game_id = made["game"]["id"]
    path = f"/api/game/{game_id}/opponent"
    offline = person_http.post(path, json={"opponent": "bot:minimax"})
    assert offline.get_json()["error"]["code"] == "not_allowed"
    stream = Lines(client, token)
    stream.next()
    assert person_http.post(path, data="opponent=bot:minimax").status_code == 400
    refused = stranger_http.post(path, json={"opponent": "bot:minimax"})
    assert refused.status_code == 403
    given = person_http.post(path, json={"opponent": "bot:minimax"})
    assert given.get_json() == {"ok": True, "link": f"/g/{game_id}"}
    seen = stream.until(lambda line: line["type"] == "game" and line["game"]["id"] == game_id)
    assert seen["game"]["you"] == "O" and seen["game"]["names"]["O"]["bot"] is True
    stream.close()


def test_the_bot_page_escapes_its_text_and_plays_it_in_a_link_game(app, client):
    token = make_bot(app, "minimax", about="<script>alert(1)</script> never loses")
    page = client.get("/bot/minimax")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert "<script" not in html.split("<body>")[1]  # no inline script: the CSP forbids it
    assert client.get("/bot/nobody").status_code == 404
    assert client.get("/bot/..%2Fetc").status_code == 404
    stream = Lines(client, token)
    stream.next()
    # A form POST is taken from this site's own pages only (their Origin).
    assert client.post("/bot/minimax/play", data={"variant": "ultimate"}).status_code == 403
    played = client.post("/bot/minimax/play", data={"variant": "ultimate"},
                         headers={"Origin": "http://localhost"})
    assert played.status_code == 303
    game_id = played.headers["Location"].rsplit("/", 1)[1]
    game = app.extensions["ttt_store"].get(game_id)
    assert game.variant == "ultimate" and all(game.seats.values())
    assert stream.until(lambda line: line["type"] == "game")["game"]["id"] == game_id
    stream.close()


def test_the_ladder_page_lists_every_bot_best_rated_first(app, client):
    make_bot(app, "alpha")
    make_bot(app, "beta")
    book = app.extensions["ttt_bots_book"]
    book.rate("g", book.by_name("beta").player, book.by_name("alpha").player, "X")
    html = client.get("/bots").get_data(as_text=True)
    assert html.index("beta") < html.index("alpha")
    listed = client.get("/api/bots").get_json()
    assert [b["name"] for b in listed["bots"]] == ["alpha", "beta"]
    assert listed["bots"][1]["rating"] == 1516
    assert set(listed["bots"][0]["vs_ai"]) == {"classic", "ultimate"}
    assert "player" not in listed["bots"][0] and "token_hash" not in listed["bots"][0]


def test_a_bot_is_offline_once_its_last_stream_closes_even_after_a_replacement(app, client):
    token = make_bot(app, "flaky")
    hub, player = app.extensions["ttt_bots"], app.extensions["ttt_bots_book"].by_name(
        "flaky").player
    first = Lines(client, token)
    first.next()
    second = Lines(client, token)
    second.next()
    assert first.next() == {"type": "replaced"}
    assert first.ended() and hub.online(player)
    second.close()
    assert not hub.online(player)


def play_out(client, token: str, game: dict) -> dict:
    """Play a game against the AI to its end with minimax (classic) or the first legal cell."""
    while game["status"] == "playing":
        cell = MINIMAX(game) if game["variant"] == "classic" else game["legal"][0]
        status, moved = post(client, token, f"/api/bot/game/{game['id']}/move", {"cell": cell})
        assert status == 200, moved
        game = moved["game"]
    return game


def test_a_bot_says_what_it_plays_and_is_offered_nothing_else(app, client):
    token = make_bot(app, "classical", variants=["classic", "ultimate"])
    other = make_bot(app, "challenger")
    status, said = post(client, token, "/api/bot/account", {"variants": ["classic"]})
    assert status == 200 and said["bot"]["variants"] == ["classic"]
    assert said["move_seconds"] == 10.0
    status, bad = post(client, token, "/api/bot/account", {"variants": ["chess"]})
    assert (status, bad["error"]["code"]) == (400, "bad_request")
    listed = {b["name"]: b for b in client.get("/api/bots").get_json()["bots"]}
    assert listed["classical"]["variants"] == ["classic"]
    assert listed["classical"]["ratings"] == {"classic": 1500}
    stream = Lines(client, token)
    stream.next()
    status, refused = post(client, other, "/api/bot/challenge",
                           {"opponent": "bot:classical", "variant": "ultimate"})
    assert (status, refused["error"]) == (409, {
        "code": "not_allowed", "message": "classical plays classic only, not ultimate"})
    status, _ = post(client, other, "/api/bot/challenge",
                     {"opponent": "bot:classical", "variant": "classic"})
    assert status == 200
    page = client.get("/bot/classical").get_data(as_text=True)
    assert "Play this bot: classic" in page and "Play this bot: Ultimate" not in page
    forged = client.post("/bot/classical/play", data={"variant": "ultimate"},
                         headers={"Origin": "http://localhost"})
    assert forged.status_code == 409 and "classic only" in forged.get_data(as_text=True)
    stream.close()


def test_a_casual_game_counts_in_no_record(app, client):
    token = make_bot(app, "practice")
    status, made = post(client, token, "/api/bot/challenge",
                        {"opponent": "ai:perfect", "you": "X", "rated": False})
    assert status == 200 and made["rated"] is False
    assert play_out(client, token, made["game"])["status"] == "draw"
    _, rated = post(client, token, "/api/bot/challenge", {"opponent": "ai:perfect", "you": "O"})
    assert rated["rated"] is True
    play_out(client, token, rated["game"])
    listed = client.get("/api/bots").get_json()["bots"][0]
    assert listed["vs_ai"]["classic"]["perfect"] == {"wins": 0, "draws": 1, "losses": 0}
    status, bad = post(client, token, "/api/bot/challenge",
                       {"opponent": "ai:perfect", "rated": "no"})
    assert (status, bad["error"]["code"]) == (400, "bad_request")


def test_a_wrong_method_on_the_api_answers_json_405(app, client):
    token = make_bot(app, "methodical")
    for method, path in (("GET", "/api/bot/challenge"), ("DELETE", "/api/bot/account"),
                         ("GET", "/api/bot/game/" + "x" * 22 + "/move")):
        response = client.open(path, method=method, headers=auth(token))
        assert response.status_code == 405 and response.is_json, path
        error = response.get_json()
        assert error["ok"] is False and error["error"]["code"] == "bad_request"
        assert f"{method} is not allowed here" in error["error"]["message"]
        assert "POST" in response.headers["Allow"]
    page = client.post("/bots")  # a page keeps its HTML answer
    assert page.status_code == 405 and not page.is_json


def test_the_site_serves_the_sdk_with_its_own_address_the_guide_and_the_examples(app, client):
    sdk = client.get("/bots/sdk.py", base_url="https://ttt.example.org")
    text = sdk.get_data(as_text=True)
    assert sdk.status_code == 200 and "attachment" in sdk.headers["Content-Disposition"]
    assert 'DEFAULT_SERVER = "https://ttt.example.org"' in text and sdk.headers["Vary"] == "Host"
    compile(text, "sdk.py", "exec")  # still Python
    app.config["TTT_PUBLIC_URL"] = "https://play.example.net/"
    assert 'DEFAULT_SERVER = "https://play.example.net"' in client.get(
        "/bots/sdk.py").get_data(as_text=True)
    guide = client.get("/bots/guide")
    html = guide.get_data(as_text=True)
    assert guide.status_code == 200 and guide.mimetype == "text/html"
    assert "board × 9 + square" in html and html.count('<div class="guide-small') == 9
    assert 'href="/bots/examples/minimax.py"' in html and "TTT_OPERATOR_TOKEN" not in html
    example = client.get("/bots/examples/minimax.py")
    assert example.status_code == 200 and "def move(game)" in example.get_data(as_text=True)
    example.close()
    assert client.get("/bots/examples/..%2F..%2Fapp.py").status_code == 404
    assert client.get("/bots/examples/__init__.py").status_code == 404
    assert 'href="/bots/guide"' in client.get("/").get_data(as_text=True)
