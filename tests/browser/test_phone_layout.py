"""A 320 x 568 phone (issue 42): every tap target on every page at least 44 px (links inside
running text aside), Evaluations and Hint on the first screen, the Evaluations switch in
Ultimate leaves the board where it was, and a 22-letter bot name keeps the ladder on screen."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from playwright.sync_api import expect

from tests.browser.test_play import share_link
from tests.browser.test_ultimate import start_ultimate, status
from tests.support.servers import ROOT, Server

pytestmark = [pytest.mark.browser, pytest.mark.server]

SMALL = {"viewport": {"width": 320, "height": 568}, "device_scale_factor": 2,
         "is_mobile": True, "has_touch": True}
PAGES = ["/", "/bots", "/bots/guide", "/bots/new", "/r/40812", "/r/u/40.36.4"]

# Each visible control's box (a checkbox's: its label's); links inside running text (a
# sentence's words in a paragraph) are exempt, as WCAG 2.5.8 exempts them.
SMALL_TARGETS = """() => [...document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, summary, textarea')]
  .filter((e) => !(e.tagName === 'A' && getComputedStyle(e).display === 'inline'
                   && e.parentElement.matches('p, td p')))
  .map((e) => (e.matches('input[type=checkbox], input[type=radio]') && e.closest('label'))
              || e)
  .filter((e) => { const r = e.getBoundingClientRect();
                   return r.width > 0 && r.height > 0
                          && getComputedStyle(e).visibility !== 'hidden'; })
  .map((e) => { const r = e.getBoundingClientRect();
                return [e.tagName, e.id || (e.textContent || '').trim().slice(0, 30),
                        Math.round(r.width), Math.round(r.height)]; })
  .filter(([, , width, height]) => width < 44 || height < 44)"""


@pytest.mark.parametrize("path", PAGES)
def test_every_tap_target_is_44_px_at_320(open_page, path):
    page = open_page(SMALL, path=path)
    if path == "/":
        expect(status(page)).to_have_text("Your turn")
    expect(page.locator("h1").first).to_be_visible()
    assert page.evaluate(SMALL_TARGETS) == []
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")


def test_evaluations_and_hint_are_on_the_first_screen_at_320_by_568(open_page):
    page = open_page(SMALL)
    expect(status(page)).to_have_text("Your turn")
    assert page.evaluate("scrollY") == 0
    for control in ("#evaluations-switch", "#hint-button"):
        box = page.locator(control).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= 568, (control, box)
    board = page.locator("#board [data-cell='4']").bounding_box() or page.locator(
        "#board button").first.bounding_box()
    assert board["width"] >= 44 and board["height"] >= 44


def test_the_evaluations_switch_in_ultimate_leaves_the_board_in_place(open_page):
    page = open_page(SMALL)
    start_ultimate(page)
    page.locator("[data-ucell='40']").tap()
    expect(page.locator(".ucell[data-mark='O']")).to_have_count(1)
    # The player scrolls down to the switch, as a thumb would, and turns it on.
    page.evaluate("document.getElementById('evaluations-switch').scrollIntoView({block: 'end'})")
    before = (page.evaluate("scrollY"), page.locator(".usmall.is-target").bounding_box())
    box = page.locator("#evaluations-switch").bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    expect(page.locator("#evaluations")).to_be_checked()
    expect(page.locator(".usmall.is-target .ucell[data-estimate]").first).to_be_attached(
        timeout=15_000)
    after = (page.evaluate("scrollY"), page.locator(".usmall.is-target").bounding_box())
    assert after == before
    target = after[1]
    assert target["y"] >= 0 and target["y"] + target["height"] <= 568  # all of it in sight


@pytest.fixture
def long_bot_server(tmp_path):
    """A server whose ladder holds a bot with a 22-letter name."""
    store = f"sqlite:///{tmp_path / 'ttt.sqlite3'}"
    subprocess.run([sys.executable, "-m", "ttt", "bot", "create", "abcdefghijklmnopqrstuv",
                    "--store", store], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                   capture_output=True, check=True)
    server = Server({"TTT_STORE": store, "TTT_SECRET_KEY": "long-bot"},
                    log=tmp_path / "server.log").start()
    yield server.url
    server.stop()


def test_a_22_letter_bot_name_keeps_the_ladder_within_320(open_page, long_bot_server):
    page = open_page(SMALL, path="/bots", server=long_bot_server)
    expect(page.locator(".ladder tbody tr").first).to_contain_text("abcdefghijklmnopqrstuv")
    ladder = page.locator(".ladder").bounding_box()
    assert ladder["x"] >= 0 and ladder["x"] + ladder["width"] <= 320, ladder
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    assert page.evaluate(SMALL_TARGETS) == []


def test_every_tap_target_is_44_px_at_320_on_a_link_and_a_bot(open_page, long_bot_server):
    """The pages PAGES leaves out: a friend's link (the joiner's page, reactions and all) and
    a bot's own page."""
    host = open_page("desktop", server=long_bot_server)
    expect(status(host)).to_have_text("Your turn")
    host.locator("#settings select[name='mode']").select_option("friend")
    link = share_link(host)
    guest = open_page(SMALL, path=link, server=long_bot_server)
    expect(status(guest)).to_have_text("Your friend's turn")
    for page in (guest, open_page(SMALL, path="/bot/abcdefghijklmnopqrstuv",
                                  server=long_bot_server)):
        expect(page.locator("h1, .brand").first).to_be_visible()
        assert page.evaluate(SMALL_TARGETS) == [], page.url
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), page.url
