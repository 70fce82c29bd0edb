"""An absent friend never wins on your clock (issue 30, PROTOCOL v4): while the friend is away
the player on move is told "Your turn" at every moment, the absence is a second line, and a
move puts the clock on the absent side, who then loses on time."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_friend_page import host_friend_game, play, status
from tests.browser.test_play import cell, choose, share_link

pytestmark = [pytest.mark.browser, pytest.mark.server]

# Every status line and absence line the page shows, sampled every 50 ms from now on.
WATCH_STATUS = """() => {
    window.said = [];
    const take = () => window.said.push([document.getElementById("status").textContent,
                                         document.getElementById("absence").textContent]);
    take();
    window.watching = setInterval(take, 50);
}"""


@pytest.mark.parametrize("seconds", [10, 30, 60])
def test_the_player_on_move_keeps_their_turn_while_the_friend_is_away(
        open_page, quick_server, seconds):
    host, _ = host_friend_game(open_page, "phone", server=quick_server)
    choose(host, "clock", str(seconds))
    shown = f"{seconds // 60}:{seconds % 60:02d}"
    expect(host.locator("#player-x .player-clock")).to_have_text(shown)
    guest = open_page("desktop", path=share_link(host), server=quick_server)
    expect(status(guest)).to_have_text("Your friend's turn")
    play({"host": host, "guest": guest}, [(4, "host"), (0, "guest")])
    expect(status(host)).to_have_text("Your turn")
    host.evaluate(WATCH_STATUS)

    guest.close()  # on the host's turn, with the host's clock running

    absence = host.locator("#absence")
    expect(absence).to_have_text(
        re.compile(r"^Your friend left · you can claim the win in 0:0[12]$"))
    expect(absence).to_be_visible()
    # The server here opens a claim after 2 s away (60 s in production): past that, still the
    # host's turn, and nothing on screen says to wait.
    expect(absence).to_have_text("Your friend left · you can claim the win now", timeout=15_000)
    expect(host.locator("#claim")).to_have_attribute("aria-disabled", "false")
    host.wait_for_timeout(600)  # a few more samples with the claim open
    said = host.evaluate("() => { clearInterval(window.watching); return window.said; }")
    assert said and all(line == "Your turn" for line, _ in said), sorted({s for s, _ in said})
    assert not any(re.search(r"wait|disconnected", absent, re.I) for _, absent in said)
    expect(host.locator("#player-x")).to_have_class(re.compile("is-ticking"))

    # The host moves instead of claiming: the clock goes to the absent side.
    cell(host, 8).click()
    expect(status(host)).to_have_text("Your friend's turn")
    expect(host.locator("#player-o")).to_have_class(re.compile("is-ticking"))
    expect(host.locator("#player-x")).not_to_have_class(re.compile("is-ticking"))
    expect(host.locator("#player-o .player-clock")).to_have_text(re.compile(r"^\d:\d\d$"))
    expect(absence).to_have_text("Your friend left · you can claim the win now")
    if seconds == 10:
        # The absent friend does not come back: they lose on time, and the host wins.
        expect(status(host)).to_have_text("You win on time", timeout=20_000)
        expect(absence).to_have_text("")
    else:
        left = host.locator("#player-o .player-clock").text_content()
        minutes, secs = (int(part) for part in left.split(":"))
        assert seconds - 5 <= minutes * 60 + secs <= seconds, left
