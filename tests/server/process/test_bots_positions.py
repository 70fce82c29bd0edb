"""Issue 40 with only what the site serves and `python3 -I -S`: one answer per position on
the turn's own clock, challenges that give up with a sentence, `time_left` always a number.

A bot whose `move` sleeps 6 s (the 10 s bot deadline) plays the served minimax bot as X and
as O, two games at once: no refused move, no game lost on time. A challenge for Ultimate to
a classic-only bot ends at once with exit code 2 and what to do.
"""

from __future__ import annotations

import html
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.server.process.test_bots_learner import Lines, finish, make_bot, sdk
from tests.server.process.test_bots_learner import _tidy as _tidy  # noqa: F401 - the fixture, used here too
from tests.support.servers import Remote, Server, close_all

OPERATOR = "operator-token-for-the-positions-test-0123456789"

SLOW = '''import time

VARIANTS = ["classic", "ultimate"]


def move(game):
    time.sleep(6)                    # inside the 10 s deadline, but not by much
    return game["legal"][0]
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    home = tmp_path_factory.mktemp("positions")
    server = Server({"TTT_STORE": f"sqlite:///{home / 'ttt.sqlite3'}",
                     "TTT_SECRET_KEY": "positions-test", "TTT_CREATE_RATE": "100000",
                     "TTT_MAX_LIVE_PER_ADDRESS": "100000", "TTT_BOT_CREATE_RATE": "1000",
                     "TTT_BOT_MAX_PER_PERSON": "50", "TTT_OPERATOR_TOKEN": OPERATOR}).start()
    yield server
    server.stop()


@pytest.fixture
def desk(site, tmp_path):
    """A learner's folder: the served sdk.py and minimax.py, nothing else."""
    (tmp_path / "sdk.py").write_bytes(requests.get(site.url + "/bots/sdk.py", timeout=10).content)
    (tmp_path / "minimax.py").write_text(
        requests.get(site.url + "/bots/examples/minimax.py", timeout=10).text)
    return tmp_path


def test_a_slow_legal_bot_never_sends_a_refused_move_nor_loses_on_time(site, desk):
    (desk / "slow.py").write_text(SLOW)
    slow, quick = make_bot(site, desk, "sleeper"), make_bot(site, desk, "quickmax")
    opponent = sdk(desk, "minimax.py", "--token-file", quick)
    opponent_lines = Lines(opponent)
    try:
        opponent_lines.when("waiting for challenges")
        # Four games, two at once: X, O, X, O.
        bot = sdk(desk, "slow.py", "--token-file", slow, "--opponent", "bot:quickmax",
                  "--games", "4", "--parallel", "2")
        lines = Lines(bot)
        result = finish(bot, lines, timeout=240)
    finally:
        opponent.send_signal(signal.SIGINT)
        finish(opponent, opponent_lines)
    err = lines.text()
    assert result["returncode"] == 0 and result["games"] == 4, err
    assert "refused" not in err and "too slow" not in err, err
    assert "time" not in result["reasons"] and result["errors"] == {}, result
    sides = re.findall(r"you are ([XO])\)", err)
    assert sorted(sides) == ["O", "O", "X", "X"], err


def test_a_challenge_the_other_bot_can_never_accept_ends_at_once_with_exit_code_2(site, desk):
    (desk / "slow.py").write_text(SLOW)
    token = make_bot(site, desk, "ultimatist", variants=("classic", "ultimate"))
    classic = make_bot(site, desk, "classicist")
    opponent = sdk(desk, "minimax.py", "--token-file", classic)  # VARIANTS: classic only
    opponent_lines = Lines(opponent)
    try:
        opponent_lines.when("waiting for challenges")
        bot = sdk(desk, "slow.py", "--token-file", token, "--opponent", "bot:classicist",
                  "--variant", "ultimate", "--games", "3")
        lines = Lines(bot)
        began = lines.when(" on http")  # "ultimatist plays classic and ultimate on ..."
        result = finish(bot, lines, timeout=30)
        ended = time.time()
    finally:
        opponent.send_signal(signal.SIGINT)
        finish(opponent, opponent_lines)
    err = lines.text()
    assert result["returncode"] == 2 and result["games"] == 0, err
    assert ended - began < 2.0, err
    assert ("challenge to bot:classicist refused: classicist plays classic only, not "
            "ultimate: run with --variant classic") in err
    assert err.count("refused") == 2, err  # said once, and once more as the reason to stop


def test_time_left_is_a_number_in_every_view_of_a_timed_game(site, desk):
    token = (desk / make_bot(site, desk, "clocked")).read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}

    def call(path, body=None):
        answer = requests.post(site.url + path, json=body or {}, headers=auth, timeout=10)
        return answer.json()

    ai = call("/api/bot/challenge", {"opponent": "ai:easy", "you": "X"})["game"]
    assert ai["time_left"] == 10.0 and "move" in ai["can"]  # the bot's turn, at once
    moved = call(f"/api/bot/game/{ai['id']}/move", {"cell": 4})["game"]
    assert isinstance(moved["time_left"], float) and 0 < moved["time_left"] <= 10
    link = call("/api/bot/challenge", {"opponent": "link", "you": "X", "clock": 10})["game"]
    assert link["seats"]["O"] == "open" and link["time_left"] == 10.0  # the bot's deadline
    untimed = call("/api/bot/challenge", {"opponent": "link", "you": "O"})["game"]
    assert untimed["turn"] == "X" and untimed["time_left"] is None  # a person's, no clock
    for game in (ai, link, untimed):
        call(f"/api/bot/game/{game['id']}/resign")


def test_a_link_game_prints_a_link_to_send_and_one_to_watch_and_timeout_ends_cleanly(site,
                                                                                     desk):
    token = make_bot(site, desk, "linker")
    bot = sdk(desk, "minimax.py", "--token-file", token, "--opponent", "link", "--games", "1",
              "--timeout", "6")
    lines = Lines(bot)
    lines.when("never takes a seat")
    err = lines.text()
    send = re.search(r"send this link .*: (\S+)", err).group(1)
    watch = re.search(r"watch the game here .*: (\S+)", err).group(1)
    assert watch == send + "?watch=1" and send.startswith(site.url + "/g/"), err
    game_id = send.rsplit("/", 1)[1]
    watcher, friend = Remote(site.url), Remote(site.url)
    try:
        watched = watcher.call("join", {"game": game_id, "watch": True})
        assert watched["you"] == "spectator" and watched["game"]["seats"]["O"] == "open"
        assert friend.call("join", {"game": game_id})["you"] == "O"  # the link to send seats
    finally:
        close_all([watcher, friend])
    result = finish(bot, lines, timeout=30)  # --timeout: the game on is ended, a summary, 0
    assert result["returncode"] == 0 and result["error"] is None, lines.text()
    assert "stopping after --timeout 6 s" in lines.text()
    assert re.search(r"1 games: \d+ won, \d+ drawn, \d+ lost, \d+ aborted", lines.text())


def test_sigterm_ends_the_games_like_ctrl_c(site, desk):
    (desk / "slow.py").write_text(SLOW)
    token = make_bot(site, desk, "termed")
    bot = sdk(desk, "slow.py", "--token-file", token, "--opponent", "ai:easy")
    lines = Lines(bot)
    lines.when("you are X")
    bot.send_signal(signal.SIGTERM)
    result = finish(bot, lines, timeout=30)
    err = lines.text()
    assert result["returncode"] == 0 and result["games"] == 1 and "Traceback" not in err, err
    assert "stopping: ending the games in progress" in err


def test_the_token_is_taken_from_an_option_and_never_printed(site, desk):
    secret = "not-a-real-token-0123456789abcdef"
    said = {}
    for args, source in ((["--token", secret], "--token"),
                         (["--token-file", "missing.token"], "--token-file missing.token")):
        ran = subprocess.run([sys.executable, "-I", "-S", "sdk.py", "minimax.py", *args],
                             cwd=desk, text=True, capture_output=True, timeout=60)
        assert ran.returncode == 1 and secret not in ran.stderr + ran.stdout, ran.stderr
        assert source in ran.stderr, ran.stderr
        said[source] = ran.stderr
    assert "refused the token from --token (wrong, or revoked): make a new token on your " \
           f"bot's page ({site.url}/bots)" in said["--token"]
    assert "if you have the token itself, pass it with --token" in said[
        "--token-file missing.token"]


def shape(value):
    """A JSON value's shape: its type, a dict's keys with their shapes, a list's first."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return ["list", shape(value[0]) if value else None]
    return type(value).__name__


def test_the_guides_field_examples_have_the_shape_of_a_real_game(site, desk):
    """Every example in the guide's table of fields has the shape of the same field in a
    real game a bot plays against the AI (the table's own setting: X, mode "ai")."""
    token = (desk / make_bot(site, desk, "shaped")).read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    game = requests.post(site.url + "/api/bot/challenge", headers=auth, timeout=10, json={
        "opponent": "ai:perfect", "you": "X"}).json()["game"]
    game = requests.post(f"{site.url}/api/bot/game/{game['id']}/move", headers=auth,
                         timeout=10, json={"cell": 0}).json()["game"]
    page = requests.get(site.url + "/bots/guide", timeout=10).text
    table = page.split('id="game"')[1].split("</table>")[0]
    rows = re.findall(r"<tr><td><code>(\w+)</code></td><td><code>(.*?)</code></td>", table)
    assert len(rows) > 20
    compared = 0
    for field, example in rows:
        if field not in game or field in ("reason", "winner", "next", "line"):
            continue  # not in a classic game on, or null until the game ends
        value = json.loads(html.unescape(example))
        if game[field] is None and value is not None:
            continue
        assert shape(value) == shape(game[field]), (field, value, game[field])
        compared += 1
    assert compared >= 15
    requests.post(f"{site.url}/api/bot/game/{game['id']}/resign", headers=auth, timeout=10)


def test_a_bot_has_a_history_with_pages_and_replays_that_name_the_players(site, desk):
    token = (desk / make_bot(site, desk, "historian")).read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    played = []
    for moves in ((), (4,), (0,)):  # resigned at once, and after one move
        game = requests.post(site.url + "/api/bot/challenge", headers=auth, timeout=10, json={
            "opponent": "ai:easy", "you": "X"}).json()["game"]
        for cell in moves:
            requests.post(f"{site.url}/api/bot/game/{game['id']}/move", headers=auth,
                          timeout=10, json={"cell": cell})
        failure = {"kind": "IndexError", "text": "Traceback ...\nIndexError"} if not moves \
            else None  # what the SDK sends when move failed
        ended = requests.post(f"{site.url}/api/bot/game/{game['id']}/resign", headers=auth,
                              timeout=10, json={"failure": failure} if failure else {}
                              ).json()["game"]
        played.append(ended)
    first = requests.get(site.url + "/api/bots/historian/games?limit=2", timeout=10).json()
    assert [g["id"] for g in first["games"]] == [played[2]["id"], played[1]["id"]]
    assert first["next"] == played[1]["id"]
    newest = first["games"][0]
    assert newest["opponent"] == {"kind": "ai", "name": "ai:easy", "level": "easy"}
    assert (newest["result"], newest["reason"], newest["variant"], newest["you"]) == (
        "lost", "resign", "classic", "X")
    assert newest["replay"] == played[2]["replay"] and newest["link"] == f"/g/{played[2]['id']}"
    assert newest["rated"] is True and abs(newest["ended"] - time.time()) < 60
    second = requests.get(f"{site.url}/api/bots/historian/games?before={first['next']}",
                          timeout=10).json()
    assert [g["id"] for g in second["games"]] == [played[0]["id"]] and second["next"] is None
    assert second["games"][0]["replay"] is None  # resigned before any move: its game link
    assert "failure" not in second["games"][0]  # the public never reads a program's failure
    owned = requests.get(f"{site.url}/api/bots/historian/games?before={first['next']}",
                         headers=auth, timeout=10).json()["games"]
    assert owned[0]["failure"] == {"kind": "IndexError", "text": "Traceback ...\nIndexError"}
    missing = requests.get(site.url + "/api/bots/nobody-here/games", timeout=10)
    assert missing.status_code == 404
    page = requests.get(site.url + "/bot/historian", timeout=10).text
    assert "Recent games" in page and page.count('class="bot-game is-lost"') == 3
    assert f'href="{played[2]["replay"]}?g={played[2]["id"]}"' in page
    assert f'href="/g/{played[0]["id"]}"' in page
    replay = requests.get(f"{site.url}{played[2]['replay']}?g={played[2]['id']}", timeout=10).text
    assert "historian (X) vs AI · Easy (O)" in replay and "Show cell numbers" in replay
    other = requests.get(f"{site.url}{played[2]['replay']}?g={played[1]['id']}", timeout=10).text
    assert "historian" not in other  # another game's id names nobody on these moves


RAISES = '''def pick(game):
    return game["legal"][99]         # line 2: the bug


def move(game):
    return pick(game)
'''


def failure_report(text: str, game_id: str) -> str:
    """The report of a failed move, its game id made neutral."""
    block = text.split("=== your move failed", 1)[1]
    head, tail = block.split("\nlegal cells", 1)
    return (head + "\nlegal cells" + tail.split("\n", 1)[0]).replace(game_id, "GAME")


def test_local_practice_plays_with_no_server_and_reports_a_failure_as_online(site, desk):
    local = subprocess.run([sys.executable, "-I", "-S", "sdk.py", "minimax.py", "--local",
                            "--opponent", "ai:easy", "--games", "4", "--server",
                            "http://127.0.0.1:9"], cwd=desk, text=True, capture_output=True,
                           timeout=120)
    assert local.returncode == 0, local.stderr
    result = json.loads(local.stdout.strip().splitlines()[-1])
    assert result["games"] == 4 and result["wins"] + result["draws"] == 4, local.stderr
    assert "4 games: " in local.stderr and "replay: " in local.stderr
    (desk / "raises.py").write_text(RAISES)
    practice = subprocess.run([sys.executable, "-I", "-S", "sdk.py", "raises.py", "--local",
                               "--games", "1"], cwd=desk, text=True, capture_output=True,
                              timeout=120)
    token = make_bot(site, desk, "raises")
    online = sdk(desk, "raises.py", "--token-file", token, "--opponent", "ai:easy", "--games",
                 "1")
    lines = Lines(online)
    result = finish(online, lines, timeout=60)
    assert result["errors"] == {"IndexError": 1}, lines.text()
    there = re.search(r"your move failed in game (\S+) ===", lines.text()).group(1)
    report = failure_report(practice.stderr, "local-1")
    assert report == failure_report(lines.text(), there), (practice.stderr, lines.text())
    assert "line 2, in pick" in report and "IndexError" in report
    assert report.endswith("you are X, the position:\n  . . .\n  . . .\n  . . .\n"
                           "legal cells: 0-8")
    assert json.loads(practice.stdout.strip().splitlines()[-1])["errors"] == {"IndexError": 1}


def test_local_practice_plays_ultimate_and_another_bot_file(desk):
    (desk / "random_ultimate.py").write_text(
        (Path(__file__).resolve().parents[3] / "examples" / "bots" / "random_ultimate.py")
        .read_text())
    ran = subprocess.run([sys.executable, "-I", "-S", "sdk.py", "random_ultimate.py", "--local",
                          "--variant", "ultimate", "--opponent", "random_ultimate.py",
                          "--games", "2"], cwd=desk, text=True, capture_output=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.strip().splitlines()[-1])["games"] == 2
    assert "/r/u/" in ran.stderr and "you are O" in ran.stderr


def test_a_print_in_move_shows_at_once_when_the_output_is_a_pipe(desk):
    (desk / "chatty.py").write_text('import time\n\n\ndef move(game):\n'
                                    '    print("thinking about", game["id"])\n'
                                    '    time.sleep(20)\n    return game["legal"][0]\n')
    process = subprocess.Popen([sys.executable, "-I", "-S", "sdk.py", "chatty.py", "--local",
                                "--games", "1"], cwd=desk, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    try:
        began = time.monotonic()
        # Block-buffered, it would never come: the child is stopped after 8.5 s, unflushed.
        assert process.stdout.readline() == "thinking about local-1\n"
        assert time.monotonic() - began < 15
    finally:
        process.kill()
        process.wait(30)
        process.stdout.close()
