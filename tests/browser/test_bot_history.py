"""A bot's history in Chromium (issue 40): its page lists its recent games, 20 a page, and a
replay names the players, says the date and shows the cell numbers on a toggle; on a desktop
and on a phone (screenshots in /tmp, looked at)."""

from __future__ import annotations

import re

import pytest
import requests
from playwright.sync_api import expect

from ttt.bots.sdk import Api

pytestmark = [pytest.mark.browser, pytest.mark.server]

SHOTS = "/tmp/i40-{name}-{device}.png"


@pytest.fixture(scope="module")
def historian(live_server):
    """A bot made on the site's form with 22 finished games against the AI, each resigned;
    the newest after a move. Its name and the newest game."""
    person = requests.Session()
    name = "hist" + re.sub(r"\W", "", live_server.rsplit(":", 1)[1])
    made = person.post(live_server + "/bots/new", data={"name": name, "about": "",
                                                        "variants": ["classic"]},
                       headers={"Origin": live_server}, timeout=10)
    token = re.search(r'id="bot-token"[^>]*value="([^"]+)"', made.text, re.S).group(1)
    api = Api(live_server, token)  # its calls wait out a rate limit, as the SDK's do
    game = None
    for number in range(22):
        answer = api.challenge("ai:easy", you="X")
        assert answer.get("ok"), answer
        game = answer["game"]
        if number == 21:  # the newest: one move (the AI may answer it) before resigning
            moved = api.move(game["id"], 0)
            assert moved.get("ok"), moved
        game = api.call(f"/api/bot/game/{game['id']}/resign")["game"]
    return name, game


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_the_bot_page_lists_its_games_and_a_replay_names_them_with_cell_numbers(
        open_page, historian, device):
    name, newest = historian
    page = open_page(device=device, path=f"/bot/{name}")
    rows = page.locator(".bot-game")
    expect(rows).to_have_count(20)
    first = rows.first
    expect(first).to_contain_text("AI · Easy")
    expect(first).to_contain_text("Lost")
    expect(first).to_contain_text("resigned")
    expect(first.locator("time")).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d$"))
    page.screenshot(path=SHOTS.format(name="bot-page", device=device), full_page=True)
    page.get_by_role("link", name="Older games").click()
    expect(page.locator(".bot-game")).to_have_count(2)
    expect(page.get_by_role("link", name="Newest games")).to_be_visible()
    page.get_by_role("link", name="Newest games").click()
    expect(page.locator(".bot-game")).to_have_count(20)
    page.locator(".bot-game").first.get_by_role("link", name="Replay").click()
    expect(page).to_have_url(re.compile(rf"/r/\d+\?g={newest['id']}$"))
    players = page.locator("#replay-players")
    expect(players).to_contain_text(f"{name} (X) vs AI · Easy (O)")
    expect(players.locator("time")).to_contain_text("UTC")
    numbers = page.locator("#replay .move-cell")
    expect(numbers.first).to_be_hidden()
    page.get_by_label("Show cell numbers").check()
    expect(numbers.first).to_be_visible()
    expect(numbers.first).to_have_text(f" · {newest['moves'][0]}")
    shown = page.locator('#board [data-cell="4"]').evaluate(
        "cell => getComputedStyle(cell, '::after').content")
    assert shown == '"4"'
    page.screenshot(path=SHOTS.format(name="replay", device=device), full_page=True)
