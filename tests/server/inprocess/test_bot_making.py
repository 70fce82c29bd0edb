"""Making and revoking a bot from the site (/bots/new, POST /api/bots, /bot/<name>/revoke)
through Flask's test client: the token once, every refusal, cross-site posts refused."""

from __future__ import annotations

import re

import pytest

from tests.server.inprocess.test_bot_api import Lines, auth, make_bot
from ttt.web import create_app

SITE = {"Origin": "http://localhost"}  # the test client's own site


def new_app(**config):
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret", "TTT_STORE": "memory://",
                       "TTT_RATE_LIMIT": 0, **config})


@pytest.fixture
def app():
    app = new_app()
    yield app
    app.extensions["ttt_store"].close()


def person(app):
    """A visitor with a cookie of its own."""
    client = app.test_client()
    client.get("/bots/new")
    return client


def make(client, name: str, about: str = "", **headers):
    return client.post("/api/bots", json={"name": name, "about": about}, headers=headers)


def token_on(html: str) -> str:
    return re.search(r'id="bot-token"[^>]*value="([^"]+)"', html, re.S).group(1)


def test_the_form_makes_a_bot_and_shows_its_token_once(app):
    ann = person(app)
    assert 'href="/bots/new"' in ann.get("/bots").get_data(as_text=True)
    form = ann.get("/bots/new").get_data(as_text=True)
    assert 'name="name"' in form and 'name="about"' in form and "<script" not in form
    made = ann.post("/bots/new", data={"name": "webby", "about": "<b>mine</b>"}, headers=SITE)
    assert made.status_code == 200 and made.headers["Cache-Control"] == "no-store"
    html = made.get_data(as_text=True)
    token = token_on(html)
    assert len(token) >= 43
    assert ("python -m ttt bot run mybot.py --server http://localhost --token-file "
            "mybot.token") in html
    assert 'href="/bots/guide"' in html and 'href="/bots/sdk.py"' in html
    assert ann.get("/api/bot/account", headers=auth(token)).get_json()["bot"]["name"] == "webby"
    # Nowhere else: not on its page, the ladder, the form, nor the listing.
    for path in ("/bot/webby", "/bots", "/bots/new", "/api/bots"):
        assert token not in ann.get(path).get_data(as_text=True), path
    assert "webby" in ann.get("/bots").get_data(as_text=True)
    assert "&lt;b&gt;mine&lt;/b&gt;" in ann.get("/bot/webby").get_data(as_text=True)


def test_the_json_endpoint_makes_a_bot_for_the_cookie(app):
    ann = person(app)
    made = make(ann, "jsonbot", "plays fast")
    body = made.get_json()
    assert made.status_code == 200 and made.headers["Cache-Control"] == "no-store"
    assert body["ok"] is True and body["bot"]["name"] == "jsonbot"
    assert body["bot"]["about"] == "plays fast" and body["bot"]["online"] is False
    assert "maker" not in body["bot"] and "player" not in body["bot"]
    assert ann.get("/api/bot/account", headers=auth(body["token"])).status_code == 200
    kept = app.extensions["ttt_bots_book"].by_name("jsonbot")
    assert kept.maker and kept.token_hash and body["token"] not in str(kept.to_json())


@pytest.mark.parametrize("name", ["JSONBOT", "jsonBot", "CliBot", "clibot"])
def test_a_taken_name_in_any_case_is_a_409_conflict_from_the_cli_or_the_site(app, name):
    make_bot(app, "CliBot")
    make(person(app), "jsonbot")
    refused = make(person(app), name)
    assert refused.status_code == 409 and refused.get_json()["error"]["code"] == "conflict"
    form = person(app).post("/bots/new", data={"name": name}, headers=SITE)
    assert form.status_code == 409 and "taken" in form.get_data(as_text=True)


@pytest.mark.parametrize("body", [{"name": "ab"}, {"name": "two words"}, {"name": 7},
                                  {}, {"name": "fine", "about": "x" * 281},
                                  {"name": "fine", "about": "bell\x07"},
                                  {"name": "fine", "about": ["list"]}])
def test_a_bad_name_or_about_is_a_400(app, body):
    refused = person(app).post("/api/bots", json=body)
    assert refused.status_code == 400 and refused.get_json()["error"]["code"] == "bad_request"
    assert app.extensions["ttt_bots_book"].all() == []


def test_the_json_endpoint_takes_json_only_and_refuses_another_sites_origin(app):
    ann = person(app)
    as_form = ann.post("/api/bots", data={"name": "formbot"})
    assert as_form.status_code == 400
    foreign = make(ann, "evilbot", Origin="https://evil.example")
    assert foreign.status_code == 403 and foreign.get_json()["error"]["code"] == "not_allowed"
    assert make(ann, "goodbot", Origin="http://localhost").status_code == 200
    assert [b.name for b in app.extensions["ttt_bots_book"].all()] == ["goodbot"]


@pytest.mark.parametrize("headers", [{}, {"Origin": "https://evil.example"}, {"Origin": "null"},
                                     {"Referer": "https://evil.example/bots/new"},
                                     {"Origin": "http://localhost.evil.example"}])
def test_a_form_post_from_another_site_or_from_nowhere_is_refused(app, headers):
    refused = person(app).post("/bots/new", data={"name": "csrfbot"}, headers=headers)
    assert refused.status_code == 403
    assert "only taken from this site" in refused.get_data(as_text=True)
    assert app.extensions["ttt_bots_book"].all() == []


def test_a_form_post_with_this_sites_referer_or_public_url_is_taken():
    app = new_app(TTT_PUBLIC_URL="https://ttt.example.org/")
    made = person(app).post("/bots/new", data={"name": "refbot"},
                            headers={"Referer": "http://localhost/bots/new"})
    assert made.status_code == 200
    public = person(app).post("/bots/new", data={"name": "pubbot"},
                              headers={"Origin": "https://ttt.example.org"})
    assert public.status_code == 200
    assert "--server https://ttt.example.org --token-file" in public.get_data(as_text=True)


def test_making_is_rate_limited_per_person_and_per_address():
    app = new_app(TTT_RATE_LIMIT=20, TTT_BOT_CREATE_RATE=2, TTT_BOT_MAX_PER_PERSON=100,
                  TTT_TRUSTED_PROXIES="127.0.0.1")
    ann, ben, cy = person(app), person(app), person(app)

    def from_(client, name, address):
        return make(client, name, **{"X-Forwarded-For": address})

    assert from_(ann, "ann-1", "10.0.0.1").status_code == 200
    assert from_(ann, "ann-2", "10.0.0.1").status_code == 200
    per_person = from_(ann, "ann-3", "10.0.0.2")  # another address: the person's own rate
    assert per_person.status_code == 429
    assert per_person.get_json()["error"]["code"] == "rate_limited"
    per_address = from_(ben, "ben-1", "10.0.0.1")  # another person: the address's rate
    assert per_address.status_code == 429
    assert from_(cy, "cy-1", "10.0.0.3").status_code == 200
    assert {b.name for b in app.extensions["ttt_bots_book"].all()} == {"ann-1", "ann-2", "cy-1"}


def test_a_person_has_at_most_the_cap_of_live_bots_and_revoking_makes_room():
    app = new_app(TTT_BOT_MAX_PER_PERSON=2)
    ann = person(app)
    assert make(ann, "one").status_code == make(ann, "two").status_code == 200
    capped = make(ann, "three")
    assert capped.status_code == 409 and capped.get_json()["error"]["code"] == "not_allowed"
    form = ann.post("/bots/new", data={"name": "three"}, headers=SITE)
    assert form.status_code == 409 and "revoke one first" in form.get_data(as_text=True)
    assert make(person(app), "others").status_code == 200  # the cap is per person
    assert ann.post("/bot/one/revoke", headers=SITE).status_code == 303
    assert make(ann, "three").status_code == 200


def test_only_the_owner_revokes_and_it_cuts_the_bot_off_at_once(app):
    ann, ben = person(app), person(app)
    token = make(ann, "owned").get_json()["token"]
    cli_token = make_bot(app, "fromcli")
    assert "Revoke this bot" in ann.get("/bot/owned").get_data(as_text=True)
    assert "Revoke this bot" not in ben.get("/bot/owned").get_data(as_text=True)
    assert "Revoke this bot" not in ann.get("/bot/fromcli").get_data(as_text=True)
    assert ben.post("/bot/owned/revoke", headers=SITE).status_code == 403
    assert ann.post("/bot/fromcli/revoke", headers=SITE).status_code == 403
    assert ann.post("/bot/owned/revoke").status_code == 403  # no Origin: not from our page
    assert ann.post("/bot/owned/revoke", headers={"Origin": "https://evil.example"}
                    ).status_code == 403
    assert ann.post("/bot/nobody/revoke", headers=SITE).status_code == 404
    stream = Lines(ann, token)
    assert stream.next()["type"] == "hello"
    done = ann.post("/bot/owned/revoke", headers=SITE)
    assert done.status_code == 303 and done.headers["Location"] == "/bots"
    assert stream.ended()
    refused = ann.post("/api/bot/challenge", json={"opponent": "ai:easy"}, headers=auth(token))
    assert refused.status_code == 401
    assert ann.get("/bot/owned").status_code == 404
    assert "owned" not in ann.get("/bots").get_data(as_text=True)
    assert ann.get("/api/bot/account", headers=auth(cli_token)).status_code == 200


def test_play_this_bot_refuses_a_post_from_another_site(app):
    make_bot(app, "minimax")
    refused = person(app).post("/bot/minimax/play", data={"variant": "classic"},
                               headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
