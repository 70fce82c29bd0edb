"""Budgets per address prefix for events and pages, the page rendered once per language, the
bounded Accept-Language, and bot text without hidden controls (issue 41)."""

from __future__ import annotations

import time

import pytest
from flask import template_rendered

from ttt.bots import BotError, check_about
from ttt.web import create_app, get_socketio
from ttt.web.transport import budgets as budgets_module
from ttt.web.transport.budgets import Budgets, bound_accept_language


def call(sio, event, payload=None):
    return sio.emit(event, payload, callback=True)


@pytest.fixture
def limited():
    """An app with the house's rates on, and small address budgets to reach in a test."""
    app = create_app({"TESTING": True, "SECRET_KEY": "budget-test", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 20, "TTT_EVENTS_PER_ADDRESS": 5,
                      "TTT_PAGES_PER_ADDRESS": 3, "TTT_CREATE_RATE": 100000,
                      "TTT_TRUSTED_PROXIES": frozenset({"127.0.0.1"})})
    yield app
    app.extensions["ttt_table"].thinker.close()
    app.extensions["ttt_store"].close()


def player(app, address: str = "10.1.0.1"):
    web = app.test_client()
    web.environ_base["HTTP_X_FORWARDED_FOR"] = address
    assert web.get("/").status_code == 200
    sio = get_socketio(app).test_client(app, flask_test_client=web)
    assert sio.is_connected()
    return web, sio


# --- events -------------------------------------------------------------------------------------

def test_the_events_of_all_an_addresss_cookies_share_one_budget(limited):
    """Each cookie is far under its own 20 a second; together past the address's 5 (bursts
    of 10) they are refused, while another address is served."""
    cookies = [player(limited)[1] for _ in range(6)]
    codes = [call(sio, "join", {}).get("error", {}).get("code")
             for _ in range(3) for sio in cookies]
    assert codes[:10] == [None] * 10 and codes.count("rate_limited") >= 6, codes
    refused = next(call(sio, "join", {}) for sio in cookies[:1])
    assert "your address" in refused["error"]["message"]
    _, other = player(limited, "10.2.0.1")
    assert call(other, "join", {})["ok"]
    for sio in [*cookies, other]:
        sio.disconnect()


def test_a_seated_players_moves_go_on_past_a_flood_from_its_address(limited):
    """The newcomer allowance's care: the people already playing behind an address keep
    their moves when the rest of the address floods it."""
    _, honest = player(limited)
    game = call(honest, "new_game", {"mode": "local"})["game"]
    flood = [player(limited)[1] for _ in range(4)]
    for _ in range(5):  # the address's budget spent many times over
        for sio in flood:
            call(sio, "join", {})
    assert call(flood[0], "join", {})["error"]["code"] == "rate_limited"
    for cell in (0, 3, 1, 4):
        answer = call(honest, "move", {"game": game["id"], "cell": cell})
        assert answer["ok"], answer
    for sio in [*flood, honest]:
        sio.disconnect()


def test_the_budget_counts_an_ipv6_64_as_one_address():
    budgets = Budgets(events_per_address=1, pages_per_address=1)  # pages: bursts of 10
    for i in range(10):
        assert budgets.page(f"2001:db8:1:2::{i + 1:x}", None)
    assert not budgets.page("2001:db8:1:2:ffff::1", None)  # another address, the same /64
    assert budgets.page("2001:db8:1:3::1", None)            # another /64


def test_budgets_are_off_with_the_rate_limit_off():
    app = create_app({"TESTING": True, "SECRET_KEY": "x", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0})
    budgets = app.extensions["ttt_budgets"]
    assert budgets.events == 0 and budgets.pages == 0
    app.extensions["ttt_store"].close()


# --- pages --------------------------------------------------------------------------------------

def test_one_cookie_flooding_pages_is_refused_and_spends_nobody_elses(limited):
    """A cookie's own pages first (2 a second, bursts of 20), then the address's: one cookie
    reloading fast gets 429 while a neighbour's first page (its own cookie) still renders."""
    web, sio = player(limited)
    sio.disconnect()
    statuses = [web.get("/").status_code for _ in range(40)]
    assert statuses.count(429) >= 10, statuses
    refused = web.get("/")
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert player(limited, "10.1.0.1")[0].get("/").status_code == 200  # same address


def test_pages_are_rendered_once_per_language(limited):
    """The same page for everybody of one language: one template render per language, the
    game's own id put into a game link's copy."""
    limited.extensions["ttt_budgets"].pages = 0  # this test counts renders, not refusals
    renders = []

    def counted(sender, template, context, **extra):
        renders.append(template.name)

    web = limited.test_client()
    with template_rendered.connected_to(counted, limited):
        first = web.get("/").get_data(as_text=True)
        again = web.get("/").get_data(as_text=True)
        french = web.get("/?lang=fr").get_data(as_text=True)
        french_again = web.get("/").get_data(as_text=True)
    assert first == again and french == french_again and first != french
    assert renders.count("index.html") == 2, renders


def test_a_game_links_page_carries_its_own_id(limited):
    limited.extensions["ttt_budgets"].pages = 0
    _, sio = player(limited)
    one = call(sio, "new_game", {"mode": "local"})["game"]["id"]
    two = call(sio, "new_game", {"mode": "local"})["game"]["id"]
    sio.disconnect()
    web = limited.test_client()
    pages = [web.get(f"/g/{game}").get_data(as_text=True) for game in (one, two)]
    assert f'data-game-id="{one}"' in pages[0] and f'data-game-id="{two}"' in pages[1]
    assert one not in pages[1] and "\x00" not in pages[0] + pages[1]
    assert pages[0].replace(one, two) == pages[1]


# --- Accept-Language ----------------------------------------------------------------------------

def test_a_long_accept_language_is_cut_to_a_few_whole_languages():
    environ = {"HTTP_ACCEPT_LANGUAGE": "fr-FR;q=0.9," * 700}
    bound_accept_language(environ)
    value = environ["HTTP_ACCEPT_LANGUAGE"]
    assert len(value) <= budgets_module.ACCEPT_LANGUAGE_BYTES
    assert value.split(",") == ["fr-FR;q=0.9"] * budgets_module.ACCEPT_LANGUAGE_ITEMS
    plain = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9,fr;q=0.8"}
    bound_accept_language(plain)
    assert plain["HTTP_ACCEPT_LANGUAGE"] == "en-US,en;q=0.9,fr;q=0.8"


def test_a_7_5_kb_accept_language_costs_no_more_than_a_plain_one(limited):
    """The page's language still comes from the header's first languages; the long header
    costs about what a plain one does (before: 47 ms against 18)."""
    limited.extensions["ttt_budgets"].pages = 0
    web = limited.test_client()
    long_header = ("de-DE;q=0.9," + "xx-YY;q=0.5," * 700)[:7500]
    assert 'lang="de"' in web.get("/", headers={"Accept-Language": long_header}).get_data(
        as_text=True)

    def cost(header: str) -> float:
        web.get("/", headers={"Accept-Language": header})
        times = []
        for _ in range(15):
            started = time.perf_counter()
            web.get("/", headers={"Accept-Language": header})
            times.append(time.perf_counter() - started)
        return sorted(times)[len(times) // 2]

    plain, long = cost("de-DE,de;q=0.9"), cost(long_header)
    assert long < plain * 1.5 + 0.003, (plain, long)


# --- bot text -----------------------------------------------------------------------------------

@pytest.mark.parametrize("hidden", ["\u202e", "\u202a", "\u2066", "\u2069", "\u2028",
                                    "\u2029", "\u0085", "\x7f"])
def test_a_bots_about_refuses_bidi_controls_and_line_separators(hidden):
    with pytest.raises(BotError):
        check_about(f"plays fast {hidden}gnitaeh")


def test_a_bots_about_keeps_ordinary_text():
    assert check_about("plays the centre first\nthen the corners, é ü 日本").startswith("plays")


# --- event frames past the budget ---------------------------------------------------------------

class Frames:
    """A websocket that hands out these frames, then None (closed)."""

    def __init__(self, frames: list) -> None:
        self.frames = list(frames)

    def wait(self):
        return self.frames.pop(0) if self.frames else None


def test_event_frames_past_twice_the_budget_are_dropped_unread_but_never_a_move():
    from types import SimpleNamespace

    from ttt.web.transport.defences import FrameCheck

    budgets = Budgets(events_per_address=1, pages_per_address=0)  # frames: 2 a second, 4 at once
    frames = ['42["join",{}]'] * 10 + ['421["move",{"game":"g","cell":0}]'] * 3 + ["2"]
    check = FrameCheck(Frames(frames), SimpleNamespace(in_upgrade=False, sid="s"), 4096,
                       budgets, lambda sid: "10.9.0.1")
    read = []
    while (frame := check.wait()) is not None:
        read.append(frame)
    assert read.count('42["join",{}]') == 4, read  # the burst; the rest never decoded
    assert read[-4:] == ['421["move",{"game":"g","cell":0}]'] * 3 + ["2"]
    assert budgets.refused["frames"] == 6
    other = FrameCheck(Frames(['42["join",{}]']), SimpleNamespace(in_upgrade=False, sid="t"),
                       4096, budgets, lambda sid: "10.9.0.2")
    assert other.wait() == '42["join",{}]'  # another address: its own budget


def test_a_head_request_never_leaves_its_page_in_the_cache(limited):
    """The language menu of a non-GET page links home: such a copy is not kept."""
    limited.extensions["ttt_budgets"].pages = 0
    _, sio = player(limited)
    game = call(sio, "new_game", {"mode": "local"})["game"]["id"]
    sio.disconnect()
    web = limited.test_client()
    assert web.head(f"/g/{game}").status_code == 200
    page = web.get(f"/g/{game}").get_data(as_text=True)
    assert f'href="/g/{game}?lang=fr"' in page
