"""The page in a real browser: whole games by click, tap and key, reloads, refusals, layout."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.browser, pytest.mark.server]

OVER = {"You win!", "The AI wins", "Draw"}
PLAYER_STATUS = re.compile(r"^(Your turn|You win!|The AI wins|Draw)$")


def board(page: Page) -> str:
    """The marks on screen as a 9-character string, row by row: 'X...O....'."""
    marks = page.eval_on_selector_all("[data-cell]", "cells => cells.map(c => c.dataset.mark)")
    return "".join(mark or "." for mark in marks)


def record(page: Page, level: str) -> dict[str, int]:
    row = page.locator(f"#record tr[data-level='{level}']")
    return {stat: int(row.locator(f"[data-stat='{stat}']").text_content())
            for stat in ("wins", "draws", "losses")}


def cell(page: Page, index: int):
    return page.locator(f"[data-cell='{index}']")


def record_statuses(page: Page) -> None:
    """Keep every text the status line shows in window.statusHistory (for brief states)."""
    page.evaluate("""() => {
        const status = document.getElementById("status");
        window.statusHistory = [status.textContent];
        new MutationObserver(() => window.statusHistory.push(status.textContent))
            .observe(status, {childList: true, characterData: true, subtree: true});
    }""")


# A returning player who plays the unbeatable AI: what the tests that expect it to never lose use.
PERFECT = {"level": "perfect"}


def choose(page: Page, name: str, value: str) -> None:
    """Pick a setting in the bar above the board (which starts a new game with it, once a game in
    progress is left)."""
    page.locator(f"#settings select[name='{name}']").select_option(value)


def share_link(page: Page) -> str:
    """The link of the friend game on screen, once the share panel (loaded when first needed)
    shows it."""
    field = page.locator("#share-link")
    expect(field).to_have_value(re.compile(r"/g/[\w-]{16,}$"))
    return field.input_value()


def leave_anyway(page: Page, text: str | re.Pattern) -> None:
    """The page asks before a game in progress is left: check what it says, and go."""
    dialog = page.get_by_role("dialog", name="Leave this game?")
    expect(dialog).to_be_visible()
    expect(dialog.locator("[data-leave='text']")).to_have_text(text)
    dialog.locator("[data-leave='go']").click()
    expect(dialog).to_be_hidden()


def play_out(page: Page, tap: bool = False) -> str:
    """Play the first empty cell on every turn until the game ends; the final status."""
    status = page.locator("#status")
    for _ in range(5):
        expect(status).to_have_text(PLAYER_STATUS)
        if status.text_content() in OVER:
            break
        target = cell(page, board(page).index("."))
        if tap:
            target.tap()
        else:
            target.click()
        # Our mark comes first (with "AI is thinking…"), the reply a beat later.
        expect(target).not_to_have_attribute("data-mark", "")
        expect(status).not_to_have_text("AI is thinking…")
    expect(status).to_have_text(PLAYER_STATUS)
    return status.text_content()


def test_whole_game_by_clicks_as_o_never_lets_the_human_win(open_page):
    page = open_page(preferences=PERFECT)
    expect(page.locator("#status")).to_have_text("Your turn")
    choose(page, "you", "O")
    expect(page.locator("#player-o .player-name")).to_have_text("You")
    expect(page.locator("#status")).to_have_text("Your turn")
    assert board(page).count("X") == 1 and board(page).count("O") == 0  # the AI opened
    record_statuses(page)

    result = play_out(page)

    assert result in {"Draw", "The AI wins"}
    assert "AI is thinking…" in page.evaluate("() => window.statusHistory")
    assert "." not in board(page) or result == "The AI wins"
    if result == "The AI wins":
        assert page.locator(".cell.is-win").count() == 3
        assert page.locator("#strike").get_attribute("data-line") != ""
    expect(page.locator("#rematch")).to_be_enabled()


def test_whole_game_on_a_phone_by_taps(open_page):
    page = open_page("phone", color_scheme="dark", preferences=PERFECT)
    expect(page.locator("#status")).to_have_text("Your turn")
    box = cell(page, 0).bounding_box()
    assert box["width"] >= 80 and box["height"] >= 80

    result = play_out(page, tap=True)

    assert result in {"Draw", "The AI wins"}
    assert board(page).count("X") >= 3
    expect(page.locator("#rematch")).to_be_enabled()
    page.locator("#rematch").tap()  # sides swap: the AI opens as X, and the page says so
    expect(page.locator("#player-o .player-name")).to_have_text("You")
    expect(page.locator("#status")).to_have_text("Your turn")
    expect(page.locator("#detail")).to_have_text("You play O this time")
    assert board(page).count("X") == 1


def test_reload_mid_game_keeps_the_board(open_page):
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    cell(page, 4).click()
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(page.locator("#status")).to_have_text("Your turn")
    free = board(page).index(".")
    cell(page, free).click()
    expect(cell(page, free)).to_have_attribute("data-mark", "X")
    expect(page.locator("#status")).to_have_text(PLAYER_STATUS)
    before = board(page)
    assert before.count("X") == 2

    page.reload()

    expect(page.locator("#status")).not_to_have_text("Connecting…")
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    assert board(page) == before


def test_click_on_a_taken_square_says_so_and_changes_nothing(open_page):
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    cell(page, 0).click()
    expect(cell(page, 0)).to_have_attribute("data-mark", "X")
    expect(page.locator("#status")).to_have_text("Your turn")
    before = board(page)
    taken = next(i for i, mark in enumerate(before) if mark == "O")
    expect(cell(page, taken)).to_have_attribute("aria-disabled", "true")

    cell(page, taken).click(force=True)  # aria-disabled, yet it still asks the server

    expect(page.locator("#notice")).to_have_text("That square is taken")
    expect(page.locator("#status")).to_have_text("Your turn")
    assert board(page) == before
    expect(cell(page, taken)).to_have_attribute("aria-label", re.compile(r", O$"))


def test_record_counts_the_finished_game(open_page):
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    choose(page, "level", "hard")
    expect(page.locator("#player-o .player-name")).to_have_text("AI · Hard")
    expect(page.locator("#record tr[data-level='hard']")).to_have_class(re.compile("is-current"))
    assert record(page, "hard") == {"wins": 0, "draws": 0, "losses": 0}

    result = play_out(page)

    expected = {"You win!": "wins", "Draw": "draws", "The AI wins": "losses"}[result]
    row = page.locator(f"#record tr[data-level='hard'] [data-stat='{expected}']")
    expect(row).to_have_text("1")
    assert sum(record(page, "hard").values()) == 1
    assert sum(record(page, "perfect").values()) == 0


def test_keyboard_play_with_digits_arrows_and_enter(open_page):
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    choose(page, "mode", "local")
    expect(page.locator("#status")).to_have_text("X to move")
    page.locator("#new-game").focus()
    page.keyboard.press("1")  # digits work from anywhere on the page: 1 is the top left
    expect(cell(page, 0)).to_have_attribute("data-mark", "X")
    expect(page.locator("#status")).to_have_text("O to move")
    expect(cell(page, 0)).to_be_focused()

    page.keyboard.press("ArrowRight")
    expect(cell(page, 1)).to_be_focused()
    page.keyboard.press("Enter")
    expect(cell(page, 1)).to_have_attribute("data-mark", "O")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # stops at the edge
    expect(cell(page, 7)).to_be_focused()
    page.keyboard.press("Space")

    expect(cell(page, 7)).to_have_attribute("data-mark", "X")
    assert board(page) == "XO.....X."
    assert page.locator("[data-cell][tabindex='0']").count() == 1  # roving tabindex
    expect(cell(page, 7)).to_have_attribute("aria-label", "row 3, column 2, X")


def test_two_players_pass_and_play_on_one_device(open_page):
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    choose(page, "mode", "local")
    expect(page.locator("#status")).to_have_text("X to move")
    expect(page.locator("select[name='level']")).to_be_disabled()

    for index, expected in [(0, "O to move"), (3, "X to move"), (1, "O to move"),
                            (4, "X to move")]:
        cell(page, index).click()
        expect(page.locator("#status")).to_have_text(expected)
    cell(page, 2).click()

    expect(page.locator("#status")).to_have_text("X wins")
    expect(page.locator("#strike")).to_have_attribute("data-line", "012")
    assert page.locator(".cell.is-win").count() == 3
    page.locator("#rematch").click()
    expect(page.locator("#status")).to_have_text("X to move")
    assert board(page) == "........."


def test_friend_game_through_the_link(open_page):
    host = open_page()
    expect(host.locator("#status")).to_have_text("Your turn")
    choose(host, "mode", "friend")
    expect(host.locator("#status")).to_have_text("Waiting for your friend to join")
    link = share_link(host)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/g/[\w-]{16,}", link)
    assert host.locator("#share-qr").get_attribute("src").endswith("/qr.svg")

    guest = open_page("phone", path=link)
    expect(guest.locator("#status")).to_have_text("Your friend's turn")
    expect(host.locator("#status")).to_have_text("Your turn")
    expect(host.locator("#share")).to_be_hidden()
    watcher = open_page({"width": 800, "height": 900}, path=link)
    expect(watcher.locator("#status")).to_have_text("You are watching — X to move")

    for page, index in [(host, 4), (guest, 0), (host, 2), (guest, 6), (host, 3), (guest, 5),
                        (host, 7), (guest, 1), (host, 8)]:
        expect(page.locator("#status")).to_have_text("Your turn")
        cell(page, index).click()
    expect(host.locator("#status")).to_have_text("Draw")
    expect(guest.locator("#status")).to_have_text("Draw")
    expect(watcher.locator("#status")).to_have_text("You are watching — Draw")

    guest.locator("#rematch").click()  # an offer: nobody is moved into a game they did not ask for
    expect(guest.locator("#offer-text")).to_have_text("Rematch offered — waiting for your friend")
    expect(host.locator("#offer-text")).to_have_text("Your friend wants a rematch")
    expect(host.locator("#status")).to_have_text("Draw")
    host.locator("#accept").click()  # sides swap, and the guest, who asked, follows
    expect(guest.locator("#status")).to_have_text("Your turn")
    expect(host.locator("#status")).to_have_text("Your friend's turn")
    expect(watcher.locator("#status")).to_have_text("You are watching — X to move")
    assert host.url == guest.url == watcher.url != link


def test_no_console_errors_across_the_features(open_page):
    # open_page fails the test on any console error or uncaught exception.
    page = open_page(color_scheme="dark")
    expect(page.locator("#status")).to_have_text("Your turn")
    cell(page, 4).click()
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(page.locator("#status")).to_have_text("Your turn")
    page.locator("[data-cell][data-mark='']").first.click()  # a second move: now it counts
    expect(page.locator("[data-cell][data-mark='X']")).to_have_count(2)
    expect(page.locator("#status")).to_have_text("Your turn")
    choose(page, "mode", "friend")  # a game in progress: asked first, and resigned
    leave_anyway(page, re.compile("counts as a loss"))
    qr = page.locator("#share-qr")
    expect(qr).to_be_visible()
    expect(qr).to_have_js_property("complete", True)
    assert qr.evaluate("img => img.naturalWidth") > 0
    page.locator("#share-copy").click()  # headless: no clipboard, so the link is selected
    expect(page.locator("#share-feedback")).to_contain_text("Link")
    choose(page, "mode", "local")
    expect(page.locator("#status")).to_have_text("X to move")
    # A dead /g/ link is a friendly 404 page of its own (test_friends_together.py).
    assert page.url.endswith("/")


def test_no_sideways_scrolling_at_320_px(open_page):
    page = open_page({"width": 320, "height": 640})
    expect(page.locator("#status")).to_have_text("Your turn")
    width = "() => document.documentElement.scrollWidth"
    assert page.evaluate(width) <= 320
    box = cell(page, 8).bounding_box()
    assert box["width"] >= 80 and box["x"] + box["width"] <= 320

    choose(page, "mode", "friend")  # the widest content: a long link and the QR code
    expect(page.locator("#share")).to_be_visible()
    assert page.evaluate(width) <= 320
    status = page.locator("#status")
    assert status.evaluate("s => s.scrollWidth <= s.clientWidth")  # the status fits one line
    for button in page.locator(".btn:visible").all():
        assert button.bounding_box()["height"] >= 48
