"""Browser fixtures: Debian's Chromium driven by Playwright's sync API (no pytest plugin).

`live_server` (tests/conftest.py) is a real `python app.py` on a fresh memory store. Every
page gets its own browser context, so its own cookie: a new player with an empty record.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.servers import Server, in_ci

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DESKTOP = {"viewport": {"width": 1280, "height": 800}}


@dataclass
class Chromium:
    browser: object
    devices: dict


@pytest.fixture(scope="session")
def chromium():
    """One Chromium for the whole run; skipped without it, except in CI where that fails."""
    if not os.path.exists(CHROMIUM):
        if in_ci():
            pytest.fail(f"{CHROMIUM} is required in CI for the browser tests")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); CI fails instead")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if in_ci():
            raise
        pytest.skip("playwright is not installed (pip install -e '.[dev]'); CI fails instead")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield Chromium(browser, playwright.devices)
        browser.close()


def descriptor(chromium: Chromium, name: str) -> dict:
    """A Playwright device descriptor, minus the key new_context does not take (some, such as
    "iPhone 13", name WebKit: here they run in Chromium)."""
    options = dict(chromium.devices[name])
    options.pop("default_browser_type", None)
    return options


def phone(chromium: Chromium) -> dict:
    """The Pixel 7 descriptor."""
    return descriptor(chromium, "Pixel 7")


def device_options(chromium: Chromium, device) -> dict:
    """new_context options for "desktop", "phone", a device name, a viewport dict, or the
    options themselves (a dict with a "viewport")."""
    if device == "desktop":
        return DESKTOP
    if device == "phone":
        return phone(chromium)
    if isinstance(device, str):
        return descriptor(chromium, device)
    if "viewport" in device:
        return device
    return {"viewport": device}


# A returning player: saved settings before the page's first script runs, unless it saved its own.
RETURNING = """try {
    if (!localStorage.getItem("ttt.preferences")) localStorage.setItem("ttt.preferences", %s);
} catch {}"""


def note_console(message, problems: list[str]) -> None:
    # A reconnect tried while a test has cut the network: the browser's words, not the page's.
    if message.type == "error" and "net::ERR_INTERNET_DISCONNECTED" not in message.text:
        problems.append(f"console.error: {message.text}")


@pytest.fixture(scope="session")
def quick_server(tmp_path_factory):
    """The base URL of a real server whose claims open after 2 seconds away, not 60."""
    log = tmp_path_factory.mktemp("quick") / "server.log"
    server = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "quick-test",
                     "TTT_CLAIM_AFTER": "2", "TTT_BLIP": "1",  # every browser comes from 127.0.0.1:
                     "TTT_EVENTS_PER_ADDRESS": "0", "TTT_PAGES_PER_ADDRESS": "0"},
                    log=log).start()
    yield server.url
    server.stop()


@pytest.fixture
def open_page(chromium, live_server, request):
    """A factory of pages on the live server (or `server`), each a new player. Console errors
    fail the test; each page's last state is saved to test-artifacts/."""
    contexts = []
    problems: list[str] = []

    def open_page(device="desktop", path="/", color_scheme="light", server=None,
                  motion="reduce", preferences=None):
        """`device`: "desktop", "phone" (Pixel 7), a Playwright device name or a viewport;
        `motion`: "reduce" (no transitions, so a busy machine never clicks one mid-way) unless
        a test asks for "no-preference";
        `preferences`: a returning player's saved settings ({"level": "perfect"}), which the
        page's own choices then replace."""
        context = chromium.browser.new_context(
            base_url=server or live_server, color_scheme=color_scheme, reduced_motion=motion,
            **device_options(chromium, device))
        contexts.append(context)
        if preferences:
            context.add_init_script(RETURNING % json.dumps(json.dumps(preferences)))
        page = context.new_page()
        page.on("console", lambda message: note_console(message, problems))
        page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
        page.goto(path)
        return page

    yield open_page

    # What the pages logged while the test ran: closing a context aborts what it still fetches
    # (the service worker's script, registered a moment after the board is ready), and the
    # browser logs that abort as an error of the page.
    logged = list(problems)
    ARTIFACTS.mkdir(exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    for index, context in enumerate(contexts):
        for page in context.pages:
            page.screenshot(path=str(ARTIFACTS / f"{name}-{index}.png"))
        context.close()
    assert logged == [], "the page logged errors"
