"""The link you opened offline (issue 42): a `/g/<id>` link never opened on this device shows
that link (not the last AI game), says the game needs the network, and joins exactly that game
when the network is back; a link seen before shows its own last state, read only, without
"Your turn"; New game offline says why it does nothing; /bots and the guide open offline."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_friend_page import host_friend_game, status
from tests.browser.test_offline import CONTROLLED
from tests.browser.test_play import cell

pytestmark = [pytest.mark.browser, pytest.mark.server]

PRECACHED = """async () => {
    for (const name of await caches.keys()) {
        const keys = (await (await caches.open(name)).keys()).map((r) => new URL(r.url).pathname);
        if (keys.includes("/bots/guide") && keys.some((p) => p.endsWith("/main.js"))) return true;
    }
    return false;
}"""


def visited_once(open_page):
    """A phone that played the AI once and has the service worker with its precache."""
    page = open_page("phone")
    expect(status(page)).to_have_text("Your turn")
    cell(page, 4).tap()
    expect(page.locator("#board [data-mark='O']")).to_have_count(1)
    page.wait_for_function(CONTROLLED, timeout=20_000)
    page.wait_for_function(PRECACHED, timeout=20_000)
    return page


def test_a_new_link_opened_offline_shows_that_link_and_joins_it_back_online(open_page):
    host, link = host_friend_game(open_page, "desktop")
    page = visited_once(open_page)

    page.context.set_offline(True)
    page.goto(link)
    assert page.url == link
    expect(page.locator("#connection-text")).to_have_text(
        re.compile(r"^You are offline — this game needs the network"))
    expect(page.locator("#board [data-mark='X']")).to_have_count(0)  # not the AI game
    expect(page.locator("#board [data-mark='O']")).to_have_count(0)
    expect(page.locator("#app")).not_to_have_attribute("data-restored", "true")

    page.context.set_offline(False)  # back online: that very game, joined, no tap
    expect(page.locator("#connection")).to_be_hidden(timeout=20_000)
    expect(status(host)).not_to_have_text("Waiting for your friend to join")
    expect(status(page)).to_have_text(re.compile(r"turn"))
    assert page.url == link
    assert link.endswith(page.evaluate("() => location.pathname"))
    # The host moves: the guest's page is in that game.
    cell(host, 0).click()
    expect(cell(page, 0)).to_have_attribute("data-mark", "X")


def test_a_link_seen_before_shows_its_own_state_offline_without_your_turn(open_page):
    host, link = host_friend_game(open_page, "desktop")
    page = visited_once(open_page)
    page.goto(link)
    cell(host, 4).click()
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(status(page)).to_have_text("Your turn")
    page.goto("/")  # the AI game again: now the last game of this device
    expect(status(page)).to_have_text("Your turn")

    page.context.set_offline(True)
    page.goto(link)
    expect(page.locator("#app")).to_have_attribute("data-restored", "true")
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")  # the link's own game
    expect(page.locator("#board [data-mark='O']")).to_have_count(0)
    expect(status(page)).to_have_text("Offline · the game as you last saw it")
    page.locator("#new-game").tap()
    expect(page.locator("#notice")).to_have_text(
        "A new game needs the network — try again when you are back online")
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")

    page.context.set_offline(False)
    expect(page.locator("#connection")).to_be_hidden(timeout=20_000)
    expect(status(page)).to_have_text("Your turn")
    expect(page.locator("#notice")).to_be_empty()  # the why is gone with the reason


@pytest.mark.parametrize("path", ["/bots", "/bots/guide"])
def test_the_bots_and_the_guide_open_offline(open_page, path):
    page = visited_once(open_page)
    page.context.set_offline(True)
    page.goto(path)
    expect(page.locator("h1")).to_be_visible()
    assert page.url.endswith(path)


def test_a_visited_replay_opens_offline(open_page):
    page = visited_once(open_page)
    page.goto("/r/40812")
    expect(page.locator("#board [data-mark='X']")).to_have_count(3)
    page.context.set_offline(True)
    page.reload()
    expect(page.locator("#board [data-mark='X']")).to_have_count(3)  # the page, not the dinosaur
    assert page.url.endswith("/r/40812")
