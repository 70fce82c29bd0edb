"""Learning from the AI in a real browser: evaluations, hints, the review and replay links."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_play import PERFECT, board, cell, choose
from ttt.ai import analysis
from ttt.rules.classic import Board

pytestmark = [pytest.mark.browser, pytest.mark.server]

WORDS = {"win": "wins", "loss": "loses"}


def shown(move: dict) -> tuple[str, str]:
    """What the page should write on a cell for one move of `analyze`, and say in its label."""
    result, plies = move["result"], move["plies"]
    if result == "draw":
        return "Draw", "this move leads to a draw"
    if result == "win" and plies == 1:
        return "Win now", "this move wins at once"
    return f"{result.capitalize()} in {plies}", f"this move {WORDS[result]} in {plies} moves"


def expect_evaluations(page: Page, position: Board) -> None:
    """Every empty cell carries the engine's verdict on it; taken cells carry none."""
    verdicts = {move["cell"]: move for move in analysis.analyze(position)["moves"]}
    for index in range(9):
        text = cell(page, index).locator(".eval")
        if index in verdicts:
            short, long = shown(verdicts[index])
            square = cell(page, index)
            expect(text).to_have_text(short)
            expect(square).to_have_attribute("data-result", verdicts[index]["result"])
            expect(square).to_have_attribute("aria-label", re.compile(f", {short}: {long}$"))
        else:
            expect(text).to_have_text("")


def pass_and_play(page: Page, moves: list[int]) -> None:
    choose(page, "mode", "local")
    expect(page.locator("#status")).to_have_text("X to move")
    for index in moves:
        cell(page, index).click()
        expect(cell(page, index)).not_to_have_attribute("data-mark", "")


def suggested(page: Page) -> list[int]:
    return page.eval_on_selector_all(
        ".cell.is-suggested", "cells => cells.map(c => Number(c.dataset.cell))")


def test_evaluations_show_the_engines_verdict_and_follow_the_game(open_page):
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    pass_and_play(page, [0, 3, 1, 4])
    expect(cell(page, 2).locator(".eval")).to_have_text("")  # off until asked for

    page.locator("#evaluations-switch").click()

    expect(page.locator("#evaluations")).to_be_checked()
    expect_evaluations(page, Board.from_moves([0, 3, 1, 4]))
    expect(cell(page, 2).locator(".eval")).to_have_text("Win now")
    cell(page, 5).click()  # the draw: the evaluations are O's now
    expect(page.locator("#status")).to_have_text("O to move")
    expect_evaluations(page, Board.from_moves([0, 3, 1, 4, 5]))

    page.reload()  # the switch is remembered
    expect(page.locator("#evaluations")).to_be_checked()
    expect_evaluations(page, Board.from_moves([0, 3, 1, 4, 5]))
    page.locator("#evaluations-switch").click()
    expect(page.locator("#evaluations")).not_to_be_checked()
    expect(page.locator(".cell[data-result]")).to_have_count(0)
    assert page.locator(".eval:not(:empty)").count() == 0


def test_hints_and_evaluations_against_the_ai_end_in_the_summary(open_page):
    page = open_page(preferences=PERFECT)
    status = page.locator("#status")
    expect(status).to_have_text("Your turn")
    page.locator("#evaluations-switch").click()
    hint = page.locator("#hint-button")
    taken = 0
    while status.text_content() == "Your turn":
        position = Board.parse(board(page))
        expect_evaluations(page, position)  # asked again after every reply of the AI
        hint.click()
        taken += 1
        best = analysis.analyze(position)["best"]
        expect(page.locator(".cell.is-suggested")).to_have_count(len(best))
        assert sorted(suggested(page)) == sorted(best)
        expect(page.locator("#hint-count")).to_have_text(str(taken))
        expect(cell(page, best[0])).to_have_attribute("aria-label", re.compile("suggested move"))
        cell(page, best[0]).click()
        expect(cell(page, best[0])).to_have_attribute("data-mark", "X")
        expect(page.locator(".cell.is-suggested")).to_have_count(0)  # gone with the move
        expect(status).not_to_have_text("AI is thinking…")
        expect(status).to_have_text(re.compile(r"^(Your turn|Draw)$"))

    assert status.text_content() == "Draw"  # best play both ways
    expect(page.locator("#review")).to_be_visible()
    expect(page.locator("#review [data-review='summary']")).to_have_text(
        f"Draw — with {taken} hints")
    expect(hint).to_have_attribute("aria-disabled", "true")


def test_review_replays_the_game_and_explains_the_first_mistake(open_page):
    moves = [0, 3, 1, 4, 2]  # O's left edge loses to the corner opening
    expected = analysis.review(moves)
    positions = expected["positions"]
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    pass_and_play(page, moves)
    expect(page.locator("#status")).to_have_text("X wins")

    card = page.locator("#review")
    expect(card).to_be_visible()
    expect(card.locator("[data-review='summary']")).to_have_text("X won — no hints")
    expect(card.locator(".move")).to_have_text(
        ["1. X top left", "2. O left MISTAKE", "3. X top", "4. O centre", "5. X top right"],
        use_inner_text=True)  # as drawn: each move's cell number hidden until asked for
    expect(card.locator(".mistake[data-side='O'] .mistake-text")).to_have_text(
        expected["review"]["O"]["text"])
    expect(card.locator(".mistake[data-side='X'] .mistake-text")).to_have_text("No mistakes")
    expect(card.locator("[data-review='link']")).to_have_value(re.compile(r"^http://[^/]+/r/03142$"))

    # The keys step through the game as the card says wherever the focus is, a square too.
    cell(page, 4).focus()
    page.keyboard.press("Home")
    expect(card.locator("[data-review='caption']")).to_have_text("Start · move 0 of 5")
    assert board(page) == positions[0]
    page.keyboard.press("End")
    expect(card.locator("[data-review='caption']")).to_have_text("Final position · move 5 of 5")
    assert board(page) == positions[-1]

    card.locator("[data-step='back']").focus()
    caption = card.locator("[data-review='caption']")
    for ply in range(len(moves) - 1, -1, -1):
        page.keyboard.press("ArrowLeft")
        expect(caption).to_contain_text(f"move {ply} of 5", ignore_case=True)
        assert board(page) == positions[ply]
    expect(page.locator("#board-wrap")).to_have_class(re.compile("is-replay"))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert board(page) == positions[2]
    expect(cell(page, 3)).to_have_attribute("data-flag", "mistake")  # O's move just played
    expect(cell(page, 4)).to_have_attribute("data-flag", "better")
    page.keyboard.press("End")
    assert board(page) == positions[-1]
    expect(page.locator("#strike")).to_have_attribute("data-line", "012")
    expect(page.locator("#board-wrap")).not_to_have_class(re.compile("is-replay"))
    page.keyboard.press("Home")
    assert board(page) == positions[0]
    page.keyboard.press("Escape")  # leaving the replay: back to how the game ended
    assert board(page) == positions[-1]

    card.locator(".mistake[data-side='O'] [data-review='try']").click()

    expect(page.locator("#status")).to_have_text("Your turn")
    expect(page.locator("#practice")).to_be_visible()
    expect(page.locator("#detail")).to_have_text("Practice from move 2 · not counted")
    expect(page.locator("#player-o .player-name")).to_have_text("You")
    expect(page.locator("#player-x .player-name")).to_have_text("AI · Easy")  # the bar's level
    assert board(page) == positions[1]
    expect(card).to_be_hidden()
    cell(page, 4).click()  # the centre this time
    expect(cell(page, 4)).to_have_attribute("data-mark", "O")


def test_evaluations_follow_the_review_into_past_positions(open_page):
    moves = [0, 3, 1, 4, 2]
    page = open_page()
    expect(page.locator("#status")).to_have_text("Your turn")
    pass_and_play(page, moves)
    expect(page.locator("#status")).to_have_text("X wins")
    card = page.locator("#review")
    expect(card.locator(".mistake[data-side='O'] .mistake-text")).to_contain_text("turned")
    page.locator("#evaluations-switch").click()
    expect(page.locator(".cell[data-result]")).to_have_count(0)  # the end: nothing to play

    card.locator("[data-step='back']").click()  # after move 4: X to move, and X can win
    expect_evaluations(page, Board.from_moves(moves[:4]))
    expect(cell(page, 2).locator(".eval")).to_have_text("Win now")
    card.locator("[data-step='back']").click()
    card.locator("[data-step='back']").click()  # after move 2, O's mistake: the flags tell it
    expect(cell(page, 3)).to_have_attribute("data-flag", "mistake")
    expect(page.locator(".cell[data-result]")).to_have_count(0)
    card.locator("[data-step='first']").click()
    expect_evaluations(page, Board.from_moves([]))
    card.locator("[data-step='last']").click()
    expect(page.locator(".cell[data-result]")).to_have_count(0)
    expect(page.locator("#notice")).to_have_text("")


def test_replay_link_steps_through_the_game(open_page):
    expected = analysis.review([4, 0, 8, 1, 2])
    positions = expected["positions"]
    page = open_page(path="/r/40812")
    expect(page.locator("h1")).to_have_text("Replay")
    assert board(page) == positions[-1]
    expect(page.locator(".cell[data-cell='2']")).to_have_class(re.compile("is-last"))
    expect(page.locator(".mistake[data-side='O'] .mistake-text")).to_have_text(
        expected["review"]["O"]["text"])
    expect(page.locator(".move.is-mistake")).to_have_text("4. O top MISTAKE",
                                                             use_inner_text=True)
    expect(page.locator("a", has_text="Play the AI")).to_have_attribute("href", "/")
    expect(page.locator("[data-review='link']")).to_have_value(re.compile(r"/r/40812$"))

    page.keyboard.press("ArrowLeft")  # anywhere on the page
    assert board(page) == positions[4]
    expect(cell(page, 1)).to_have_attribute("data-flag", "mistake")
    page.locator("[data-step='first']").click()
    assert board(page) == positions[0]
    expect(page.locator("[data-step='back']")).to_have_attribute("aria-disabled", "true")
    for ply in (1, 2, 3):
        page.locator("[data-step='forward']").click()
        assert board(page) == positions[ply]
    page.locator(".mistake[data-side='O'] [data-review='show']").click()
    assert board(page) == positions[4]

    small = open_page({"width": 320, "height": 640}, path="/r/03142")
    assert small.evaluate("() => document.documentElement.scrollWidth") <= 320
    for button in small.locator(".btn:visible").all():
        assert button.bounding_box()["height"] >= 48


def test_bad_replay_links_get_a_clear_404_page(chromium, live_server):
    # Its own context: the 404 answer itself is logged as a console error, which open_page fails.
    context = chromium.browser.new_context(base_url=live_server)
    page = context.new_page()
    try:
        answer = page.goto("/r/4481")
        assert answer.status == 404
        expect(page.locator("h1")).to_have_text("Nothing here")
        expect(page.locator("main")).to_contain_text("This replay link does not work.")
        expect(page.locator("main")).to_contain_text("move 2 is on a square already taken")
        expect(page.locator("a", has_text="Play a game")).to_have_attribute("href", "/")
        assert page.goto("/r/hello").status == 404
        expect(page.locator("main")).to_contain_text("each a digit from 0 to 8")
    finally:
        context.close()


def test_friend_games_offer_no_hints_and_a_finished_game_fits_a_small_phone(open_page):
    page = open_page({"width": 320, "height": 640})
    expect(page.locator("#status")).to_have_text("Your turn")
    choose(page, "mode", "friend")
    expect(page.locator("#learn-note")).to_contain_text("No hints or evaluations in this game")
    expect(page.locator("#hint-button")).to_be_hidden()
    expect(page.locator("#evaluations-switch")).to_be_hidden()

    pass_and_play(page, [0, 3, 1, 4, 2])
    expect(page.locator("#review .mistake[data-side='O'] [data-review='try']")).to_be_visible()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 320
    for button in page.locator(".btn:visible").all():
        assert button.bounding_box()["height"] >= 48
