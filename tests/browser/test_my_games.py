"""Your games in one list (issue 30): the page lists the player's live friend games from the
server's `games` answer, with the opponent's name, whose turn and the time left, each a tap
away."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_friend_page import host_friend_game, rename, status
from tests.browser.test_play import cell, choose

pytestmark = [pytest.mark.browser, pytest.mark.server]


def test_the_friend_games_of_a_player_are_one_tap_away(open_page):
    ana, first = host_friend_game(open_page, "desktop")
    rename(ana, "X", "Ana")
    choose(ana, "clock", "30")  # a timed game: the list shows the time left
    expect(ana.locator("#player-x .player-clock")).to_have_text("0:30")
    first = ana.locator("#share-link").input_value()
    cy, second = host_friend_game(open_page, "desktop")
    rename(cy, "X", "Cyril")

    ben = open_page("phone", path=first)
    expect(status(ben)).to_have_text("Ana's turn")
    cell(ana, 4).click()
    expect(status(ben)).to_have_text("Your turn")
    ben.goto(second)  # Ben's second game, on screen: Cyril to move
    expect(status(ben)).to_have_text("Cyril's turn")

    games = ben.locator("#my-games")
    expect(games).to_be_visible()
    lines = games.locator(".my-game")
    expect(lines).to_have_count(2)
    # The game waiting for Ben first, with its time; the one on screen says so.
    expect(lines.nth(0).locator(".my-game-name")).to_have_text("Ana")
    expect(lines.nth(0).locator(".my-game-state")).to_have_text(
        re.compile(r"^your turn · 0:[0-3]\d$"))
    expect(lines.nth(1).locator(".my-game-name")).to_have_text("Cyril")
    expect(lines.nth(1).locator(".my-game-state")).to_have_text("their turn · on screen")
    assert lines.nth(1).get_attribute("aria-current") == "page"

    lines.nth(0).tap()  # one tap back to the game with Ana
    expect(ben).to_have_url(re.compile(re.escape(first) + "$"))
    expect(status(ben)).to_have_text("Your turn")
    expect(ben.locator("#player-x .player-name")).to_have_text("Ana")
