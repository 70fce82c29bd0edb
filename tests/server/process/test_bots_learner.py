"""A learner's path with only what the site serves and `python3 -I` (issue 34).

The bots are made on the site's form, the SDK and the example are downloaded from it and run
with `python -I -S` (no ttt, no site-packages) and no `--server` (the served file knows its
site). A bug in `move` ends that game `resign` within 2 s with the traceback on stderr; a
classic-only bot is never offered Ultimate; a second copy of a bot stops the first (exit 3);
Ctrl-C ends with a summary and exit 0, and the bot is offline at once.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.support.servers import Server
from tests.support.waiting import eventually

PY = sys.executable
OPERATOR = "operator-token-for-the-learner-test-0123456789"

RAISES_ON_THIRD_CALL = '''import time

calls = 0


def pick(game):
    return game["legal"][99]         # line 7: the bug


def move(game):
    global calls
    calls += 1
    if calls == 3:
        with open("raised.at", "w") as out:
            out.write(repr(time.time()))
        return pick(game)
    return game["legal"][0]
'''

RETURNS_A_BOARD = '''import time


def move(game):                      # a tutorial's ai_move: the new board, not a cell
    board, cell = game["board"], game["legal"][0]
    with open("returned.at", "w") as out:
        out.write(repr(time.time()))
    return board[:cell] + game["you"] + board[cell + 1:]
'''

SLOW = '''import time


def move(game):
    time.sleep(0.3)
    return game["legal"][0]
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    home = tmp_path_factory.mktemp("learner")
    server = Server({"TTT_STORE": f"sqlite:///{home / 'ttt.sqlite3'}",
                     "TTT_SECRET_KEY": "learner-test", "TTT_CREATE_RATE": "100000",
                     "TTT_MAX_LIVE_PER_ADDRESS": "100000", "TTT_BOT_CREATE_RATE": "1000",
                     "TTT_BOT_MAX_PER_PERSON": "50", "TTT_OPERATOR_TOKEN": OPERATOR}).start()
    yield server
    server.stop()


@pytest.fixture
def desk(site, tmp_path):
    """A learner's folder: the served sdk.py and minimax.py, nothing else."""
    sdk = requests.get(site.url + "/bots/sdk.py", timeout=10)
    assert sdk.status_code == 200
    (tmp_path / "sdk.py").write_bytes(sdk.content)
    example = requests.get(site.url + "/bots/examples/minimax.py", timeout=10)
    assert example.status_code == 200 and "def move(game)" in example.text
    (tmp_path / "minimax.py").write_text(example.text)
    return tmp_path


person = requests.Session()


def make_bot(site, desk: Path, name: str, variants=("classic",)) -> str:
    """A bot made on the site's form, its token saved as the page says; the token file."""
    page = person.post(site.url + "/bots/new",
                       data={"name": name, "about": "", "variants": list(variants)},
                       headers={"Origin": site.url}, timeout=10)
    assert page.status_code == 200, page.text
    token = re.search(r'id="bot-token"[^>]*value="([^"]+)"', page.text, re.S).group(1)
    (desk / f"{name}.token").write_text(token + "\n")
    return f"{name}.token"


started: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _tidy():
    """Every SDK process a test started is gone after it, its pipes closed."""
    yield
    while started:
        process = started.pop()
        process.kill()
        process.wait(30)
        for pipe in (process.stdout, process.stderr):
            pipe.close()


def sdk(desk: Path, *args: str) -> subprocess.Popen:
    """`python -I -S sdk.py ...` in the learner's folder (no ttt, no site-packages)."""
    process = subprocess.Popen([PY, "-I", "-S", "sdk.py", *args], cwd=desk, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started.append(process)
    return process


class Lines:
    """A process's stderr read as it comes, each line with the time it came."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[tuple[float, str]] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stderr:
            self.lines.append((time.time(), line))

    def when(self, text: str, timeout: float = 60) -> float:
        return eventually(lambda: next((at for at, line in list(self.lines) if text in line),
                                       None), timeout,
                          lambda: f"no line with {text!r} in:\n{self.text()}")

    def text(self) -> str:
        return "".join(line for _, line in self.lines)

    def join(self) -> None:
        self._thread.join(10)


def finish(process: subprocess.Popen, lines: Lines, timeout: float = 90) -> dict:
    out = process.stdout.read()
    process.wait(timeout)
    lines.join()
    return {**json.loads(out.strip().splitlines()[-1]), "returncode": process.returncode}


def game_of(site, game_id: str) -> dict:
    answer = requests.get(f"{site.url}/api/ladder/game/{game_id}", timeout=10,
                          headers={"Authorization": f"Bearer {OPERATOR}"}).json()
    return answer["game"]


def bots(site) -> dict[str, dict]:
    return {b["name"]: b for b in requests.get(site.url + "/api/bots", timeout=10).json()["bots"]}


def test_the_served_sdk_knows_its_site(site, desk):
    text = (desk / "sdk.py").read_text()
    assert f'DEFAULT_SERVER = "{site.url}"' in text
    shown = subprocess.run([PY, "-I", "-S", "sdk.py", "--help"], cwd=desk, text=True,
                           capture_output=True, timeout=60)
    assert shown.returncode == 0 and f"(default: {site.url})" in shown.stdout
    token = make_bot(site, desk, "wrongsite")
    refused = subprocess.run([PY, "-I", "-S", "sdk.py", "minimax.py", "--token-file", token,
                              "--server", "http://127.0.0.1:9"], cwd=desk, text=True,
                             capture_output=True, timeout=60)
    assert refused.returncode == 1 and "cannot reach http://127.0.0.1:9" in refused.stderr


@pytest.mark.parametrize(("program", "stamp", "shown"), [
    (RAISES_ON_THIRD_CALL, "raised.at", ['line 7, in pick', "IndexError"]),
    (RETURNS_A_BOARD, "returned.at", ["not a cell number", "a board?"]),
])
def test_a_bad_move_resigns_that_game_within_two_seconds_and_shows_why(site, desk, program,
                                                                       stamp, shown):
    (desk / "mybot.py").write_text(program)
    name = "raiser" if stamp == "raised.at" else "boarder"
    token = make_bot(site, desk, name)
    bot = sdk(desk, "mybot.py", "--token-file", token, "--games", "2", "--opponent",
              "ai:easy")
    lines = Lines(bot)
    try:
        ended = lines.when("over: lost (resign)")
        result = finish(bot, lines)
    finally:
        bot.kill()
    went_wrong = float((desk / stamp).read_text())
    assert ended - went_wrong < 2.0, lines.text()  # resigned at once, not lost on time
    err = lines.text()
    for words in shown:
        assert words in err, err
    if stamp == "raised.at":
        assert "Traceback (most recent call last)" in err and "mybot.py" in err
        assert "sdk.py" not in err.split("Traceback")[1].split("legal cells")[0]
    assert "legal cells" in err and "the position" in err
    game_id = re.search(r"your move failed in game (\S+) ===", err).group(1)
    game = game_of(site, game_id)
    assert (game["status"], game["reason"]) == ("won", "resign")
    assert f"{site.url}/g/{game_id}" in err  # whole ids, full links
    assert result["returncode"] == 0 and result["games"] == 2, result
    assert result["reasons"]["resign"] >= 1 and "time" not in result["reasons"], result
    assert sum(result["errors"].values()) >= 1, result


def test_a_classic_only_bot_is_never_offered_ultimate(site, desk):
    token = make_bot(site, desk, "classical")
    bot = sdk(desk, "minimax.py", "--token-file", token)  # its VARIANTS: classic only
    lines = Lines(bot)
    try:
        lines.when("connected to")
        listed = bots(site)["classical"]
        assert listed["variants"] == ["classic"] and listed["online"]
        page = person.get(site.url + "/bot/classical", timeout=10).text
        assert "Play this bot: classic" in page and "Ultimate" not in page.split(
            'class="actions"')[1].split("</div>")[0]
        forged = person.post(site.url + "/bot/classical/play", data={"variant": "ultimate"},
                             headers={"Origin": site.url}, timeout=10, allow_redirects=False)
        assert forged.status_code == 409 and "classic only" in forged.text
        other = make_bot(site, desk, "challenger", variants=("classic", "ultimate"))
        refused = requests.post(site.url + "/api/bot/challenge", timeout=10, json={
            "opponent": "bot:classical", "variant": "ultimate"}, headers={
            "Authorization": f"Bearer {(desk / other).read_text().strip()}"})
        assert refused.status_code == 409
        assert refused.json()["error"] == {
            "code": "not_allowed", "message": "classical plays classic only, not ultimate"}
    finally:
        bot.send_signal(signal.SIGINT)
        finish(bot, lines)


def test_a_second_copy_of_a_bot_stops_the_first_with_exit_code_3(site, desk):
    (desk / "slow.py").write_text(SLOW)
    token = make_bot(site, desk, "twice")
    first = sdk(desk, "slow.py", "--token-file", token, "--opponent", "ai:easy")
    first_lines = Lines(first)
    second = None
    try:
        first_lines.when("connected to")
        second = sdk(desk, "slow.py", "--token-file", token)
        second_lines = Lines(second)
        result = finish(first, first_lines, timeout=30)
        assert result["returncode"] == 3, first_lines.text()
        assert "another program is now playing as twice (this one stops)" in first_lines.text()
        assert "reconnecting" not in first_lines.text()
        second_lines.when("connected to")
        assert second.poll() is None  # the new copy plays on
    finally:
        first.kill()
        if second is not None:
            second.send_signal(signal.SIGINT)
            second.wait(30)


def test_ctrl_c_resigns_the_game_on_prints_the_summary_and_exits_0(site, desk):
    (desk / "slow.py").write_text(SLOW)
    token = make_bot(site, desk, "stopper")
    bot = sdk(desk, "slow.py", "--token-file", token, "--opponent", "ai:easy")
    lines = Lines(bot)
    try:
        lines.when("game ")  # a game has started
        assert bots(site)["stopper"]["online"]
        bot.send_signal(signal.SIGINT)
        result = finish(bot, lines, timeout=30)
    finally:
        bot.kill()
    err = lines.text()
    assert result["returncode"] == 0 and "Traceback" not in err, err
    assert re.search(r"\d+ games: \d+ won, \d+ drawn, \d+ lost", err), err
    assert result["games"] >= 1 and result["error"] is None, result
    # A clean close: offline at once, not at the next ping.
    eventually(lambda: not bots(site)["stopper"]["online"], 5, "still online after a clean exit",
               interval=0.1)
