"""Bots cannot squat each other: two bots share at most two live games, and a bot's games
against bots and against people are counted apart, so a person still finds the bot free."""

from __future__ import annotations

import pytest

from tests.server.inprocess.test_bot_api import Lines, make_bot, people, post
from ttt.bots.caps import PAIR
from ttt.web import create_app

CAP = 4  # the bot's live games against people; against bots, half as many


@pytest.fixture
def app():
    app = create_app({"TESTING": True, "SECRET_KEY": "test-secret", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0, "TTT_BOT_MAX_GAMES": CAP})
    yield app
    app.extensions["ttt_store"].close()


def challenge(client, token: str, victim_token: str, victim: str) -> dict:
    """A bot-versus-bot game: challenged, then accepted by the victim (as its SDK would)."""
    _, made = post(client, token, "/api/bot/challenge", {"opponent": f"bot:{victim}"})
    if not made["ok"]:
        return made
    return post(client, victim_token, f"/api/bot/challenge/{made['game']['id']}/accept")[1]


def test_a_squatting_bot_gets_two_games_and_a_person_still_gets_one(app, client):
    victim = make_bot(app, "popular")
    squatter = make_bot(app, "squatter")
    stream = Lines(client, victim)
    stream.next()
    answers = [challenge(client, squatter, victim, "popular") for _ in range(10)]
    accepted = [a for a in answers if a["ok"]]
    refused = [a["error"] for a in answers if not a["ok"]]
    assert len(accepted) == PAIR
    assert all(e["code"] == "not_allowed" and "against that bot" in e["message"]
               for e in refused)
    # More bots: the victim's games against bots stop at half its cap, never its people's.
    for n in range(3):
        other = make_bot(app, f"other{n}")
        challenge(client, other, victim, "popular")
    squatted = app.extensions["ttt_store"].count_live(
        app.extensions["ttt_bots_book"].by_name("popular").player)
    assert squatted == max(PAIR, CAP // 2)
    # A person asks to play the victim: a friend game's empty seat given to it.
    (person, person_http), = people(app, 3)
    for _ in range(CAP):
        game_id = person.emit("new_game", {"mode": "friend", "you": "X"},
                              callback=True)["game"]["id"]
        given = person_http.post(f"/api/game/{game_id}/opponent",
                                 json={"opponent": "bot:popular"})
        assert given.get_json()["ok"], given.get_json()
    # The people's share is full now, and says so.
    game_id = person.emit("new_game", {"mode": "friend", "you": "X"}, callback=True)["game"]["id"]
    full = person_http.post(f"/api/game/{game_id}/opponent", json={"opponent": "bot:popular"})
    assert "too many unfinished games" in full.get_json()["error"]["message"]
    stream.close()
