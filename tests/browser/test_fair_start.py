"""Fair before the first move, and the join that rides the connect, in the page (PROTOCOL v5,
issue 42): A makes a link and closes the tab, B opens it and is offered Abort, never Claim."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_friend_page import host_friend_game, play, seat_together, status
from tests.support.servers import Server

pytestmark = [pytest.mark.browser, pytest.mark.server]

# Every Socket.IO event the page sends, by name (websocket frames "42[<id>]["name", ...]").
SENT = r'^42\d*\["(\w+)"'


def sent_events(page) -> list[str]:
    events: list[str] = []

    def frames(ws):
        ws.on("framesent", lambda frame: events.extend(
            re.findall(SENT, frame if isinstance(frame, str) else "")))

    page.on("websocket", frames)
    return events


def test_a_link_whose_maker_left_offers_abort_never_claim(open_page, quick_server):
    host, link = host_friend_game(open_page, "desktop", server=quick_server)
    host.close()  # made the link, sent it, closed the tab: never moved
    guest = open_page("phone", path=link, server=quick_server)
    events = sent_events(guest)
    abort, claim = guest.locator("#abort"), guest.locator("#claim")
    # The maker's absence is told once the blip is over: the game can only be called off.
    expect(status(guest)).to_have_text("Waiting for your friend", timeout=15_000)
    expect(abort).to_be_visible()
    expect(claim).to_be_hidden()
    expect(guest.locator("#absence")).to_have_text("")
    guest.screenshot(path="/tmp/i42-abort-phone.png")
    # The claim delay here is 2 s: a fresh view long past it still offers no claim.
    guest.reload()
    expect(status(guest)).to_have_text("Waiting for your friend")
    expect(abort).to_be_visible()
    expect(claim).to_be_hidden()
    abort.click()
    guest.locator("#leave").get_by_role("button", name="Abort", exact=True).click()
    expect(status(guest)).to_have_text("Game cancelled")
    assert "claim" not in events


def test_the_page_joins_on_the_connect_with_no_join_event(open_page, live_server):
    host, link = host_friend_game(open_page, "desktop")
    host.screenshot(path="/tmp/i42-host-desktop.png")
    guest = open_page("phone", path="/", server=None)
    events = sent_events(guest)
    guest.goto(link)
    expect(status(guest)).to_have_text("Your friend's turn")
    expect(status(host)).to_have_text("Your turn")
    assert "join" not in events  # the connect carried it (auth: {protocol: 5, game})
    # A reload rejoins the same way, and the game goes on.
    guest.reload()
    expect(status(guest)).to_have_text("Your friend's turn")
    host.locator("[data-cell='4']").click()
    expect(status(guest)).to_have_text("Your turn")
    assert "join" not in events, events
    guest.screenshot(path="/tmp/i42-guest-phone.png")


def test_the_joiner_is_told_the_side_and_the_moves_made_while_away(open_page):
    host, link = host_friend_game(open_page, "desktop")
    expect(host.locator("#deck-record")).to_be_hidden()  # no record against the AI here
    guest = open_page("phone", path=link)
    expect(status(guest)).to_have_text("Your friend's turn")
    expect(guest.locator("#detail")).to_have_text("You play O — X moves first")
    expect(guest.locator("#deck-record")).to_be_hidden()
    host.locator("[data-cell='4']").click()
    expect(status(guest)).to_have_text("Your turn")
    guest.locator("[data-cell='0']").click()
    expect(status(host)).to_have_text("Your turn")

    # The games list's module comes a moment after the board, in the bundle of the modules
    # loaded later: loaded before the network goes.
    guest.wait_for_function(
        "() => performance.getEntriesByType('resource')"
        ".some((e) => new URL(e.name).pathname.endsWith('/main.later.js'))")  # ?v=<hash> aside
    guest.evaluate("() => navigator.serviceWorker.ready.then(() => true)")  # and the worker
    guest.context.set_offline(True)
    banner = guest.locator("#connection")
    expect(banner).to_be_visible()
    # The banner stands at the foot of the screen: the masthead and the sound switch stay clear.
    below = banner.bounding_box()
    for part in ("header.masthead", "#sound"):
        box = guest.locator(part).bounding_box()
        assert box["y"] + box["height"] <= below["y"], part
    guest.screenshot(path="/tmp/i42-banner-phone.png")
    host.locator("[data-cell='8']").click()
    expect(status(host)).to_have_text("Your friend's turn")
    guest.context.set_offline(False)
    expect(banner).to_be_hidden()
    expect(guest.locator("#detail")).to_have_text("1 move while you were away")
    expect(status(guest)).to_have_text("Your turn")
    guest.screenshot(path="/tmp/i42-away-phone.png")
    host.screenshot(path="/tmp/i42-friend-desktop.png")


def test_the_record_card_shows_against_the_ai(open_page):
    page = open_page("desktop")
    expect(status(page)).to_have_text("Your turn")
    expect(page.locator("#deck-record")).to_be_visible()


@pytest.fixture(scope="module")
def long_blip(tmp_path_factory):
    """A server on which any absence is a blip (an hour): what a blip looks like, held still."""
    log = tmp_path_factory.mktemp("blip") / "server.log"
    server = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "blip-test",
                     "TTT_BLIP": "3600"}, log=log).start()
    yield server.url
    server.stop()


def test_a_network_blip_is_not_announced(open_page, long_blip):
    """The friend closes the tab and comes back: the player never reads "left", keeps
    Resign, and is offered no claim; a fresh view from the server says the same."""
    host, guest, link = seat_together(open_page, "desktop", "phone", server=long_blip)
    play({"host": host, "guest": guest}, [(4, "host"), (0, "guest")])
    context = guest.context
    guest.close()  # the tab is gone (its websocket closed), the phone will be back
    host.reload()  # the server's view now
    expect(status(host)).to_have_text("Your turn")
    expect(host.locator("#resign")).to_be_visible()
    expect(host.locator("#claim")).to_be_hidden()
    expect(host.locator("#absence")).to_have_text("")
    expect(host.locator("#player-o")).not_to_have_attribute("data-presence", "offline")
    back = context.new_page()  # the same player, back
    back.goto(link)
    expect(status(back)).to_have_text("Your friend's turn")
    host.locator("[data-cell='8']").click()
    expect(status(back)).to_have_text("Your turn")
    expect(host.locator("#detail")).not_to_have_text(re.compile("left|back"))
