"""A person in Chromium plays a bot: from the bot's page, through a friend link."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import time

import pytest
from playwright.sync_api import expect

from tests.browser.test_play import board, cell
from tests.support.servers import ROOT, Server
from ttt.bots.sdk import Api

pytestmark = [pytest.mark.browser, pytest.mark.server]

STATUS = re.compile(r"^(Your turn|Draw|minimax wins|You win!)$")
OVER = {"Draw", "minimax wins", "You win!"}


@pytest.fixture
def bot_server(tmp_path):
    """A server with the minimax bot made and its program running; its URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    store = f"sqlite:///{tmp_path / 'ttt.sqlite3'}"
    made = subprocess.run([sys.executable, "-m", "ttt", "bot", "create", "minimax", "--about",
                           "Never loses.", "--store", store], cwd=ROOT, env=env, text=True,
                          capture_output=True, check=True)
    token = tmp_path / "token"
    token.write_text(made.stdout)
    server = Server({"TTT_STORE": store, "TTT_SECRET_KEY": "bot-page"},
                    log=tmp_path / "server.log").start()
    bot = subprocess.Popen([sys.executable, "-m", "ttt", "bot", "run",
                            str(ROOT / "examples" / "bots" / "minimax.py"), "--server",
                            server.url, "--token-file", str(token), "--quiet"],
                           cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not Api(server.url, "-").call("/api/bots", method="GET")["bots"][0]["online"]:
            assert time.monotonic() < deadline, "the bot never came online"
            time.sleep(0.1)
        yield server.url
    finally:
        bot.kill()
        bot.wait(10)
        server.stop()


def test_a_person_plays_the_bot_from_its_page_and_never_beats_it(open_page, bot_server):
    page = open_page(server=bot_server, path="/bot/minimax")
    expect(page.locator(".bot-about")).to_have_text("Never loses.")
    expect(page.locator(".bot-online")).to_have_text("Online now")
    page.get_by_role("button", name="Play this bot: classic").click()
    expect(page).to_have_url(re.compile(r"/g/[A-Za-z0-9_-]{16,}$"))
    status = page.locator("#status")
    for _ in range(5):
        expect(status).to_have_text(STATUS)
        if status.text_content() in OVER:
            break
        target = cell(page, board(page).index("."))
        target.click()
        expect(target).not_to_have_attribute("data-mark", "")
    expect(status).to_have_text(re.compile(r"^(Draw|minimax wins)$"))
    # The ladder shows the game against a person nowhere (it is not an AI or bot game),
    # and the bot's page still offers another.
    page.goto("/bots")
    expect(page.get_by_role("link", name=re.compile("minimax"))).to_be_visible()


def test_a_person_makes_a_bot_sees_its_token_once_and_finds_it_on_the_ladder(open_page,
                                                                            live_server):
    from tests.browser.test_a11y import audit

    name = f"web-{secrets.token_hex(4)}"  # the live server lives for the whole run
    page = open_page(path="/bots")
    page.get_by_role("link", name="Make a bot").first.click()
    expect(page).to_have_url(re.compile(r"/bots/new$"))
    problems: list[str] = []
    audit(page, "the form", problems)
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("About it").fill("Made in a browser.")
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.get_by_role("button", name="Make the bot").click()
    assert posted.value.status == 200 and posted.value.headers["cache-control"] == "no-store"
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"{name} is made")
    token = page.get_by_label("Token").input_value()
    assert len(token) >= 43
    # The first command is the one-file client the site serves, which knows this site; it
    # starts a first game (issue 40: without --opponent it would only wait).
    expect(page.locator(".bot-command").first).to_have_text(
        "python3 sdk.py mybot.py --token-file mybot.token --opponent ai:easy --games 4")
    expect(page.locator(".bot-hint").last).to_contain_text(
        f"python -m ttt bot run mybot.py --server {live_server} --token-file mybot.token")
    # The Copy button puts the token on the clipboard (or selects it where there is none).
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#bot-token-copied")).to_have_text(re.compile(r"^(Copied|Selected)"))
    expect(page.get_by_role("link", name="sdk.py")).to_have_attribute("href", "/bots/sdk.py")
    audit(page, "the token", problems)
    assert problems == []
    assert Api(live_server, token).account()["bot"]["name"] == name  # the token plays
    # Shown once: the ladder lists the bot, its page shows it to its owner; no token anywhere.
    page.goto("/bots")
    page.get_by_role("link", name=re.compile(name)).click()
    expect(page.locator(".bot-about")).to_have_text("Made in a browser.")
    expect(page.locator(".bot-online")).to_have_text("Offline: its program is not connected")
    assert token not in page.content()
    page.get_by_text("Revoke this bot").click()
    page.get_by_role("button", name=f"Revoke {name}").click()
    expect(page).to_have_url(re.compile(r"/bots$"))
    expect(page.get_by_role("link", name=re.compile(name))).to_have_count(0)
    assert token not in page.content()


@pytest.mark.parametrize("device", ["desktop", "phone", {"width": 320, "height": 568}])
def test_the_guide_is_a_page_that_fits_and_draws_the_81_cells(open_page, device):
    page = open_page(device=device, path="/")
    page.get_by_role("link", name="Write a bot").click()
    expect(page).to_have_url(re.compile(r"/bots/guide$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Write a bot in five minutes")
    cells = page.locator(".guide-ultimate span")
    expect(cells).to_have_count(81)
    # board × 9 + square: the second small board starts at 9, small board 5 holds 45-53.
    two, nine, three = (cells.nth(c).bounding_box() for c in (2, 9, 3))
    assert abs(nine["y"] - two["y"]) < 2 and nine["x"] > two["x"]  # drawn: 0 1 2 | 9 10 11
    assert three["y"] > two["y"] + 5  # 3 starts the second row of small board 0
    expect(page.locator(".guide-small.is-next span")).to_have_text(
        [str(c) for c in range(45, 54)])
    for field in ("board", "legal", "next", "boards", "time_left", "can"):
        expect(page.locator(".guide-table td:first-child code", has_text=re.compile(
            f"^{field}$")).first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.locator("#ultimate").scroll_into_view_if_needed()
    example = page.get_by_role("link", name="minimax.py").first
    expect(example).to_have_attribute("href", "/bots/examples/minimax.py")


def test_the_ladder_fits_a_320_px_phone_with_the_online_column(open_page, bot_server):
    page = open_page(device={"width": 320, "height": 568}, path="/bots", server=bot_server)
    row = page.locator(".ladder tbody tr").first
    expect(row).to_contain_text("minimax")
    online = page.locator(".ladder th", has_text="Online")
    expect(online).to_be_visible()
    box = online.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 320
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
