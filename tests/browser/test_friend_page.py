"""Friend games in a real browser, two players and a spectator (three browser contexts): fair
endings (claim after the countdown, resign, abort, asked before leaving), rematch offers, names,
the running score, watchers, reactions and the clock of a timed game; axe in every new state."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_a11y import audit
from tests.browser.test_play import cell, choose, leave_anyway, share_link

pytestmark = [pytest.mark.browser, pytest.mark.server]


@pytest.fixture
def open_page(open_page):
    """Pages as in conftest, with motion reduced: a busy machine never clicks mid-transition."""
    return lambda *args, **kwargs: open_page(*args, motion="reduce", **kwargs)

X_WINS = [(0, "host"), (3, "guest"), (1, "host"), (4, "guest"), (2, "host")]

# Layout shifts not caused by the page's own input, added up from now on (window.shifted).
WATCH_SHIFTS = """() => {
    window.shifted = 0;
    window.shifts = [];  // what moved, for the failure message
    new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
            if (entry.hadRecentInput) continue;
            window.shifted += entry.value;
            for (const source of entry.sources ?? []) {
                const node = source.node;
                window.shifts.push(node && node.nodeType === 1
                    ? `${node.tagName.toLowerCase()}#${node.id}.${node.className}` : String(node));
            }
        }
    }).observe({type: "layout-shift"});
}"""


def status(page: Page):
    return page.locator("#status")


def host_friend_game(open_page, device="desktop", server=None) -> tuple[Page, str]:
    """A player who opens a friend game; its page and the link to send."""
    host = open_page(device, server=server)
    expect(status(host)).to_have_text("Your turn")
    choose(host, "mode", "friend")
    expect(status(host)).to_have_text("Waiting for your friend to join")
    return host, share_link(host)


def seat_together(open_page, host_device="desktop", guest_device="phone", server=None):
    """Host (X) and guest (O) seated in a friend game, X to move; and the link."""
    host, link = host_friend_game(open_page, host_device, server)
    guest = open_page(guest_device, path=link, server=server)
    expect(status(guest)).to_have_text("Your friend's turn")
    expect(status(host)).to_have_text("Your turn")
    return host, guest, link


def play(pages: dict[str, Page], moves) -> None:
    """Each (cell, who) in turn, waiting for the mover's turn first."""
    for index, who in moves:
        page = pages[who]
        expect(status(page)).to_have_text("Your turn")
        cell(page, index).click()
        expect(cell(page, index)).not_to_have_attribute("data-mark", "")


def rename(page: Page, side: str, name: str) -> None:
    """Two taps: the player's own name on its seat, then the field (Enter keeps it)."""
    chip = page.locator(f"#player-{side.lower()}")
    chip.locator(".player-edit").click()
    field = chip.locator(".player-input")
    expect(field).to_be_focused()
    field.fill(name)
    field.press("Enter")
    expect(chip.locator(".player-name")).to_have_text(name)
    expect(chip.locator(".player-presence-text")).to_have_text(", you")


def test_a_player_who_leaves_on_their_own_turn_is_claimed_against_after_the_countdown(
        open_page, quick_server):
    host, guest, link = seat_together(open_page, server=quick_server)
    watcher = open_page("phone", path=link, server=quick_server)
    expect(status(watcher)).to_have_text("You are watching — X to move")
    expect(host.locator("#resign")).to_be_hidden()
    expect(host.locator("#abort")).to_be_visible()  # nobody has moved: it can still be called off
    play({"host": host}, [(4, "host")])
    expect(status(guest)).to_have_text("Your turn")
    expect(host.locator("#abort")).to_be_visible()  # until both have moved
    # Both move first: before that an absent side can only be called off (PROTOCOL v5).
    play({"host": host, "guest": guest}, [(0, "guest"), (8, "host")])
    expect(status(guest)).to_have_text("Your turn")
    problems: list[str] = []

    guest.close()  # the guest leaves on their own turn

    expect(status(host)).to_have_text("Your friend's turn")  # still: the absence is line two
    expect(host.locator("#absence")).to_have_text(
        re.compile(r"^Your friend left · you can claim the win (in 0:0\d|now)$"))
    claim = host.locator("#claim")
    expect(claim).to_be_visible()
    expect(watcher.locator("#player-o")).to_have_attribute("data-presence", "offline")
    expect(watcher.locator("#player-o .player-presence-text")).to_have_text(", away")
    # The server's delay here is 2 s: the countdown is on screen, then the claim opens.
    expect(claim).to_have_attribute("aria-disabled", "false", timeout=15_000)
    expect(claim).to_have_text("Claim the win")
    audit(host, "the claim open", problems)
    claim.click()

    expect(status(host)).to_have_text("You win — your friend left")
    expect(status(watcher)).to_have_text("You are watching — X wins, O left")
    expect(host.locator("#review")).to_be_visible()
    assert problems == [], "\n".join(problems)


def test_the_claim_countdown_counts_down_on_screen(open_page, quick_server):
    host, guest, _ = seat_together(open_page, "phone", "desktop", server=quick_server)
    # Both move first: before that there is no claim, only an abort (PROTOCOL v5).
    play({"host": host, "guest": guest}, [(4, "host"), (0, "guest"), (8, "host")])
    expect(status(guest)).to_have_text("Your turn")
    host.evaluate("""() => {
        const claim = document.getElementById("claim");
        window.claimTexts = [];
        new MutationObserver(() => window.claimTexts.push(claim.textContent))
            .observe(claim, {childList: true, characterData: true, subtree: true});
    }""")
    guest.close()
    expect(host.locator("#claim")).to_be_visible()
    expect(host.locator("#claim")).to_have_attribute("aria-disabled", "false", timeout=15_000)
    expect(host.locator("#claim")).to_have_text("Claim the win")
    seen = host.evaluate("() => window.claimTexts")
    assert any(re.fullmatch(r"Claim the win in 0:0[1-3]", text) for text in seen), seen
    # No 60-second wait hidden in the page: the countdown came from the server's claimable_in.
    expect(host.locator("#resign")).to_be_hidden()


def test_a_settings_tap_mid_game_asks_before_leaving_and_says_what_happens(open_page):
    host, guest, _ = seat_together(open_page, "desktop", "phone")
    play({"host": host, "guest": guest}, [(4, "host"), (0, "guest")])
    expect(status(guest)).to_have_text("Your friend's turn")
    problems: list[str] = []

    choose(guest, "mode", "ai")
    dialog = guest.get_by_role("dialog", name="Leave this game?")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("your friend can claim it in 1 minute")
    expect(dialog.locator("[data-leave='stay']")).to_be_focused()
    audit(guest, "asked before leaving a friend game", problems)
    dialog.locator("[data-leave='stay']").click()  # stays: nothing happened
    expect(dialog).to_be_hidden()
    expect(guest.locator("select[name='mode']")).to_have_value("friend")
    expect(status(guest)).to_have_text("Your friend's turn")
    expect(status(host)).to_have_text("Your turn")

    choose(guest, "you", "X")
    leave_anyway(guest, re.compile("your friend can claim it in 1 minute"))
    expect(status(guest)).to_have_text("Waiting for your friend to join")
    expect(status(host)).to_have_text("Your turn")  # the host on move is never told to wait
    expect(host.locator("#absence")).to_have_text(
        re.compile(r"^Your friend left · you can claim the win in 0:[0-5]\d$"))
    expect(host.locator("#claim")).to_have_text(re.compile(r"^Claim the win in 0:[0-5]\d$"))
    expect(host.locator("#claim")).to_have_attribute("aria-disabled", "true")
    assert problems == [], "\n".join(problems)


def test_abort_before_both_moved_and_resign_after(open_page):
    host, guest, _ = seat_together(open_page, "phone", "desktop")
    play({"host": host}, [(4, "host")])
    expect(guest.locator("#abort")).to_be_visible()
    host.locator("#new-game").click()  # X moved, O not yet: leaving calls the game off
    leave_anyway(host, "The game is cancelled: nobody wins, and it counts nowhere.")
    expect(status(guest)).to_have_text("Game cancelled")
    expect(guest.locator("#rematch")).to_be_enabled()  # one tap to a new game with the friend
    expect(status(host)).to_have_text("Waiting for your friend to join")

    # Against the AI, Resign asks, and the loss is counted (a first visit plays the easy AI).
    page = open_page("phone")
    expect(status(page)).to_have_text("Your turn")
    cell(page, 4).tap()
    expect(page.locator(".cell[data-mark='O']")).to_have_count(1)
    expect(page.locator("#abort")).to_be_visible()  # one move in: leaving costs nothing yet
    page.locator(".cell[aria-disabled='false']").first.tap()
    expect(page.locator(".cell[data-mark='O']")).to_have_count(2)
    page.locator("#resign").tap()
    dialog = page.get_by_role("dialog", name="Resign this game?")
    expect(dialog).to_contain_text("It counts as a loss against the AI.")
    dialog.locator("[data-leave='go']").tap()
    expect(status(page)).to_have_text("You resigned")
    expect(page.locator("#record tr[data-level='easy'] [data-stat='losses']")).to_have_text("1")
    expect(page.locator("#rematch")).to_be_enabled()


def test_a_rematch_offer_is_declined_then_accepted_and_nobody_is_pulled_in(open_page):
    host, guest, link = seat_together(open_page, "desktop", "phone")
    watcher = open_page("desktop", path=link)
    pages = {"host": host, "guest": guest}
    play(pages, X_WINS)
    expect(status(host)).to_have_text("You win!")
    expect(status(guest)).to_have_text("Your friend wins")
    problems: list[str] = []

    host.locator("#rematch").click()
    expect(host.locator("#offer-text")).to_have_text("Rematch offered — waiting for your friend")
    expect(host.locator("#withdraw")).to_be_visible()
    expect(guest.locator("#offer-text")).to_have_text("Your friend wants a rematch")
    expect(guest.locator("#accept")).to_be_visible()
    expect(guest.locator("#decline")).to_be_visible()
    expect(guest.locator("#announce")).to_contain_text("Your friend wants a rematch")
    expect(watcher.locator("#offer-text")).to_have_text("X wants a rematch")
    audit(host, "a rematch offered, waiting", problems)
    audit(guest, "a rematch offer to answer", problems)

    guest.locator("#decline").click()
    expect(host.locator("#offer-text")).to_have_text("")
    expect(host.locator("#detail")).to_be_visible()
    expect(host.locator("#announce")).to_contain_text("Your friend declined the rematch")
    expect(host.locator("#rematch")).to_be_enabled()
    expect(guest.locator("#decline")).to_be_hidden()

    # The guest offers this time, while the host steps back through the review.
    host.locator("#review [data-step='back']").click()
    expect(host.locator("#board-wrap")).to_have_class(re.compile("is-replay"))
    guest.locator("#rematch").click()
    expect(host.locator("#offer-text")).to_have_text("Your friend wants a rematch")
    expect(host.locator("#board-wrap")).to_have_class(re.compile("is-replay"))  # not yanked
    expect(status(host)).to_have_text("You win!")
    watcher.locator("#review [data-step='first']").click()  # reading the review too
    host.locator("#accept").click()

    # Sides swap: the guest (who asked) follows; the host accepted.
    expect(status(host)).to_have_text("Your friend's turn")
    expect(status(guest)).to_have_text("Your turn")
    # The watcher, in the middle of the review, is told and follows when it wants to.
    expect(watcher.locator("#follow")).to_be_visible()
    expect(watcher.locator("#announce")).to_have_text("A rematch has started")
    expect(status(watcher)).to_have_text("You are watching — X wins")
    audit(watcher, "a rematch to follow", problems)
    watcher.locator("#follow").click()
    expect(status(watcher)).to_have_text("You are watching — X to move")
    assert host.url == guest.url == watcher.url != link
    expect(host.locator("#player-o .player-name")).to_have_text("You")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_names_score_watchers_and_reactions(open_page, device):
    host, guest, link = seat_together(open_page, device, device)
    problems: list[str] = []

    rename(host, "X", "Ana")
    expect(guest.locator("#player-x .player-name")).to_have_text("Ana")
    expect(status(guest)).to_have_text("Ana's turn")
    # Markup in a name is shown as the text it is, everywhere.
    rename(guest, "O", "<b>Ben</b>")
    expect(host.locator("#player-o .player-name")).to_have_text("<b>Ben</b>")
    assert host.locator("#player-o b").count() == 0
    guest.locator("#player-o .player-edit").click()
    audit(guest, "editing a name", problems)
    guest.keyboard.press("Escape")
    expect(guest.locator("#player-o .player-name")).to_have_text("<b>Ben</b>")

    watcher = open_page(device, path=link)
    expect(watcher.locator("#player-x .player-name")).to_have_text("Ana")
    for page in (host, guest, watcher):
        expect(page.locator("#watching")).to_have_text("1 watching")
        expect(page.locator("#score")).to_have_text("Ana 0 · 0 draws · 0 <b>Ben</b>")

    play({"host": host, "guest": guest}, X_WINS)
    expect(status(guest)).to_have_text("Ana wins")
    expect(status(watcher)).to_have_text("You are watching — Ana wins")
    for page in (host, guest, watcher):
        expect(page.locator("#score")).to_have_text("Ana 1 · 0 draws · 0 <b>Ben</b>")

    # A reaction: beside the sender's seat for everyone, said to screen readers, moving nothing.
    # The game's end settles first: the review takes the deck when the analysis comes back,
    # which on a busy machine can be after the status changed.
    for page in (host, watcher):
        expect(page.locator("#deck-review")).to_be_visible()
        page.wait_for_function("() => document.fonts.status === 'loaded'")
        page.evaluate(WATCH_SHIFTS)
    expect(watcher.locator("#reactions")).to_be_hidden()
    guest.locator("[data-reaction='👏']").click()
    for page in (host, guest, watcher):
        bubble = page.locator("#player-o .reaction")
        expect(bubble).to_have_text("👏")
        expect(bubble).to_have_class(re.compile("is-shown"))
    expect(host.locator("#announce")).to_have_text("<b>Ben</b>: applause")
    expect(watcher.locator("#announce")).to_have_text("<b>Ben</b>: applause")
    audit(host, "a reaction shown", problems)
    host.locator("[data-reaction='gg']").click()
    expect(guest.locator("#player-x .reaction")).to_have_text("gg")
    expect(guest.locator("#announce")).to_have_text("Ana: good game")
    for page in (host, watcher):
        assert page.evaluate("() => window.shifted") < 0.001, page.evaluate("() => window.shifts")

    # The score follows the series into the rematch, names and all.
    guest.locator("#rematch").click()
    host.locator("#accept").click()
    expect(status(guest)).to_have_text("Your turn")
    expect(guest.locator("#player-x .player-name")).to_have_text("<b>Ben</b>")
    expect(guest.locator("#player-x .player-edit")).to_be_attached()
    expect(host.locator("#score")).to_have_text("<b>Ben</b> 0 · 0 draws · 1 Ana")
    expect(watcher.locator("#score")).to_have_text("<b>Ben</b> 0 · 0 draws · 1 Ana")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("device", ["phone", "desktop"])
def test_a_timed_game_shows_the_clock_and_ends_on_time(open_page, device):
    host, _ = host_friend_game(open_page, device)
    choose(host, "clock", "10")  # nobody came yet: the untimed game is simply called off
    expect(status(host)).to_have_text("Waiting for your friend to join")
    expect(host.locator("#detail")).to_have_text("You play X and move first · 10 s a move")
    clock = host.locator("#player-x .player-clock")
    expect(clock).to_have_text("0:10")  # there from the start: nothing moves when it runs
    link = share_link(host)
    problems: list[str] = []

    guest = open_page("desktop" if device == "phone" else "phone", path=link)
    watcher = open_page(device, path=link)
    expect(status(guest)).to_have_text("Your friend's turn")
    # A fair start: X's first move has a 30 s window; the 10 s a move runs once both moved.
    expect(host.locator("#player-x")).to_have_class(re.compile("is-ticking"))
    expect(clock).to_have_text(re.compile(r"^0:[12]\d$|^0:30$"))
    # ...and it is said, to the side on move and to the other, not only counted down.
    expect(host.locator("#detail")).to_have_text("Move within 30 s, or it's cancelled")
    expect(guest.locator("#detail")).to_have_text("No move in 30 s cancels the game")
    play({"host": host}, [(4, "host")])
    expect(guest.locator("#detail")).to_have_text("Move within 30 s, or it's cancelled")
    expect(guest.locator("#announce")).to_have_text(
        "Your friend played the centre. Your turn. Move within 30 s, or it's cancelled")
    expect(host.locator("#detail")).to_have_text("No move in 30 s cancels the game")
    play({"guest": guest}, [(0, "guest")])
    expect(host.locator("#detail")).to_have_text("Your friend played the top left")
    expect(host.locator("#player-x")).to_have_class(re.compile("is-ticking"))
    expect(clock).to_have_text(re.compile(r"^0:0\d$"))
    host.reload()  # the clock is the server's: a reload does not give the time back
    expect(host.locator("#player-x")).to_have_class(re.compile("is-ticking"))
    expect(clock).to_have_text(re.compile(r"^0:0\d$"))
    # The page settled after the reload (its fonts in: the reactions' emoji font can land late
    # on a busy machine and reflow the row), then only what the ticking moves is counted.
    host.wait_for_function("() => document.fonts.status === 'loaded'")
    host.evaluate(WATCH_SHIFTS)
    expect(watcher.locator("#player-x .player-clock")).to_have_text(re.compile(r"^0:0\d$"))
    expect(host.locator("#player-x")).to_have_class(re.compile("is-low"), timeout=10_000)
    expect(host.locator("#announce")).to_have_text(re.compile(r"^\d seconds left$"))
    shifted, moved = host.evaluate("() => [window.shifted, window.shifts]")
    assert shifted < 0.001, f"the clock ticking moved {moved}"
    audit(host, "a timed game running, in its last seconds", problems)

    # X never moves: the server ends the game by itself, and everybody sees it.
    expect(status(host)).to_have_text("Out of time — your friend wins", timeout=15_000)
    expect(status(guest)).to_have_text("You win on time")
    expect(status(watcher)).to_have_text("You are watching — O wins on time")
    expect(host.locator("#player-x")).not_to_have_class(re.compile("is-ticking"))
    assert problems == [], "\n".join(problems)


def test_a_timed_seat_shows_the_whole_name_beside_its_clock_on_a_320_px_phone(open_page):
    small = {"viewport": {"width": 320, "height": 568}, "has_touch": True, "is_mobile": True}
    host, _ = host_friend_game(open_page, small)
    choose(host, "clock", "30")
    expect(host.locator("#player-x .player-clock")).to_have_text("0:30")
    name = host.locator("#player-x .player-name")
    expect(name).to_have_text("You")
    # The seat holds the mark, the name, the clock and the pencil: "You", not "Y…".
    whole = name.evaluate("(element) => element.scrollWidth <= element.clientWidth")
    assert whole, "the player's own name is cut short beside the clock"
