"""Ultimate you can tap (issue 42): on a phone, the board the player must play in is shown
enlarged, its squares at least 44 px; a tap outside it shows the whole board, a tap on it
enlarges it again; a tap inside plays. At 320, 360 and 412 px wide."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_ultimate import playable, square, start_ultimate, status

pytestmark = [pytest.mark.browser, pytest.mark.server]

WIDTHS = [(320, 568), (360, 640), (412, 915)]
ZOOMED = re.compile(r"^[0-8]$")


def phone_of(width: int, height: int) -> dict:
    return {"viewport": {"width": width, "height": height}, "device_scale_factor": 2,
            "is_mobile": True, "has_touch": True}


def whole_board(page: Page) -> None:
    """Tap the frame beside the enlarged board (on a neighbour's square): the whole board."""
    frame = page.locator(".uboard-frame").bounding_box()
    target = page.locator(".usmall.is-target").bounding_box()
    margins = {"left": target["x"] - frame["x"],
               "right": frame["x"] + frame["width"] - target["x"] - target["width"],
               "top": target["y"] - frame["y"],
               "bottom": frame["y"] + frame["height"] - target["y"] - target["height"]}
    side = max(margins, key=margins.get)
    middle_x, middle_y = target["x"] + target["width"] / 2, target["y"] + target["height"] / 2
    x = {"left": frame["x"] + margins["left"] / 2,
         "right": frame["x"] + frame["width"] - margins["right"] / 2}.get(side, middle_x)
    y = {"top": frame["y"] + margins["top"] / 2,
         "bottom": frame["y"] + frame["height"] - margins["bottom"] / 2}.get(side, middle_y)
    page.touchscreen.tap(x, y)
    expect(page.locator("#ultimate-wrap")).not_to_have_attribute("data-zoom", ZOOMED)


@pytest.mark.parametrize("size", WIDTHS, ids=[f"{w}x{h}" for w, h in WIDTHS])
def test_the_board_to_play_in_is_enlarged_on_a_phone(open_page, size):
    page = open_page(phone_of(*size))
    start_ultimate(page)
    wrap = page.locator("#ultimate-wrap")
    expect(status(page)).to_have_text("Your turn · any open board")
    # Any board open: the whole board, nothing enlarged.
    expect(wrap).not_to_have_attribute("data-zoom", ZOOMED)
    page.locator("[data-ucell='40']").tap()
    expect(page.locator(".ucell[data-mark='O']")).to_have_count(1)
    expect(status(page)).to_have_text(re.compile(r"^Your turn · "))
    # After one move no small board is closed: the AI's reply sends us to exactly one.
    expect(page.locator(".usmall.is-target")).to_have_count(1)
    target = int(page.locator(".usmall.is-target").get_attribute("data-uboard"))
    expect(wrap).to_have_attribute("data-zoom", str(target))
    cells = page.locator(f".usmall[data-uboard='{target}'] .ucell")
    frame = page.locator(".uboard-frame").bounding_box()
    for index in range(9):
        box = cells.nth(index).bounding_box()
        assert box["width"] >= 44 and box["height"] >= 44, (size, box)
        # Inside the frame and the screen: nothing to scroll to.
        right = frame["x"] + frame["width"]
        assert frame["x"] - 1 <= box["x"] and box["x"] + box["width"] <= right + 1
        assert box["x"] + box["width"] <= size[0]
    width, inner = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert width <= inner

    # The whole board is one tap away, and the board to play in one tap back.
    whole_board(page)
    assert cells.nth(0).bounding_box()["width"] < 44 or size[0] > 400
    cells.nth(4).tap()
    expect(wrap).to_have_attribute("data-zoom", str(target))
    assert page.locator(".ucell[data-mark='X']").count() == 1  # that tap played nothing

    # A tap on the enlarged board plays.
    free = page.locator(f".usmall[data-uboard='{target}'] .ucell[aria-disabled='false']").first
    cell = int(free.get_attribute("data-ucell"))
    free.tap()
    expect(square(page, cell)).to_have_attribute("data-mark", "X")
    expect(page.locator(".ucell[data-mark='O']")).to_have_count(2)
    expect(playable(page).first).to_be_visible()
