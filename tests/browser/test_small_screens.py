"""Every state said once and then cleared, on small phones (issue 30): the board, the status
line and the game's main action on screen together in every state at 320x568 and 360x640;
names never cut to fewer than six letters; the decliner's page leaves the offer behind;
a watcher sees the players' names and no record of its own; a finger sees no key hints."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_friend_page import rename, status
from tests.browser.test_newcomer import PHONES
from tests.browser.test_play import cell, choose, share_link

pytestmark = [pytest.mark.browser, pytest.mark.server]

# Where the status line, the board and the main action are (the visible button of the actions
# slot, else New game), after the page's own scrolling; and the seats' names as shown.
LAYOUT = """() => {
    const box = (element) => element.getBoundingClientRect();
    const variant = document.getElementById("app").dataset.variant;
    const board = document.getElementById(variant === "ultimate" ? "ultimate-wrap" : "board-wrap");
    const slot = [...document.querySelectorAll("#actions .slot .btn")]
        .find((button) => !button.hidden && button.offsetParent !== null);
    const action = slot ?? document.getElementById("new-game");
    // How many letters of each name show: the widest prefix (with its "…") that fits.
    const shown = (element) => {
        const text = element.textContent;
        if (element.scrollWidth <= element.clientWidth) return text.length;
        const probe = document.createElement("span");
        const style = getComputedStyle(element);
        probe.style.font = style.font;
        probe.style.letterSpacing = style.letterSpacing;
        probe.style.position = "absolute";
        probe.style.whiteSpace = "nowrap";
        document.body.append(probe);
        let letters = 0;
        for (let n = 1; n <= text.length; n += 1) {
            probe.textContent = `${text.slice(0, n)}…`;
            if (probe.getBoundingClientRect().width <= element.clientWidth + 0.5) letters = n;
        }
        probe.remove();
        return letters;
    };
    const names = [...document.querySelectorAll(".player-name")]
        .map((element) => [element.textContent, shown(element), element.clientWidth]);
    return {height: window.innerHeight, status: box(document.getElementById("status")).top,
            board: box(board).bottom, action: box(action).bottom, label: action.textContent.trim(),
            names};
}"""


def check(page: Page, when: str) -> None:
    """The status, the board and the main action on screen; every name six letters or whole."""
    page.wait_for_function(
        "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    seen = page.evaluate(LAYOUT)
    height = seen["height"]
    assert seen["status"] >= 0, f"{when}: the status line is above the screen: {seen}"
    assert seen["board"] <= height, f"{when}: the board goes below the screen: {seen}"
    assert seen["action"] <= height, f"{when}: {seen['label']!r} is below the screen: {seen}"
    for name, letters, width in seen["names"]:
        assert letters >= min(6, len(name)), f"{when}: {name!r} cut to {letters} ({width} px)"


@pytest.mark.parametrize("size", list(PHONES), ids=list(PHONES))
def test_every_state_fits_a_small_phone_and_is_said_once(open_page, size):
    phone = PHONES[size]
    ai = open_page(phone)
    expect(status(ai)).to_have_text("Your turn")
    check(ai, "an AI game, first turn")
    cell(ai, 4).tap()
    expect(ai.locator("#board [data-mark='O']")).to_have_count(1)
    check(ai, "an AI game, after a move")
    # A finger touched the page: no keyboard hints.
    expect(ai.locator(".hint.for-classic")).to_be_hidden()

    host = open_page(phone)
    expect(status(host)).to_have_text("Your turn")
    choose(host, "mode", "friend")
    choose(host, "clock", "30")
    expect(host.locator("#player-x .player-clock")).to_have_text("0:30")
    rename(host, "X", "Anastasia")
    check(host, "a friend game, waiting for the friend")
    link = share_link(host)
    guest = open_page(phone, path=link)
    rename(guest, "O", "Benjamin")
    expect(status(host)).to_have_text("Your turn")
    check(host, "a friend game, your turn")
    check(guest, "a friend game, their turn")

    watcher = open_page(phone, path=link)
    expect(status(watcher)).to_have_text(re.compile("^You are watching"))
    expect(watcher.locator("#player-x .player-name")).to_have_text("Anastasia")
    expect(watcher.locator("#player-o .player-name")).to_have_text("Benjamin")
    expect(watcher.locator(".record")).to_be_hidden()  # no record of its own
    check(watcher, "watching")

    cell(host, 4).tap()
    expect(status(guest)).to_have_text("Your turn")
    cell(guest, 0).tap()
    expect(status(host)).to_have_text("Your turn")
    guest_context = guest.context
    guest.close()
    expect(host.locator("#absence")).to_have_text(re.compile("^Benjamin left"))
    check(host, "the friend away on your turn")
    guest = guest_context.new_page()
    guest.goto(link)
    expect(host.locator("#absence")).to_have_text("")
    for page, index in [(host, 1), (guest, 3), (host, 7)]:
        expect(status(page)).to_have_text("Your turn")
        cell(page, index).tap()
    expect(status(host)).to_have_text("You win!")
    check(host, "won")
    check(guest, "lost")
    check(watcher, "watching a finished game")

    host.locator("#rematch").tap()
    expect(guest.locator("#accept")).to_be_visible()
    check(guest, "a rematch offered")
    guest.locator("#decline").tap()
    # The decliner's page leaves the offer behind: no "wants a rematch" anywhere on it.
    expect(guest.locator("#decline")).to_be_hidden()
    expect(guest.locator("#offer-text")).to_have_text("")
    expect(guest.locator("#detail")).not_to_have_text(re.compile("wants a rematch"))
    expect(host.locator("#detail")).to_have_text("Benjamin declined the rematch")
    check(guest, "a rematch declined, the decliner")
    check(host, "a rematch declined, the offerer")
