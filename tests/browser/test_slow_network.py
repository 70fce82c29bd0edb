"""The page on a slow network (issue 30): the player's mark shows at the tap, pending, before the
move reaches the server; a refused move is rolled back with its message; the AI's reply shows as
soon as it is here. The page goes through tests/support/delay_proxy.py (CDP throttling does
not slow a websocket)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser.test_friend_page import host_friend_game, play, status
from tests.browser.test_play import cell, share_link
from tests.support.delay_proxy import DelayProxy

pytestmark = [pytest.mark.browser, pytest.mark.server]


@pytest.fixture
def proxy(live_server):
    """A factory of delay proxies in front of the live server, stopped after the test (ask for
    it before open_page: its pages close first)."""
    made: list[DelayProxy] = []

    def make(up: float = 0.0, down: float = 0.0) -> DelayProxy:
        made.append(DelayProxy(int(live_server.rsplit(":", 1)[1]), up=up, down=down).start())
        return made[-1]

    yield make
    for each in made:
        each.release()
        each.stop()


def wait_held(proxy: DelayProxy, timeout: float = 5.0) -> None:
    """Until some of the client's bytes are being held at the proxy."""
    deadline = time.monotonic() + timeout
    while proxy.held_chunks == 0:
        assert time.monotonic() < deadline, "the page sent nothing"
        time.sleep(0.02)


def test_the_mark_shows_at_the_tap_before_the_move_reaches_the_server(proxy, open_page):
    through = proxy()
    page = open_page("phone", server=through.url)
    expect(status(page)).to_have_text("Your turn")
    through.hold()  # the move stays at the proxy until the test has looked (or 1 s passed)
    try:
        cell(page, 4).tap()
        wait_held(through)
        expect(cell(page, 4)).to_have_attribute("data-pending", "X", timeout=1000)
        expect(cell(page, 4)).to_have_attribute("data-mark", "")  # not counted yet
        expect(cell(page, 4).locator(".mark-x")).to_be_visible()
    finally:
        through.release()
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(cell(page, 4)).not_to_have_attribute("data-pending", re.compile("."))
    expect(page.locator("[data-mark='O']")).to_have_count(1)  # the AI's reply, counted


def test_a_refused_move_is_rolled_back_with_its_message(proxy, open_page):
    through = proxy()
    host, _ = host_friend_game(open_page, "phone", server=through.url)
    guest = open_page("desktop", path=share_link(host), server=through.url)
    play({"host": host}, [(4, "host")])
    expect(status(guest)).to_have_text("Your turn")
    through.hold()
    try:
        # The friend's turn (the cell says so, and still sends): the server refuses it.
        cell(host, 0).tap(force=True)
        wait_held(through)
        expect(cell(host, 0)).to_have_attribute("data-pending", "X", timeout=1000)
    finally:
        through.release()
    expect(host.locator("#notice")).to_have_text("Wait for your turn")
    expect(cell(host, 0)).not_to_have_attribute("data-pending", re.compile("."))
    expect(cell(host, 0)).to_have_attribute("data-mark", "")
    expect(cell(host, 0).locator(".mark-x")).to_be_hidden()
    expect(status(host)).to_have_text("Your friend's turn")


# When each mark appears, from the tap on (ms), watched on the page itself.
WATCH_MARKS = """() => {
    window.marks = {};
    const start = performance.now();
    document.querySelector("[data-cell='4']").addEventListener("pointerdown", () => {
        window.marks.tap = performance.now() - start;
    });
    new MutationObserver(() => {
        for (const cell of document.querySelectorAll("#board [data-cell]")) {
            const mark = cell.dataset.mark;
            if (mark && !(mark in window.marks)) window.marks[mark] = performance.now() - start;
        }
    }).observe(document.getElementById("board"), {attributes: true, subtree: true});
}"""


def test_the_ai_reply_shows_as_soon_as_it_arrives_on_a_slow_network(proxy, open_page):
    through = proxy(up=0.2, down=0.2)
    # Motion allowed: the pause for effect is the full one here.
    page = open_page("phone", server=through.url, motion="no-preference")
    expect(status(page)).to_have_text("Your turn", timeout=20_000)
    page.evaluate(WATCH_MARKS)
    cell(page, 4).tap()
    expect(page.locator("#board [data-mark='O']")).to_have_count(1, timeout=10_000)
    marks = page.evaluate("() => window.marks")
    # The answer (the player's mark counted) took the network's 400 ms and the server's time;
    # the AI's reply, which came in the same answer, follows within 150 ms.
    assert marks["X"] - marks["tap"] >= 350, marks
    assert marks["O"] - marks["X"] <= 150, marks


def test_a_tap_while_connecting_is_sent_once_connected(proxy, open_page):
    through = proxy(up=0.3, down=0.3)
    page = open_page("phone", server=through.url)  # returns at the load event
    # The board and the controls are the page's own: there before the socket is up.
    expect(page.locator("#board")).to_be_visible()
    expect(page.locator("#new-game")).to_be_visible()
    assert page.locator("#app").get_attribute("data-ready") is None, "connected too soon"
    cell(page, 4).tap(force=True)  # no game yet: the cell is not enabled, the tap is kept
    assert page.locator("#app").get_attribute("data-ready") is None, "connected too soon"
    expect(cell(page, 4)).to_have_attribute("data-mark", "X", timeout=20_000)
    expect(page.locator("#board [data-mark='O']")).to_have_count(1)


def test_a_reload_draws_the_last_game_before_the_socket_is_up(proxy, open_page):
    through = proxy(up=0.3, down=0.3)
    page = open_page("phone", server=through.url)
    expect(status(page)).to_have_text("Your turn", timeout=20_000)
    cell(page, 0).tap()
    expect(page.locator("#board [data-mark='O']")).to_have_count(1, timeout=20_000)
    expect(status(page)).to_have_text("Your turn")
    page.reload()
    # At the load event, long before the socket's round trips: the game as it was, its status.
    assert page.locator("#app").get_attribute("data-ready") is None, "connected too soon"
    expect(cell(page, 0)).to_have_attribute("data-mark", "X", timeout=1000)
    assert page.locator("#status").text_content() == "Your turn"
    free = next(index for index in (8, 6, 2) if cell(page, index).get_attribute("data-mark") == "")
    cell(page, free).tap(force=True)  # tapped while connecting: pending now, played once joined
    expect(cell(page, free)).to_have_attribute("data-pending", "X", timeout=1000)
    expect(cell(page, free)).to_have_attribute("data-mark", "X", timeout=20_000)
