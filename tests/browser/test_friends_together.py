"""Friend games without surprises (issue 22), on phones and desktop: a join that cannot be
missed, the board and its status in view after every event, every change said on screen naming
the person, one tap to play the same friend again, the right words, watchers, dead links."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import device_options
from tests.browser.test_friend_page import (
    X_WINS,
    host_friend_game,
    play,
    rename,
    seat_together,
    status,
)
from tests.browser.test_newcomer import PHONES
from tests.browser.test_play import cell, choose, share_link

pytestmark = [pytest.mark.browser, pytest.mark.server]

SIZES = {"320x568": PHONES["320x568"], "360x640": PHONES["360x640"], "pixel-7": "Pixel 7"}

# navigator.vibrate, recorded: whether the page asked the phone to buzz.
RECORD_VIBRATE = """() => {
    window.buzzed = [];
    navigator.vibrate = (pattern) => { window.buzzed.push(pattern); return true; };
}"""

IN_VIEW = """() => {
    const app = document.getElementById("app");
    const board = document.getElementById(
        app.dataset.variant === "ultimate" ? "ultimate-wrap" : "board-wrap");
    const top = document.querySelector(".status-area").getBoundingClientRect().top;
    const bottom = board.getBoundingClientRect().bottom;
    return [Math.round(top), Math.round(bottom), innerHeight];
}"""


def assert_in_view(page: Page, when: str) -> None:
    """The status line and the whole board are on screen (waiting for the page to settle)."""
    page.wait_for_function(
        "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    top, bottom, height = page.evaluate(IN_VIEW)
    assert top >= 0 and bottom <= height, f"{when}: status at {top}, board to {bottom} of {height}"


@pytest.mark.parametrize("device", ["desktop", "pixel-7"])
def test_your_friend_joined_is_a_banner_a_title_and_a_buzz(open_page, device):
    host, link = host_friend_game(open_page, "desktop" if device == "desktop" else "Pixel 7")
    host.evaluate(RECORD_VIBRATE)
    rename(host, "X", "Ana")
    open_page("Pixel 7", path=link)
    banner = host.locator("#joined")
    expect(banner).to_be_visible()
    expect(banner).to_have_text("Your friend joined")
    expect(host).to_have_title(re.compile(r"^🔔 Your friend joined · Your turn"))
    assert host.evaluate("window.buzzed") == [200]
    expect(host.locator("#detail")).to_have_text("Your friend joined")
    expect(banner).to_be_hidden(timeout=15_000)  # a few seconds, then out of the way


@pytest.mark.parametrize("variant", ["classic", "ultimate"])
@pytest.mark.parametrize("size", list(SIZES))
def test_the_board_and_its_status_stay_in_view_after_each_event(open_page, size, variant):
    host = open_page(SIZES[size])
    expect(status(host)).to_have_text("Your turn")
    if variant == "ultimate":
        choose(host, "variant", "ultimate")
        expect(host.locator("#ultimate-wrap")).to_be_visible()
    choose(host, "mode", "friend")
    expect(status(host)).to_have_text("Waiting for your friend to join")
    link = share_link(host)
    host.locator("#share").scroll_into_view_if_needed()  # off to send the link
    guest = open_page(SIZES[size], path=link)
    expect(status(host)).to_have_text(re.compile("^Your turn"))
    assert_in_view(host, "the friend joined")
    assert_in_view(guest, "joined the game")

    # Both resign out of the way quickly: X moves, O resigns; then the rematch is offered.
    # The board on screen (the other one, hidden, keeps its last game).
    host.locator(".ucell[aria-disabled='false']:visible, .cell[aria-disabled='false']:visible"
                 ).first.click()
    expect(status(guest)).to_have_text(re.compile("^Your turn"))
    guest.locator(".ucell[aria-disabled='false']:visible, .cell[aria-disabled='false']:visible"
                  ).first.click()
    expect(status(guest)).to_have_text(re.compile("'s turn$"))
    guest.locator("#resign").click()
    guest.get_by_role("dialog").locator("[data-leave='go']").click()
    expect(status(host)).to_have_text("You win — your friend resigned")
    host.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # reading the review
    guest.locator("#rematch").click()
    expect(host.locator("#accept")).to_be_visible()
    assert_in_view(host, "a rematch offer")
    host.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    host.locator("#accept").click()
    # The friend's page joins the new game once it hears of it (on a busy machine that took
    # over 5 s): meanwhile the host waits for them, and is never told they disconnected.
    expect(status(host)).not_to_have_text(re.compile("disconnected"))
    expect(status(host)).to_have_text(re.compile("'s turn$|^Your turn"), timeout=30_000)
    expect(status(guest)).to_have_text(re.compile("'s turn$|^Your turn"), timeout=30_000)
    assert_in_view(host, "the rematch started (accepted)")
    assert_in_view(guest, "the rematch started (offered)")

    # A reconnect: the page comes back to the board.
    guest.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    guest.context.set_offline(True)
    expect(guest.locator("#connection")).to_be_visible()
    guest.context.set_offline(False)
    expect(guest.locator("#connection")).to_be_hidden()
    assert_in_view(guest, "a reconnect")


@pytest.mark.parametrize("size", ["320x568", "pixel-7"])
def test_a_practice_start_puts_the_board_in_view(open_page, size):
    page = open_page(SIZES[size], preferences={"level": "easy"})
    expect(status(page)).to_have_text("Your turn")
    choose(page, "mode", "local")
    expect(status(page)).to_have_text("X to move")
    for index in (0, 3, 1, 4, 2):  # O's left edge loses to the corner opening
        cell(page, index).click()
        expect(cell(page, index)).not_to_have_attribute("data-mark", "")
    try_again = page.locator("#review .mistake[data-side='O'] [data-review='try']")
    expect(try_again).to_be_visible()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # reading the review
    try_again.click()
    expect(page.locator("#detail")).to_have_text(re.compile(r"^Practice from move \d+"))
    assert_in_view(page, "a practice start")


@pytest.mark.parametrize("device", ["desktop", "pixel-7"])
def test_every_change_is_said_on_screen_naming_the_person(open_page, device):
    other = "Pixel 7" if device == "pixel-7" else "desktop"
    host, guest, _ = seat_together(open_page, "desktop", other)
    rename(host, "X", "Ana")
    rename(guest, "O", "Ben")
    detail = {"host": host.locator("#detail"), "guest": guest.locator("#detail")}

    # Left and came back, by name; resigned, by name.
    play({"host": host, "guest": guest}, [(0, "host"), (3, "guest")])
    # The service worker is fetched a moment after the board: never while the network is off.
    guest.evaluate("() => navigator.serviceWorker.ready.then(() => true)")
    guest.context.set_offline(True)
    expect(host.locator("#absence")).to_have_text(
        re.compile(r"^Ben left · you can claim the win in (0:[0-5]\d|1:00)$"))
    expect(status(host)).to_have_text("Your turn")
    guest.context.set_offline(False)
    expect(detail["host"]).to_have_text("Ben is back")
    guest.locator("#resign").click()
    guest.get_by_role("dialog").locator("[data-leave='go']").click()
    expect(detail["host"]).to_have_text("Ben resigned")
    expect(status(host)).to_have_text("You win — Ben resigned")

    # Offered, withdrawn, declined: each said on the other's screen, by name.
    host.locator("#rematch").click()
    expect(guest.locator("#offer-text")).to_have_text("Ana wants a rematch")
    expect(detail["guest"]).to_have_text("Ana wants a rematch")
    host.locator("#withdraw").click()
    expect(detail["guest"]).to_have_text("Ana took the offer back")
    host.locator("#rematch").click()
    expect(guest.locator("#decline")).to_be_visible()
    guest.locator("#decline").click()
    expect(detail["host"]).to_have_text("Ben declined the rematch")

    # An offer to a friend who left says so, and can be withdrawn.
    host.locator("#rematch").click()
    guest.close()
    expect(host.locator("#offer-text")).to_have_text("Rematch offered — Ben has left")
    host.locator("#withdraw").click()
    expect(host.locator("#offer-text")).to_have_text("")


@pytest.mark.parametrize("device", ["desktop", "pixel-7"])
def test_an_abort_names_who_and_leaves_one_tap_to_play_again(open_page, device):
    other = "Pixel 7" if device == "pixel-7" else "desktop"
    host, guest, _ = seat_together(open_page, "desktop", other)
    rename(host, "X", "Ana")
    rename(guest, "O", "Ben")
    cell(host, 4).click()
    expect(status(guest)).to_have_text("Your turn")
    guest.locator("#abort").click()
    guest.get_by_role("dialog").locator("[data-leave='go']").click()
    expect(host.locator("#detail")).to_have_text("Ben cancelled the game — nothing counts")
    expect(guest.locator("#detail")).to_have_text("You cancelled the game — nothing counts")
    expect(host.locator("#rematch")).to_be_enabled()  # PROTOCOL v3: a new game after an abort
    host.locator("#rematch").click()  # the same friend, link and score: one tap each
    guest.locator("#accept").click()
    expect(status(guest)).to_have_text("Your turn")
    expect(status(host)).to_have_text("Ben's turn")


def test_a_watcher_sees_names_no_settings_and_nothing_it_cannot_use(open_page):
    host, guest, link = seat_together(open_page, "desktop", "desktop")
    rename(host, "X", "Ana")
    rename(guest, "O", "Ben")
    watcher = open_page("Pixel 7", path=link)
    expect(status(watcher)).to_have_text("You are watching — Ana to move")
    expect(watcher.locator("#detail")).to_have_text("Watching Ana vs Ben")
    expect(watcher.locator("#settings")).to_be_hidden()
    for name in ("rematch", "resign", "abort", "claim"):
        expect(watcher.locator(f"#{name}")).to_be_hidden()
    expect(watcher.locator("#reactions")).to_be_hidden()
    play({"host": host, "guest": guest}, X_WINS)
    expect(status(watcher)).to_have_text("You are watching — Ana wins")
    expect(watcher.locator("#rematch")).to_be_hidden()


def test_changing_the_ai_level_in_the_first_moves_asks_and_is_no_loss(open_page):
    """Before: one move each, then another level, and the board emptied without a question."""
    page = open_page("Pixel 7")
    expect(status(page)).to_have_text("Your turn")
    cell(page, 4).tap()
    expect(page.locator(".cell[data-mark='O']")).to_have_count(1)
    choose(page, "level", "hard")
    dialog = page.get_by_role("dialog", name="Leave this game?")
    expect(dialog.locator("[data-leave='text']")).to_have_text(
        "The game is not counted: nobody wins.")
    dialog.locator("[data-leave='stay']").tap()  # stays: the game and its marks are still there
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    choose(page, "level", "hard")
    page.get_by_role("dialog").locator("[data-leave='go']").tap()
    expect(page.locator("#detail")).to_have_text("The game you left was not counted")
    expect(page.get_by_role("dialog")).to_be_hidden()
    expect(page.locator("#record tr[data-level='easy'] [data-stat='losses']")).to_have_text("0")


def test_a_question_answered_does_not_close_the_next_one(open_page):
    """The dialog's close event comes a frame after "stay": a choice made at once opens the next
    question before it, and that stale event answered the new question "stay" (a busy phone, or
    CI, met it: a second level change did nothing)."""
    page = open_page()
    expect(status(page)).to_have_text("Your turn")
    still_open = page.evaluate("""async () => {
        const { createLeave } = await import("/static/js/leave.js");
        const dialog = document.createElement("dialog");
        dialog.innerHTML = `<h2 data-leave="title"></h2><p data-leave="text"></p>
            <button data-leave="go"></button><button data-leave="stay"></button>`;
        document.body.append(dialog);
        const leave = createLeave(dialog);
        const words = { title: "Leave?", text: "", go: "Go" };
        const first = leave.ask(words);
        dialog.querySelector("[data-leave='stay']").click();
        const second = leave.ask(words);  // before the first close event is dispatched
        let answered = "open";
        second.then((answer) => { answered = answer; });
        await new Promise((done) => dialog.addEventListener("close", done, { once: true }));
        const result = [await first, answered, dialog.open];
        dialog.querySelector("[data-leave='go']").click();
        return [...result, await second];
    }""")
    assert still_open == [False, "open", True, True]


@pytest.mark.parametrize("device", ["desktop", "Pixel 7"])
def test_a_dead_game_link_offers_a_new_game(chromium, live_server, device):
    # Its own context: a 404 page is a console error by design, which open_page would fail.
    context = chromium.browser.new_context(
        base_url=live_server, reduced_motion="reduce", **device_options(chromium, device))
    try:
        page = context.new_page()
        answer = page.goto("/g/" + "Z" * 22)
        assert answer.status == 404
        expect(page.get_by_role("heading", level=1)).to_have_text("This game is over or gone")
        expect(page.locator("main")).to_contain_text(
            "This game link has expired, or it never existed.")
        page.get_by_role("link", name="Start a new game").click()
        expect(status(page)).to_have_text("Your turn")
    finally:
        context.close()


@pytest.mark.parametrize(("device", "shown"), [("desktop", True), ("Pixel 7", False)])
def test_key_hints_only_where_there_are_keys(open_page, device, shown):
    page = open_page(device)
    expect(status(page)).to_have_text("Your turn")
    hint = page.locator(".hint.for-classic")
    if shown:
        expect(hint).to_be_visible()
    else:
        expect(hint).to_be_hidden()


def test_a_bot_is_named_in_both_forms_of_names(open_page):
    # Version 3 views may name a bot {name, bot: true}; version 2 sends a plain string.
    page = open_page()
    expect(status(page)).to_have_text("Your turn")
    words = page.evaluate("""async () => {
        const { describe, isBot, nameAt, seatName } = await import("/static/js/words.js");
        const game = {
            mode: "friend", status: "playing", turn: "O", you: "X",
            seats: {X: "human", O: "human"}, online: {X: true, O: true},
            names: {X: "Ana", O: {name: "minimax", bot: true}},
        };
        return [nameAt(game, "X"), nameAt(game, "O"), isBot(game, "X"), isBot(game, "O"),
                seatName(game, "O", "X"), describe(game, "X")];
    }""")
    assert words == ["Ana", "minimax", False, True, "minimax", "minimax's turn"]


def test_play_as_says_the_side_played_after_a_rematch_swaps_sides(open_page):
    page = open_page("Pixel 7")
    expect(status(page)).to_have_text("Your turn")
    expect(page.locator("#pick-you .pick-text")).to_have_text("X")
    page.locator("#abort").click()  # no move yet: called off, nothing counts
    page.get_by_role("dialog").locator("[data-leave='go']").click()
    expect(page.locator("#rematch")).to_be_enabled()
    page.locator("#rematch").click()
    expect(page.locator("#pick-you .pick-text")).to_have_text("O")  # the AI opens as X now
    expect(status(page)).to_have_text(re.compile("^Your turn"))
