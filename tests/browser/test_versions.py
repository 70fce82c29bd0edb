"""Versioned views in a real browser: the page keeps the newest view (by `rev`) of the game on
screen, whatever order answers and pushes arrive in, and re-syncs after a refusal."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_friend_page import play, seat_together, status
from tests.browser.test_play import cell

pytestmark = [pytest.mark.browser, pytest.mark.server]

# Holds the answers (Socket.IO acks, "43<id>[...]") to the page's own `move` events while
# window.holdMoves is true, until window.releaseMoves(); everything else passes at once.
# window.pushes counts the `game` pushes received, window.joins the joins sent.
HOLD_MOVE_ANSWERS = """(() => {
    const Native = window.WebSocket;
    const moveIds = new Set();
    window.held = [];
    window.pushes = 0;
    window.joins = 0;
    window.holdMoves = false;
    window.releaseMoves = () => {
        const held = window.held;
        window.held = [];
        held.forEach((answer) => answer());
    };
    class Held extends Native {
        send(data) {
            const sent = /^42(\\d+)\\["move"/.exec(String(data));
            if (sent) moveIds.add(sent[1]);
            if (/^42\\d*\\["join"/.test(String(data))) window.joins += 1;
            super.send(data);
        }
        set onmessage(handler) {
            super.onmessage = (event) => {
                const text = String(event.data);
                if (text.startsWith('42["game"')) window.pushes += 1;
                const ack = /^43(\\d+)\\[/.exec(text);
                if (ack && moveIds.has(ack[1]) && window.holdMoves) {
                    window.held.push(() => handler.call(this, event));
                } else {
                    handler.call(this, event);
                }
            };
        }
        get onmessage() { return super.onmessage; }
    }
    window.WebSocket = Held;
})();"""


def holding(page: Page) -> None:
    """Reload `page` with its move answers under the test's control."""
    page.context.add_init_script(HOLD_MOVE_ANSWERS)
    page.reload()
    expect(page.locator("#app")).to_have_attribute("data-ready", "playable")


def test_a_resign_that_lands_before_the_older_move_answer_stays_on_screen(open_page):
    host, guest, _ = seat_together(open_page, "desktop", "desktop")
    play({"host": host, "guest": guest}, [(0, "host"), (3, "guest")])  # both moved: no abort
    holding(host)
    expect(status(host)).to_have_text("Your turn")
    host.evaluate("window.holdMoves = true")
    cell(host, 4).click()
    host.wait_for_function("window.held.length === 1")  # the move is stored, its answer held
    pushes = host.evaluate("window.pushes")

    # The friend resigns between the move's write and its answer: same move count, newer rev.
    expect(status(guest)).to_have_text("Your turn")
    guest.locator("#resign").click()
    guest.get_by_role("dialog", name="Resign this game?").locator("[data-leave='go']").click()
    expect(status(guest)).to_have_text("You resigned")
    host.wait_for_function(f"window.pushes > {pushes}")
    expect(status(host)).to_have_text("You win — your friend resigned")

    host.evaluate("window.holdMoves = false; window.releaseMoves()")
    # The answer is handled at once (a message, then promise jobs): two frames later it is.
    host.evaluate("new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    # The older answer (the game still being played, the friend to move) is dropped.
    expect(status(host)).to_have_text("You win — your friend resigned")
    assert host.evaluate("window.held.length") == 0
    expect(host.locator("#rematch")).to_be_enabled()


def test_a_refused_move_is_followed_by_a_join_that_shows_the_game_as_it_is(open_page):
    host, guest, _ = seat_together(open_page, "desktop", "desktop")
    holding(host)
    cell(host, 4).click()
    expect(status(guest)).to_have_text("Your turn")
    expect(status(host)).to_have_text("Your friend's turn")
    joins = host.evaluate("window.joins")
    # A press out of turn: the server refuses it, and the page asks for the game again.
    cell(host, 0).click(force=True)
    expect(host.locator("#notice")).to_have_text("Wait for your turn")
    host.wait_for_function(f"window.joins > {joins}")
    expect(status(host)).to_have_text("Your friend's turn")
