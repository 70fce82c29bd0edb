"""Games and ratings that cannot be squatted or farmed (issue 41): a person playing a bot has
a move deadline, so ten games taken and never moved in free the bot again; one person's two
bots rate nothing between themselves; a game resigned before both sides moved rates nothing."""

from __future__ import annotations

import pytest

from tests.server.inprocess.test_bot_api import Lines, post
from tests.support.clock import Clock
from ttt.bots import Bot, hash_token, new_player_id, new_token
from ttt.bots.referee import PERSON_SECONDS
from ttt.web import create_app

SITE = {"Origin": "http://localhost"}


@pytest.fixture
def app():
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0, "TTT_CREATE_RATE": 100000})
    clock = Clock(app.extensions["ttt_table"].clock())
    app.extensions["ttt_table"].clock = clock
    app.extensions["ttt_clock"] = clock
    yield app
    app.extensions["ttt_store"].close()


def bot(app, name: str, maker: str = "") -> str:
    """A bot, made on the site by `maker` (a person's id) or on the command line (none)."""
    token = new_token()
    made = Bot(new_player_id(), name, hash_token(token), owner=maker or "operator", maker=maker,
               variants=["classic"])
    app.extensions["ttt_bots_book"].add(made)
    app.extensions["ttt_store"].set_name(made.player, name)
    return token


def rating(app, name: str) -> float:
    return app.extensions["ttt_bots_book"].by_name(name).rating


def test_ten_games_taken_against_a_bot_and_never_moved_in_do_not_lock_it(app, client):
    token = bot(app, "popular")
    stream = Lines(client, token)
    stream.next()
    squatter = app.test_client()
    squatter.get("/")
    games = []
    for _ in range(10):  # as O: the bot moves first, then waits for a move that never comes
        played = squatter.post("/bot/popular/play", data={"you": "O"}, headers=SITE)
        assert played.status_code == 303, played.get_data(as_text=True)[-300:]
        game_id = played.headers["Location"].rsplit("/", 1)[1]
        assert post(client, token, f"/api/bot/game/{game_id}/move", {"cell": 4})[1]["ok"]
        games.append(game_id)
    honest = app.test_client()
    honest.get("/")
    assert honest.post("/bot/popular/play", data={"you": "X"}, headers=SITE).status_code == 409
    store, table = app.extensions["ttt_store"], app.extensions["ttt_table"]
    assert all(store.get(g).deadline is not None for g in games)  # the person's time runs
    app.extensions["ttt_clock"].now += PERSON_SECONDS + 1
    table.tick()
    ended = [store.get(g) for g in games]
    # Never moved: called off, counted nowhere (not a loss).
    assert all(m.status == "aborted" and m.finish.termination.value == "no_start" for m in ended)
    assert honest.post("/bot/popular/play", data={"you": "X"}, headers=SITE).status_code == 303
    stream.close()


def test_a_person_who_moved_and_then_stopped_loses_on_time(app, client):
    token = bot(app, "popular")
    stream = Lines(client, token)
    stream.next()
    person = app.test_client()
    person.get("/")
    played = person.post("/bot/popular/play", data={"you": "O"}, headers=SITE)
    game_id = played.headers["Location"].rsplit("/", 1)[1]
    assert post(client, token, f"/api/bot/game/{game_id}/move", {"cell": 4})[1]["ok"]
    store, table = app.extensions["ttt_store"], app.extensions["ttt_table"]
    match = store.get(game_id)
    person_id = match.seats["O"]
    sid = "person-sid"
    assert table.connect(sid, person_id, "10.0.0.9")
    assert table.handle("move", sid, {"game": game_id, "cell": 0}).answer["ok"]
    assert post(client, token, f"/api/bot/game/{game_id}/move", {"cell": 8})[1]["ok"]
    app.extensions["ttt_clock"].now += PERSON_SECONDS + 1
    table.tick()
    assert store.get(game_id).status == "won" and store.get(game_id).winner == "X"
    table.disconnect(sid)
    stream.close()


def _bot_game(app, client, challenger: str, victim: str, victim_name: str) -> str:
    streams = [Lines(client, challenger), Lines(client, victim)]
    for stream in streams:
        stream.next()
    _, made = post(client, challenger, "/api/bot/challenge", {"opponent": f"bot:{victim_name}",
                                                              "you": "X"})
    assert made["ok"], made
    game_id = made["game"]["id"]
    assert post(client, victim, f"/api/bot/challenge/{game_id}/accept")[1]["ok"]
    for stream in streams:
        stream.close()
    return game_id


def _win_for_x(client, x: str, o: str, game_id: str) -> None:
    for who, cell in ((x, 0), (o, 3), (x, 1), (o, 4), (x, 2)):
        answer = post(client, who, f"/api/bot/game/{game_id}/move", {"cell": cell})[1]
        assert answer["ok"], answer


def test_one_persons_two_bots_rate_nothing_between_themselves(app, client):
    a, b = bot(app, "alpha", maker="p" * 22), bot(app, "beta", maker="p" * 22)
    for _ in range(3):
        game_id = _bot_game(app, client, a, b, "beta")
        _win_for_x(client, a, b, game_id)
        assert app.extensions["ttt_store"].get(game_id).winner == "X"
    assert rating(app, "alpha") == rating(app, "beta") == 1500


def test_a_resignation_before_both_sides_moved_rates_nothing(app, client):
    a, b = bot(app, "alpha", maker="a" * 22), bot(app, "beta", maker="b" * 22)
    for moves in ([], [0]):  # resigned at move 0, and after X's first move only
        game_id = _bot_game(app, client, a, b, "beta")
        for cell in moves:
            assert post(client, a, f"/api/bot/game/{game_id}/move", {"cell": cell})[1]["ok"]
        assert post(client, b, f"/api/bot/game/{game_id}/resign")[1]["ok"]
        assert app.extensions["ttt_store"].get(game_id).winner == "X"
    assert rating(app, "alpha") == rating(app, "beta") == 1500
    game_id = _bot_game(app, client, a, b, "beta")  # a game both played is rated
    _win_for_x(client, a, b, game_id)
    assert rating(app, "alpha") > 1500 > rating(app, "beta")
