"""The app opens offline (issue 30): a service worker keeps the page shell and the static
files; offline, a reload opens the site's own page with the last game, read only, and an
offline notice; back online, the game re-joins without a tap. The first load stays small and
the worker's precache comes after the board is usable."""

from __future__ import annotations

import re

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.test_friend_page import status
from tests.browser.test_play import cell

pytestmark = [pytest.mark.browser, pytest.mark.server]

CONTROLLED = "() => navigator.serviceWorker.controller !== null"


def test_offline_the_app_opens_to_its_own_page_and_rejoins_by_itself(open_page):
    page = open_page("phone")
    expect(status(page)).to_have_text("Your turn")
    cell(page, 4).tap()
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(page.locator("#board [data-mark='O']")).to_have_count(1)
    expect(status(page)).to_have_text("Your turn")
    page.wait_for_function(CONTROLLED, timeout=20_000)  # the worker took over the page
    game_id = page.locator("#app").get_attribute("data-game-id") or ""

    page.context.set_offline(True)
    page.reload()
    # The site's page, not the browser's error: the last game, read only, and the notice.
    expect(page.locator("#connection")).to_be_visible(timeout=15_000)
    expect(page.locator("#connection-text")).to_have_text(re.compile(r"^You are offline"))
    expect(page.locator("#app")).to_have_attribute("data-restored", "true")
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(page.locator("#board [data-mark='O']")).to_have_count(1)
    expect(page.locator("#board [aria-disabled='false']")).to_have_count(0)  # read only

    page.context.set_offline(False)  # back online: no tap, no reload
    expect(page.locator("#connection")).to_be_hidden(timeout=20_000)
    expect(page.locator("#app")).not_to_have_attribute("data-restored", "true")
    expect(status(page)).to_have_text("Your turn")
    expect(page.locator("#board [aria-disabled='false']")).to_have_count(7)  # playable again
    assert page.locator("#app").get_attribute("data-game-id") == game_id


def test_the_first_load_is_small_and_the_precache_comes_after_the_board(open_page, live_server):
    page = open_page("phone")
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    expect(page.locator("#app")).to_have_attribute("data-ready", re.compile("."))
    loaded = page.evaluate("""() => {
        const ready = performance.getEntriesByName("ttt:board-ready")[0].startTime;
        const entries = [...performance.getEntriesByType("navigation"),
                         ...performance.getEntriesByType("resource")]
            .filter((entry) => entry.startTime <= ready);
        return entries.reduce((sum, entry) => sum + entry.transferSize, 0);
    }""")
    assert 0 < loaded < 100_000, f"{loaded} bytes transferred before the board was usable"
    page.wait_for_function(CONTROLLED, timeout=20_000)
    sw = page.evaluate("""() => performance.getEntriesByType("resource")
        .filter((entry) => entry.name.endsWith("/sw.js")).map((entry) => entry.startTime)""")
    ready = page.evaluate('() => performance.getEntriesByName("ttt:board-ready")[0].startTime')
    assert all(start > ready for start in sw), (sw, ready)
    # What the worker precaches, as it would come over the wire (gzip), under 150 kB.
    source = requests.get(f"{live_server}/sw.js", timeout=10).text
    paths = re.search(r"const PRECACHE = (\[.*?\]);", source).group(1)
    total = 0
    for path in re.findall(r'"([^"]+)"', paths):
        answer = requests.get(f"{live_server}{path}", headers={"Accept-Encoding": "gzip"},
                              timeout=10, stream=True)
        assert answer.status_code == 200, path
        total += len(answer.raw.read())
    assert total < 150_000, f"precache of {total} bytes"
    assert not any("/socket.io/" in path or "/api/" in path for path in paths)
