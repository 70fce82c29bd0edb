"""The page shows exactly what the server sends, not what it would work out itself.

Against a server that sends odd but valid values (tests/support/odd_app.py): a claim delay of 7
seconds, a classic AI level no real server has with a record row of its own name, and ultimate
`targets` that differ from `next`. (This replaces reading the page's modules for old spellings
of rules: a rule written again in the page, in any spelling, shows here as the wrong thing on
screen.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.test_friend_page import play, seat_together
from tests.browser.test_play import choose
from tests.browser.test_ultimate import square, start_ultimate, status, targets
from tests.support.odd_app import ODD_LEVEL, ODD_ROW, odd_targets
from tests.support.servers import Server

pytestmark = [pytest.mark.browser, pytest.mark.server]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def odd_server(tmp_path_factory):
    log = tmp_path_factory.mktemp("odd") / "server.log"
    server = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "odd-test",
                     "TTT_CLAIM_AFTER": "7", "TTT_CREATE_RATE": "100000",
                     "TTT_MAX_LIVE_PER_ADDRESS": "100000"},
                    log=log, script=ROOT / "tests" / "support" / "odd_app.py").start()
    yield server.url
    server.stop()


def test_an_unknown_level_in_config_is_offered_with_its_own_record_row(open_page, odd_server):
    page = open_page(server=odd_server)
    expect(status(page)).to_have_text("Your turn")
    option = page.locator(f"#settings select[name='level'] option[value='{ODD_LEVEL}']")
    expect(option).to_have_text(ODD_LEVEL.capitalize())
    expect(option).to_be_enabled()
    row = page.locator(f"#record tbody.record-classic tr[data-level='{ODD_ROW}']")
    expect(row.locator("th")).to_have_text(ODD_LEVEL.capitalize())


def test_the_claim_delay_is_said_as_the_server_sends_it(open_page, odd_server):
    host, guest, _ = seat_together(open_page, "desktop", "phone", server=odd_server)
    play({"host": host, "guest": guest}, [(4, "host"), (0, "guest")])
    expect(status(guest)).to_have_text("Your friend's turn")
    choose(guest, "mode", "ai")
    dialog = guest.get_by_role("dialog", name="Leave this game?")
    expect(dialog).to_contain_text("can claim it in 7 seconds.")
    dialog.locator("[data-leave='stay']").click()


def test_the_boards_lit_are_the_views_targets_not_its_next(open_page, odd_server):
    page = open_page(server=odd_server)
    start_ultimate(page, mode="local")
    square(page, 40).click()  # `next` is the centre board; the server names two others
    lit = odd_targets({"variant": "ultimate", "next": 4})
    assert lit == [1, 6]
    expect(status(page)).to_have_text("O to move · top or bottom left board")
    page.wait_for_function(
        "want => JSON.stringify([...document.querySelectorAll('.usmall.is-target')]"
        ".map((b) => Number(b.dataset.uboard))) === want", arg=str(lit).replace(" ", ""))
    assert targets(page) == lit
    centre = page.locator(".usmall[data-uboard='4']")
    expect(centre).not_to_have_class(re.compile(r"\bis-target\b"))
