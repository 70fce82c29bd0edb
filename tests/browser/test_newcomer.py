"""A newcomer's first minute on a phone (issue 14): the settings in sight before and after a
game, a first game that can be won, a rematch that says the side, a move tapped offline that is
played or reported, hints that teach and count once, notes only where they apply."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_play import board, cell, choose, share_link
from ttt.ai import analysis, solver
from ttt.rules.classic import Board

pytestmark = [pytest.mark.browser, pytest.mark.server]

PHONES = {
    "360x640": {"viewport": {"width": 360, "height": 640}, "device_scale_factor": 2,
                "is_mobile": True, "has_touch": True},
    "320x568": {"viewport": {"width": 320, "height": 568}, "device_scale_factor": 2,
                "is_mobile": True, "has_touch": True},
}
OVER = re.compile(r"^(You win!|The AI wins|Draw)$")
# The settings a newcomer must find: who to play, which side, how hard.
SETTINGS = ["#pick-mode", "#pick-you", "#pick-level", "#pick-variant"]
GAMES_TO_WIN = 6  # the scripted player wins about 7 games in 8 against the easy AI
# Every layout shift from now on, caused by input or not, added up in window.shifted.
WATCH_SHIFTS = """() => {
    window.shifted = 0;
    new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) window.shifted += entry.value;
    }).observe({type: "layout-shift"});
}"""


def status(page: Page):
    return page.locator("#status")


def on_screen(page: Page, selectors: list[str]) -> None:
    """Each element is whole inside the viewport, the page not scrolled: seen without scrolling."""
    assert page.evaluate("() => scrollY") == 0
    size = page.viewport_size
    for selector in selectors:
        target = page.locator(selector)
        expect(target).to_be_visible()
        box = target.bounding_box()
        assert box["x"] >= 0 and box["y"] >= 0, selector
        assert box["x"] + box["width"] <= size["width"], f"{selector} is cut at the right"
        assert box["y"] + box["height"] <= size["height"], f"{selector} is below the fold: {box}"


def perfect_move(page: Page) -> int:
    """The move a perfect player makes on the board on screen (the lowest of the best cells)."""
    return solver.best_moves(Board.parse(board(page)))[0]


def play_perfectly(page: Page, tap: bool = True) -> str:
    """Play X's best move on every turn until the game ends; the final status."""
    for _ in range(5):
        expect(status(page)).to_have_text(re.compile(r"^(Your turn|You win!|The AI wins|Draw)$"))
        if OVER.match(status(page).text_content()):
            break
        target = cell(page, perfect_move(page))
        target.tap() if tap else target.click()
        expect(target).to_have_attribute("data-mark", "X")
        expect(status(page)).not_to_have_text("AI is thinking…")
    expect(status(page)).to_have_text(OVER)
    return status(page).text_content()


@pytest.mark.parametrize("phone", list(PHONES), ids=list(PHONES))
def test_a_newcomer_on_a_phone_sees_the_settings_and_can_win_the_first_games(open_page, phone):
    page = open_page(PHONES[phone])

    # A first visit: X against the easy AI; the unbeatable one is in the list, named as such.
    expect(status(page)).to_have_text("Your turn")
    expect(page.locator("#detail")).to_have_text("You play X against the easy AI")
    expect(page.locator("#player-o .player-name")).to_have_text("AI · Easy")
    level = page.locator("select[name='level']")
    expect(level).to_have_value("easy")
    expect(level.locator("option[value='perfect']")).to_have_text("Perfect — unbeatable")
    expect(page.locator("#pick-level .pick-text")).to_have_text("Easy")
    on_screen(page, [*SETTINGS, "#board"])
    expect(page.locator(".hint:visible")).to_have_count(0)  # no keyboard hints on a touch screen
    page.evaluate(WATCH_SHIFTS)

    results = [play_perfectly(page)]
    # After the game: the settings are where they were, nothing hides them, nothing moved.
    expect(page.locator("#review")).to_be_visible()
    on_screen(page, [*SETTINGS, "#board"])
    assert page.evaluate("() => window.shifted") == 0
    expect(page.locator("#review .keys-hint")).to_be_hidden()

    while "You win!" not in results and len(results) < GAMES_TO_WIN:
        page.locator("#new-game").tap()  # the same settings: X against the easy AI
        expect(page.locator("#detail")).to_have_text("You play X against the easy AI")
        results.append(play_perfectly(page))
    assert "You win!" in results, results
    assert "The AI wins" not in results  # a perfect player never loses
    wins = page.locator("#record tr[data-level='easy'] [data-stat='wins']")
    expect(wins).to_have_text(str(results.count("You win!")))


def test_a_rematch_says_the_side_and_new_game_keeps_the_chosen_one(open_page):
    page = open_page()
    expect(status(page)).to_have_text("Your turn")
    cell(page, 4).click()
    expect(page.locator(".cell[data-mark='O']")).to_have_count(1)
    page.locator(".cell[aria-disabled='false']").first.click()  # a second move: now it counts
    expect(page.locator(".cell[data-mark='O']")).to_have_count(2)
    page.locator("#resign").click()
    page.get_by_role("dialog").locator("[data-leave='go']").click()
    expect(status(page)).to_have_text("You resigned")

    page.locator("#rematch").click()  # against the AI, sides swap

    expect(page.locator("#player-o .player-name")).to_have_text("You")
    expect(status(page)).to_have_text("Your turn")
    expect(page.locator("#detail")).to_have_text("You play O this time")
    expect(page.locator("#announce")).to_have_text(
        re.compile(r"^You play O this time\. AI played the [a-z ]+\. Your turn$"))
    assert board(page).count("X") == 1
    # "Play as" shows the side played now (issue 22: never "Play as X" while playing O).
    expect(page.locator("select[name='you']")).to_have_value("O")
    expect(page.locator("#pick-you .pick-text")).to_have_text("O")

    page.locator("#new-game").click()  # no mark of ours on the board yet: nothing to ask

    expect(page.locator("#player-o .player-name")).to_have_text("You")  # the side shown
    expect(page.locator("#detail")).to_have_text(re.compile(r"^AI played the [a-z ]+$"))
    assert board(page).count("X") == 1 and "O" not in board(page)


def go_offline(page: Page) -> None:
    """Cut the network; the page knows at once (the browser says so) and shows the banner."""
    page.context.set_offline(True)
    expect(page.locator("#connection")).to_be_visible()
    expect(page.locator("#connection-text")).to_have_text("Connection lost — reconnecting…")


def test_a_move_tapped_offline_is_played_once_the_connection_is_back(open_page):
    page = open_page(PHONES["360x640"])
    expect(status(page)).to_have_text("Your turn")
    go_offline(page)

    cell(page, 4).tap()

    notice = page.locator("#notice")
    expect(notice).to_have_text(
        "You are offline — your move (centre) will be played when the connection is back")
    expect(cell(page, 4)).to_have_attribute("data-mark", "")
    page.context.set_offline(False)
    expect(page.locator("#connection")).to_be_hidden()
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(page.locator(".cell[data-mark='O']")).to_have_count(1)  # and the AI replied
    expect(status(page)).to_have_text("Your turn")
    expect(notice).to_have_text("")


def test_a_move_tapped_offline_is_reported_when_the_game_changed_meanwhile(open_page, remotes):
    page = open_page(PHONES["320x568"])
    expect(status(page)).to_have_text("Your turn")
    # The same player on another device (the page's own cookie), in the same game.
    cookie = next(c["value"] for c in page.context.cookies() if c["name"] == "session")
    other = remotes(cookie=cookie)
    joined = other.call("join", {})
    assert joined["ok"] and joined["game"]["board"] == "........."
    go_offline(page)
    cell(page, 0).tap()
    expect(page.locator("#notice")).to_contain_text("your move (top left) will be played")

    moved = other.call("move", {"game": joined["game"]["id"], "cell": 4})  # played elsewhere
    assert moved["ok"]
    page.context.set_offline(False)

    expect(page.locator("#notice")).to_have_text(
        "Your move (top left) was not played: the game changed while you were offline")
    expect(cell(page, 4)).to_have_attribute("data-mark", "X")
    expect(cell(page, 0)).not_to_have_attribute("data-mark", "X")
    assert board(page).count("X") == 1
    expect(page.locator("#connection")).to_be_hidden()


def test_a_hint_pressed_three_times_counts_once_and_teaches(open_page):
    page = open_page()
    expect(status(page)).to_have_text("Your turn")
    hint = page.locator("#hint-button")
    advice = page.locator("#hint-advice")
    expect(advice).to_be_hidden()

    for _ in range(3):
        hint.click()
        expect(advice).to_be_visible()
    expect(page.locator("#hint-count")).to_have_text("1")  # the server's count: one position
    expect(hint).to_have_attribute("aria-label", "Hint, 1 taken so far")
    expected = analysis.analyze(Board.parse("........."))["advice"]
    expect(advice).to_have_text(expected)
    expect(page.locator("#announce")).to_have_text(f"Hint: {expected}")
    assert page.locator(".cell.is-suggested").count() >= 1

    # What "Loss in 6" means, under the switch, for as long as the evaluations show.
    legend = page.locator("#evaluations-legend")
    expect(legend).to_be_hidden()
    page.locator("#evaluations-switch").click()
    expect(legend).to_be_visible()
    expect(legend.locator(".for-classic")).to_have_text(
        "Win/Loss in N: moves until the end, both sides counted, with perfect play")
    expect(page.locator(".cell[data-result]")).to_have_count(9)

    result = play_perfectly(page, tap=False)
    expect(advice).to_be_hidden()  # the hint was for a position long gone
    expect(page.locator("#hint-count")).to_have_text("1")
    summary = {"You win!": "You won", "Draw": "Draw"}[result]
    expect(page.locator("#review [data-review='summary']")).to_have_text(
        f"{summary} — with 1 hint")
    page.locator("#evaluations-switch").click()
    expect(legend).to_be_hidden()


def test_the_review_keys_work_from_anywhere_and_the_numbering_is_one(open_page):
    moves = [0, 3, 1, 4, 2]  # O's move 2, the left edge, loses
    expected = analysis.review(moves)
    page = open_page()
    expect(status(page)).to_have_text("Your turn")
    choose(page, "mode", "local")
    expect(status(page)).to_have_text("X to move")
    for index in moves:
        cell(page, index).click()
        expect(cell(page, index)).not_to_have_attribute("data-mark", "")
    expect(status(page)).to_have_text("X wins")
    card = page.locator("#review")
    mistake = expected["review"]["O"]
    text = card.locator(".mistake[data-side='O'] .mistake-text")
    expect(text).to_have_text(mistake["text"])
    assert mistake["text"].startswith(f"Move {mistake['move']}, O left")
    expect(card.locator(f".move[data-ply='{mistake['move']}']")).to_have_class(
        re.compile("is-mistake"))

    caption = card.locator("[data-review='caption']")
    page.locator("#new-game").focus()  # a button outside the card: the keys still step
    for _ in range(3):  # again if the card was redrawn from the server's review meanwhile
        page.keyboard.press("Home")
        try:
            expect(caption).to_have_text("Start · move 0 of 5", timeout=2000)
            break
        except AssertionError:
            continue
    expect(caption).to_have_text("Start · move 0 of 5")
    for ply in (1, 2):
        page.keyboard.press("ArrowRight")
        expect(caption).to_contain_text(f"Move {ply} of 5")
    assert board(page) == expected["positions"][2]
    expect(cell(page, 3)).to_have_attribute("data-flag", "mistake")  # the move the text names
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("End")
    expect(caption).to_have_text("Final position · move 5 of 5")

    card.locator(".mistake[data-side='O'] [data-review='try']").click()
    expect(page.locator("#detail")).to_have_text(
        f"Practice from move {mistake['move']} · not counted")


def test_a_spectator_hears_of_the_seats_and_of_how_the_game_was_won(open_page, quick_server):
    host = open_page(server=quick_server)
    expect(status(host)).to_have_text("Your turn")
    choose(host, "mode", "friend")
    expect(status(host)).to_have_text("Waiting for your friend to join")
    link = share_link(host)
    guest = open_page("phone", path=link, server=quick_server)
    expect(status(guest)).to_have_text("Your friend's turn")
    watcher = open_page(path=link, server=quick_server)
    expect(status(watcher)).to_have_text("You are watching — X to move")
    expect(watcher.locator(".hint:visible")).to_have_count(0)  # keyboard hints: for players
    expect(host.locator(".hint:visible")).to_have_count(1)
    cell(host, 4).click()
    expect(status(guest)).to_have_text("Your turn")
    # Both move first: before that an absent side is called off, never claimed (PROTOCOL v5).
    cell(guest, 0).click()
    expect(status(host)).to_have_text("Your turn")
    cell(host, 8).click()
    expect(status(guest)).to_have_text("Your turn")

    guest.close()  # O goes away on their own turn

    expect(watcher.locator("#detail")).to_have_text("O is away")
    expect(watcher.locator("#announce")).to_contain_text("O is away")
    late = open_page(path=link, server=quick_server)  # one who comes now is told as well
    expect(late.locator("#detail")).to_have_text("O is away")
    claim = host.locator("#claim")
    expect(claim).to_have_attribute("aria-disabled", "false", timeout=15_000)
    claim.click()

    expect(status(host)).to_have_text("You win — your friend left")
    for page in (watcher, late):
        expect(status(page)).to_have_text("You are watching — X wins, O left")
    for page in (host, watcher):
        expect(page.locator("#review")).to_be_visible()
        expect(page.locator("#learn-note")).not_to_contain_text("the review opens")
