"""Everyone can play: axe-core finds nothing in any state, in light and dark; a whole game by
keyboard alone; the words a screen reader hears; phones from 320 px to tablets, upright and on
their side; the install manifest; the weight and speed of the first load."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
import requests
from playwright.sync_api import Page, expect

from tests.browser.conftest import device_options
from tests.browser.test_learn import pass_and_play
from tests.browser.test_play import PERFECT, board, cell, choose, leave_anyway

pytestmark = [pytest.mark.browser, pytest.mark.server]

AXE = (Path(__file__).parent / "vendor" / "axe.min.js").read_text(encoding="utf-8")
SMALL = {"width": 320, "height": 640}
DEVICES = ["desktop", SMALL, "Pixel 7", "iPhone 13"]
DEVICE_IDS = ["desktop", "320x640", "pixel-7", "iphone-13"]

SQUARES = "top left|top|top right|left|centre|right|bottom left|bottom|bottom right"
MOVE_SAID = rf"(AI|You) played the ({SQUARES})"

SETTLE = """() => new Promise(requestAnimationFrame)
    .then(() => new Promise(requestAnimationFrame))
    .then(() => Promise.all(document.getAnimations()
        .filter((animation) => Number.isFinite(animation.effect?.getComputedTiming().endTime))
        .map((animation) => animation.finished.catch(() => null))))"""

RUN_AXE = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations
    .map((v) => `${v.id} (${v.impact}): ${v.help}: `
        + v.nodes.map((node) => node.target.join(" ")).join(", "))"""

# Whether the focused control shows a focus ring (on its box, for the settings and the switch).
RING = """() => {
    const focused = document.activeElement;
    let drawn = focused;
    if (focused.matches(".pick-select")) drawn = focused.closest(".pick");
    else if (focused.matches(".switch input")) drawn = focused.closest("label");
    const style = getComputedStyle(drawn);
    return style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2;
}"""

# Visible controls smaller than a fingertip (48 x 48 CSS px); the switch by its label.
SMALL_TARGETS = """() => [...document.querySelectorAll(
        "a[href], button, input, select, [tabindex]")]
    .filter((control) => control.getClientRects().length > 0)
    .map((control) => {
        const drawn = control.matches(".switch input") ? control.closest("label") : control;
        const box = drawn.getBoundingClientRect();
        return [control.id || control.className || control.tagName, box.width, box.height];
    })
    .filter(([, width, height]) => width < 48 || height < 48)
    .map(([name, width, height]) => `${name} ${width}x${height}`)"""


def audit(page: Page, state: str, problems: list[str]) -> None:
    """Run axe-core on the page as it is, in light and in dark; add what it finds to `problems`."""
    if not page.evaluate("() => typeof axe === 'object'"):
        # evaluate, not add_script_tag: the page's CSP refuses an injected inline <script>.
        page.evaluate(AXE)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert page.evaluate("(s) => matchMedia(`(prefers-color-scheme: ${s})`).matches", scheme)
        # A card fading in has no colours worth judging yet: wait for the page to come to rest.
        page.evaluate(SETTLE)
        for violation in page.evaluate(RUN_AXE):
            problems.append(f"{state}, {scheme}: {violation}")
    page.emulate_media(color_scheme="light")


def fits(page: Page, state: str, problems: list[str]) -> None:
    """No sideways scrolling, and every control big enough for a finger."""
    page.evaluate(SETTLE)
    width, inner = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    if width > inner:
        problems.append(f"{state}: the page scrolls sideways ({width} > {inner} px)")
    for target in page.evaluate(SMALL_TARGETS):
        problems.append(f"{state}: target smaller than 48 x 48 px: {target}")


def rotate(page: Page) -> None:
    """Turn the device: upright to on its side, or back."""
    size = page.viewport_size
    page.set_viewport_size({"width": size["height"], "height": size["width"]})


@pytest.mark.parametrize("device", DEVICES, ids=DEVICE_IDS)
def test_every_state_passes_axe_and_fits_the_screen(open_page, chromium, live_server, device):
    page = open_page(device)
    # axe judges each state at rest; without motion the page gets there at once, in the same
    # colours and places (the animations only lead up to them).
    page.emulate_media(reduced_motion="reduce")
    status = page.locator("#status")
    announced = page.locator("#announce")
    axe: list[str] = []
    layout: list[str] = []
    expect(status).to_have_text("Your turn")
    audit(page, "a new game", axe)
    fits(page, "a new game", layout)
    # A quick second tap is a second move, never a zoom; pinching still zooms.
    assert page.evaluate("() => getComputedStyle(document.documentElement).touchAction") == (
        "manipulation")

    cell(page, 4).click()
    expect(page.locator(".cell[data-mark='O']")).to_have_count(1)
    expect(status).to_have_text("Your turn")
    expect(announced).to_have_text(re.compile(r"^AI played the [a-z ]+\. Your turn$"))
    audit(page, "mid-game", axe)

    page.locator("#evaluations-switch").click()
    expect(page.locator(".cell[data-result]")).to_have_count(7)
    audit(page, "evaluations shown", axe)
    page.locator("#evaluations-switch").click()
    expect(page.locator(".cell[data-result]")).to_have_count(0)
    page.locator(".cell[aria-disabled='false']").first.click()  # a second move: now it counts
    expect(page.locator(".cell[data-mark='O']")).to_have_count(2)

    choose(page, "mode", "friend")
    expect(page.get_by_role("dialog")).to_be_visible()
    audit(page, "asked before leaving a game in progress", axe)
    leave_anyway(page, "You resign: this counts as a loss against the AI.")
    expect(page.locator("#share-qr")).to_have_js_property("complete", True)
    audit(page, "a friend game waiting for its second player", axe)
    fits(page, "the share panel", layout)

    pass_and_play(page, [0, 3, 1, 4, 2])
    expect(status).to_have_text("X wins")
    expect(announced).to_have_text("X played the top right. X wins")
    mistake = page.locator("#review .mistake[data-side='O'] .mistake-text")
    expect(mistake).to_contain_text("turned a draw into a loss")
    audit(page, "game over, with the review", axe)
    fits(page, "game over, with the review", layout)
    page.locator("#review [data-step='back']").click()
    expect(page.locator("#board-wrap")).to_have_class(re.compile("is-replay"))
    audit(page, "stepping through the review", axe)
    page.locator("#tab-record").click()
    expect(page.locator("#record")).to_be_visible()
    audit(page, "game over, the record tab", axe)
    if device != "desktop":
        rotate(page)
        fits(page, "on its side, game over", layout)
        rotate(page)

    page.locator("#tab-review").click()
    page.locator("#review .mistake[data-side='O'] [data-review='try']").click()
    expect(page.locator("#practice")).to_be_visible()
    expect(status).to_have_text("Your turn")
    audit(page, "a practice game", axe)
    fits(page, "a practice game", layout)

    if device != "desktop":
        rotate(page)
        fits(page, "on its side, a practice game", layout)
        box = page.locator("#board").bounding_box()
        if box["y"] + box["height"] > page.viewport_size["height"]:
            layout.append("on its side: the board does not fit on the screen")
        audit(page, "on its side, a practice game", axe)
        rotate(page)  # upright again

    page.goto("/r/40812")
    audit(page, "the replay page", axe)
    fits(page, "the replay page", layout)
    # Its own context: the 404 answer is logged as a console error, which open_page fails.
    context = chromium.browser.new_context(base_url=live_server, **device_options(chromium, device))
    try:
        missing = context.new_page()
        assert missing.goto("/r/4481").status == 404
        audit(missing, "the 404 page", axe)
        fits(missing, "the 404 page", layout)
    finally:
        context.close()

    print(*axe, *layout, sep="\n")
    assert axe == [], "axe-core found problems:\n" + "\n".join(axe)
    assert layout == [], "\n".join(layout)


def test_a_tablet_upright_and_on_its_side_never_scrolls_sideways(open_page):
    page = open_page("iPad (gen 7)")
    layout: list[str] = []
    expect(page.locator("#status")).to_have_text("Your turn")
    choose(page, "mode", "friend")
    expect(page.locator("#share")).to_be_visible()
    fits(page, "upright, the share panel", layout)
    pass_and_play(page, [0, 3, 1, 4, 2])
    expect(page.locator("#review")).to_be_visible()
    fits(page, "upright, game over", layout)
    rotate(page)
    fits(page, "on its side, game over", layout)
    assert layout == [], "\n".join(layout)


def focus_ring(page: Page) -> None:
    focused = page.evaluate("() => document.activeElement.outerHTML.slice(0, 80)")
    assert page.evaluate(RING), f"no focus ring on {focused}"


def tab_to(page: Page, selector: str, backwards: bool = False, limit: int = 12) -> None:
    """Press Tab (or Shift+Tab) until `selector` has the focus; every stop shows a focus ring."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        focus_ring(page)
        if page.evaluate("(selector) => document.activeElement.matches(selector)", selector):
            return
    raise AssertionError(f"{selector} is not reached by {'Shift+' if backwards else ''}Tab")


def arrow_to(page: Page, target: int) -> None:
    """Move the focus on the board to cell `target` with the arrow keys."""
    at = page.evaluate("() => Number(document.activeElement.dataset.cell)")
    rows, columns = target // 3 - at // 3, target % 3 - at % 3
    for _ in range(abs(rows)):
        page.keyboard.press("ArrowDown" if rows > 0 else "ArrowUp")
    for _ in range(abs(columns)):
        page.keyboard.press("ArrowRight" if columns > 0 else "ArrowLeft")
    expect(cell(page, target)).to_be_focused()
    focus_ring(page)


def test_a_whole_game_by_keyboard_alone_with_a_visible_focus_ring(open_page):
    page = open_page(preferences=PERFECT)
    status = page.locator("#status")
    announced = page.locator("#announce")
    expect(status).to_have_text("Your turn")
    expect(announced).to_have_text("You play X against the perfect AI. Your turn")

    # A screen reader meets a 3 x 3 grid of squares named by position and content.
    grid = page.get_by_role("grid", name="Board")
    expect(grid.get_by_role("row")).to_have_count(3)
    expect(grid.get_by_role("gridcell")).to_have_count(9)
    expect(grid.get_by_role("button", name="row 1, column 2, empty", exact=True)).to_have_count(1)

    tab_to(page, "#sound", limit=1)  # the first stop: sound effects, off until turned on
    expect(page.locator("#sound")).to_have_attribute("aria-pressed", "false")
    tab_to(page, "select[name='mode']", limit=1)  # then the settings, in sight above the board
    tab_to(page, "[data-cell]", limit=4)
    expect(cell(page, 0)).to_be_focused()

    page.evaluate("""() => {
        window.shifted = 0;
        new PerformanceObserver((list) => {
            for (const entry of list.getEntries()) window.shifted += entry.value;
        }).observe({type: "layout-shift"});
    }""")
    for _ in range(5):
        target = board(page).index(".")
        arrow_to(page, target)
        page.keyboard.press("Enter")
        expect(cell(page, target)).to_have_attribute("data-mark", "X")
        expect(status).not_to_have_text("AI is thinking…")
        expect(announced).to_have_text(re.compile(rf"^{MOVE_SAID}\. (Your turn|The AI wins|Draw)$"))
        if status.text_content() != "Your turn":
            break
    expect(status).to_have_text("The AI wins")
    expect(announced).to_have_text(re.compile(r"^AI played the [a-z ]+\. The AI wins$"))
    expect(page.locator("#review")).to_be_visible()
    page.evaluate(SETTLE)
    # Neither the AI's replies nor the review opening moved anything on the page.
    assert page.evaluate("() => window.shifted") < 0.01

    tab_to(page, "#tab-review")  # after the game, the review first; the record a key away
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tab-record")).to_be_focused()
    expect(page.locator("#tab-record")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#review")).to_be_hidden()
    expect(page.locator("#record")).to_be_visible()
    tab_to(page, "#rematch", backwards=True)
    page.keyboard.press("Enter")  # sides swap: the AI opens, and the keys are on the board
    expect(page.locator("#player-o .player-name")).to_have_text("You")
    expect(status).to_have_text("Your turn")
    expect(page.locator("[data-cell]:focus")).to_have_count(1)
    expect(announced).to_have_text(
        re.compile(r"^You play O this time\. AI played the [a-z ]+\. Your turn$"))
    tab_to(page, "select[name='level']", backwards=True)
    page.keyboard.press("ArrowUp")  # Perfect -> Hard: a new game against it, on the side shown
    expect(page.locator("select[name='you']")).to_have_value("O")  # the side played now
    expect(page.locator("#player-x .player-name")).to_have_text("AI · Hard")
    expect(status).to_have_text("Your turn")
    expect(page.locator("select[name='level']")).to_be_focused()
    expect(page.locator("select[name='level']")).to_have_value("hard")

    tab_to(page, "#evaluations")
    page.keyboard.press("Space")
    expect(page.locator(".cell[data-result]")).to_have_count(board(page).count("."))
    tab_to(page, "#hint-button")
    page.keyboard.press("Enter")
    expect(page.locator("#hint-count")).to_have_text("1")
    expect(announced).to_have_text(re.compile(r"^Hint: "))
    tab_to(page, "[data-cell]", backwards=True)
    free = board(page).index(".")
    page.keyboard.press(str(free + 1))  # or a digit, 1 to 9
    expect(cell(page, free)).to_have_attribute("data-mark", "O")


# Counts the blips the page starts: a stand-in for a speaker.
COUNT_BLIPS = """window.blips = 0;
const start = OscillatorNode.prototype.start;
OscillatorNode.prototype.start = function (...args) {
    window.blips += 1;
    return start.apply(this, args);
};"""

# The count once it reaches `least`, or after a second, whichever comes first.
BLIPS = """(least) => new Promise((resolve) => {
    const until = performance.now() + 1000;
    const tick = () => (window.blips >= least || performance.now() > until
        ? resolve(window.blips) : setTimeout(tick, 10));
    tick();
})"""


def test_sound_is_off_until_turned_on_and_then_remembered(open_page):
    page = open_page()
    page.context.add_init_script(COUNT_BLIPS)
    page.reload()
    status = page.locator("#status")
    sound = page.locator("#sound")
    expect(status).to_have_text("Your turn")
    expect(sound).to_have_attribute("aria-pressed", "false")
    cell(page, 4).click()
    expect(page.locator(".cell[data-mark='O']")).to_have_count(1)
    assert page.evaluate("() => window.blips") == 0  # quiet by default

    sound.click()
    expect(sound).to_have_attribute("aria-pressed", "true")
    assert page.evaluate(BLIPS, 1) == 1  # a sample of what it sounds like
    free = board(page).index(".")
    cell(page, free).click()
    expect(page.locator(".cell[data-mark='O']")).to_have_count(2)
    assert page.evaluate(BLIPS, 3) == 3  # our mark, then the AI's

    page.reload()
    expect(sound).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("() => localStorage.getItem('ttt.sound')") == "on"


def png_size(body: bytes) -> tuple[int, int]:
    assert body[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", body[16:24])


def test_the_manifest_makes_the_game_installable(live_server):
    page = requests.get(live_server + "/", timeout=5).text
    assert '<link rel="manifest" href="/manifest.webmanifest">' in page
    touch_icon = re.search(r'<link rel="apple-touch-icon" href="([^"]+)">', page)
    assert touch_icon
    answer = requests.get(live_server + touch_icon[1], timeout=5)
    assert answer.status_code == 200 and answer.headers["Content-Type"] == "image/png"
    assert png_size(answer.content) == (180, 180)

    answer = requests.get(live_server + "/manifest.webmanifest", timeout=5)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"].startswith("application/manifest+json")
    manifest = answer.json()
    assert manifest["name"] and 0 < len(manifest["short_name"]) <= 12
    assert manifest["start_url"] == "/" and manifest["display"] == "standalone"
    for colour in ("theme_color", "background_color"):
        assert re.fullmatch(r"#[0-9a-f]{6}", manifest[colour])
    sizes = set()
    for icon in manifest["icons"]:
        answer = requests.get(live_server + icon["src"], timeout=5)
        assert answer.status_code == 200, icon["src"]
        assert answer.headers["Content-Type"] == icon["type"] == "image/png"
        width, height = png_size(answer.content)
        assert icon["sizes"] == f"{width}x{height}", icon["src"]
        sizes.add((icon["sizes"], icon.get("purpose", "any")))
    assert {("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")} <= sizes


def test_the_first_load_is_light_and_the_board_soon_playable(chromium, live_server):
    # A phone on its first visit: nothing cached, gzip offered as browsers do.
    context = chromium.browser.new_context(
        base_url=live_server, **device_options(chromium, "Pixel 7"))
    try:
        page = context.new_page()
        network = context.new_cdp_session(page)
        network.send("Network.enable")
        sizes: dict[str, int] = {}
        encodings: dict[str, tuple[str, str]] = {}
        socket_bytes = [0]
        network.on("Network.loadingFinished",
                   lambda event: sizes.__setitem__(event["requestId"], event["encodedDataLength"]))
        network.on("Network.responseReceived", lambda event: encodings.__setitem__(
            event["requestId"],
            (event["response"]["url"], event["response"]["headers"].get("Content-Encoding", ""))))
        for frame in ("Network.webSocketFrameReceived", "Network.webSocketFrameSent"):
            network.on(frame, lambda event: socket_bytes.__setitem__(
                0, socket_bytes[0] + len(event["response"]["payloadData"])))

        page.goto("/")
        expect(page.locator("#app")).to_have_attribute("data-ready", "playable")
        ready = page.evaluate(
            "() => performance.getEntriesByName('ttt:board-ready')[0].startTime")
        expect(page.locator("[data-cell='0']")).to_have_attribute("aria-disabled", "false")
        total = sum(sizes.values()) + socket_bytes[0]
        text = [url for request, (url, encoding) in encodings.items()
                if re.search(r"\.(js|css)$|/$", url) and encoding != "gzip"]
        print(f"\nfirst load: {total:,} bytes transferred ({len(sizes)} responses, "
              f"{socket_bytes[0]:,} bytes of WebSocket frames); playable after {ready:.0f} ms")
        assert text == [], "sent without gzip"
        assert total < 100_000
    finally:
        context.close()
