"""Board-ready on a slow network (issue 42): the time from the navigation to the server's
acceptance of a tap made the moment the board allows one, through tests/support/delay_proxy.py at
200 ms each way, on a first visit and on a repeat visit (the service worker in charge).

The page measures itself (an init script taps the first playable cell and notes when its mark
is counted), so the test's own polling adds nothing. The numbers go to the test's output and
to test-artifacts/board-ready.json; the bounds asserted are loose (the machine is shared), the
targets (repeat <= 1.6 s, first <= 2.4 s) are checked with TTT_BOARD_READY_STRICT=1.
"""

from __future__ import annotations

import json
import os
import re

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS, phone
from tests.browser.test_friend_page import host_friend_game
from tests.browser.test_offline import CONTROLLED
from tests.browser.test_slow_network import proxy  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.server]

DELAY = 0.2  # seconds each way: a 400 ms round trip

# Taps the first playable cell as soon as there is one; notes when its mark is counted.
MEASURE = """
window.__ready = {};
document.addEventListener("DOMContentLoaded", () => {
  const board = document.getElementById("board");
  if (!board) return;
  const look = () => {
    const done = window.__ready;
    if (!done.cell) {
      const cell = board.querySelector("[aria-disabled='false']");
      if (!cell) return;
      done.cell = cell;
      done.tapped = performance.now();
      cell.click();
    }
    if (!done.accepted && done.cell.dataset.mark && !done.cell.dataset.pending) {
      done.accepted = performance.now();
    }
  };
  new MutationObserver(look).observe(board, { subtree: true, attributes: true });
  look();
});
"""

ACCEPTED = "() => window.__ready && window.__ready.accepted > 0"
TIMES = "() => ({ tapped: window.__ready.tapped, accepted: window.__ready.accepted })"


def visit(page, url: str) -> dict:
    page.goto(url)
    page.wait_for_function(ACCEPTED, timeout=30_000)
    return page.evaluate(TIMES)


def test_board_ready_on_a_first_and_a_repeat_visit(chromium, proxy, capsys):  # noqa: F811
    through = proxy(up=DELAY, down=DELAY)
    # A served site is warm: its templates compiled before this visitor came.
    requests.get(f"{through.url}/", timeout=10).raise_for_status()
    context = chromium.browser.new_context(reduced_motion="reduce", **phone(chromium))
    context.add_init_script(MEASURE)
    try:
        page = context.new_page()
        first = visit(page, f"{through.url}/")
        # The worker installs after the board is usable, then takes over: a repeat visit is
        # one it serves.
        page.wait_for_function(CONTROLLED, timeout=30_000)
        page.wait_for_function("""async () => {
            const names = await caches.keys();
            for (const name of names) {
                if ((await (await caches.open(name)).keys()).length > 10) return true;
            }
            return false;
        }""", timeout=30_000)
        repeat = visit(page, f"{through.url}/")
    finally:
        context.close()
    numbers = {"first_ms": round(first["accepted"]), "repeat_ms": round(repeat["accepted"]),
               "first_tap_ms": round(first["tapped"]), "repeat_tap_ms": round(repeat["tapped"]),
               "delay_each_way_ms": round(DELAY * 1000)}
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "board-ready.json").write_text(json.dumps(numbers, indent=1))
    with capsys.disabled():
        print(f"\nboard-ready through {DELAY * 1000:.0f} ms each way: {numbers}")
    assert repeat["accepted"] < first["accepted"]
    if os.environ.get("TTT_BOARD_READY_STRICT"):
        assert repeat["accepted"] <= 1600 and first["accepted"] <= 2400, numbers


# The largest text painted, as Chrome reports it (each element's text counts once: at its first
# paint), beside the first contentful paint and the moment the script first drew a game.
PAINTS = """() => new Promise((resolve) => {
  new PerformanceObserver((list) => {
    const largest = list.getEntries().at(-1);
    const ready = performance.getEntriesByName("ttt:board-ready")[0];
    const first = performance.getEntriesByName("first-contentful-paint")[0];
    resolve({ lcp: largest.startTime, ready: ready.startTime, fcp: first.startTime,
              id: largest.element?.id ?? null });
  }).observe({ type: "largest-contentful-paint", buffered: true });
})"""


@pytest.mark.parametrize("where", ["home", "link"])
def test_the_largest_paint_is_the_first_paint(open_page, where):
    """The status and its detail come in the HTML: no text the script draws later (the
    game's status, "You play X against the easy AI") is the page's LCP (Lighthouse's)."""
    path = host_friend_game(open_page)[1] if where == "link" else "/"
    page = open_page("phone", path=path)
    expect(page.locator("#app")).to_have_attribute("data-ready", re.compile("."))
    paints = page.evaluate(PAINTS)
    # The first paint is the largest: on a fast load the script may already have run when
    # it comes (ready before it), which is fine; text the script draws after the connect (a
    # round trip at least) is always a later frame.
    # Under load the header may paint a frame before the status: the HTML's text still comes
    # before the script draws the game.
    assert paints["lcp"] <= paints["fcp"] + 1 or paints["lcp"] < paints["ready"], paints
