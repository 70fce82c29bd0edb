"""Bots against a real server: the SDK in a subprocess, the command line, the log.

One server for the module (SQLite in a temporary directory, a 5-second bot deadline so a
late bot loses quickly, an operator token for the ladder); bots are made with
`python -m ttt bot create`, or on the site as a person makes one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.support.servers import ROOT, Server
from tests.support.waiting import eventually
from ttt.bots.sdk import Api, Runner, Unauthorized, load_move

PY = sys.executable
MINIMAX = str(ROOT / "examples" / "bots" / "minimax.py")
RANDOM = str(ROOT / "examples" / "bots" / "random_ultimate.py")
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
OPERATOR = "operator-token-for-the-ladder-test-0123456789"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """(server, its store URL, its log path, a directory for token files)."""
    home = tmp_path_factory.mktemp("bots")
    store = f"sqlite:///{home / 'ttt.sqlite3'}"
    log = home / "server.log"
    server = Server({"TTT_STORE": store, "TTT_SECRET_KEY": "bots-test",
                     "TTT_BOT_MOVE_SECONDS": "5", "TTT_CREATE_RATE": "100000",
                     "TTT_MAX_LIVE_PER_ADDRESS": "100000", "TTT_OPERATOR_TOKEN": OPERATOR},
                    log=log).start()
    yield server, store, log, home
    server.stop()


def cli(*args: str, timeout: float = 300, env: dict | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "ttt", "bot", *args], cwd=ROOT, env={**ENV, **(env or {})},
                          text=True, capture_output=True, timeout=timeout)


def make_bot(world, name: str) -> Path:
    """`python -m ttt bot create NAME`: the token file it is kept in."""
    _, store, _, home = world
    made = cli("create", name, "--about", f"{name}, a test bot", "--store", store)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert len(token) >= 43  # 256 bits in base64
    path = home / f"{name}.token"
    path.write_text(token + "\n")
    tokens.append(token)
    return path


tokens: list[str] = []


def slow_bot(world, name: str, seconds: float) -> Path:
    """A minimax bot that thinks `seconds` before each move."""
    path = world[3] / f"{name}.py"
    path.write_text(f"import sys, time\nsys.path.insert(0, {str(Path(MINIMAX).parent)!r})\n"
                    f"from minimax import move as best\n\n\ndef move(game):\n"
                    f"    time.sleep({seconds})\n    return best(game)\n")
    return path


def run(world, program, token: Path, *args: str, timeout: float = 300) -> dict:
    done = cli("run", str(program), "--server", world[0].url, "--token-file", str(token),
               "--quiet", *args, timeout=timeout)
    assert done.stdout, done.stderr
    return {**json.loads(done.stdout.splitlines()[-1]), "returncode": done.returncode}


def start(world, program, token: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([PY, "-m", "ttt", "bot", "run", str(program), "--server",
                             world[0].url, "--token-file", str(token), "--quiet", *args],
                            cwd=ROOT, env=ENV, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def bots(world) -> dict[str, dict]:
    return {b["name"]: b for b in Api(world[0].url, "-").call("/api/bots", method="GET")["bots"]}

def test_the_ladder_command_plays_a_round_among_the_bots_online(world):
    names = {"online-a": MINIMAX, "online-b": MINIMAX, "online-c": RANDOM}
    runners = {name: Runner(Api(world[0].url, make_bot(world, name).read_text().strip()),
                            load_move(program)) for name, program in names.items()}
    tokens.append(OPERATOR)
    for runner in runners.values():
        threading.Thread(target=runner.run, args=(300,), daemon=True).start()
    try:
        # Exactly these are online (a program that died shows offline once a ping fails).
        eventually(lambda: {n for n, b in bots(world).items() if b["online"]} == set(names), 90,
                   interval=0.1)
        before = {name: bots(world)[name]["vs_bots"] for name in names}
        refused = cli("ladder", "--server", world[0].url, "--games", "2",
                      env={"TTT_OPERATOR_TOKEN": "not-the-operator"})
        assert refused.returncode == 1 and "operator" in refused.stderr
        done = cli("ladder", "--server", world[0].url, "--games", "2", "--timeout", "240",
                   env={"TTT_OPERATOR_TOKEN": OPERATOR})
        assert done.returncode == 0, done.stderr
    finally:
        for runner in runners.values():
            runner.stop()
    result = json.loads(done.stdout)
    mine = {entry["bot"]: entry for entry in result["round"]}
    assert set(mine) == set(names) and result["games"] == 6 and result["skipped"] == 0
    for name, entry in mine.items():  # each pair twice, one game a side
        assert entry["wins"] + entry["draws"] + entry["losses"] == 4, entry
        assert runners[name].tally.games == 4  # the bot's own runner played every one
        after = bots(world)[name]["vs_bots"]
        assert sum(after.values()) - sum(before[name].values()) == 4
    assert mine["online-a"]["losses"] == mine["online-b"]["losses"] == 0
    assert mine["online-c"]["wins"] == 0 and mine["online-c"]["losses"] >= 1
    assert mine["online-c"]["rating"] < mine["online-c"]["rating_before"] == 1500
    assert mine["online-a"]["rating"] > 1500 and mine["online-b"]["rating"] > 1500
    assert {b["name"]: b["rating"] for b in result["ladder"]}["online-c"] == mine[
        "online-c"]["rating"]


def test_minimax_never_loses_twenty_classic_games_against_perfect(world):
    token = make_bot(world, "minimax")
    result = run(world, MINIMAX, token, "--games", "20", "--opponent", "ai:perfect", "--rated")
    assert (result["games"], result["losses"], result["error"]) == (20, 0, None), result
    assert result["draws"] + result["wins"] == 20
    record = bots(world)["minimax"]["vs_ai"]["classic"]["perfect"]
    assert record == {"wins": 0, "draws": 20, "losses": 0}


def test_a_random_bot_plays_four_ultimate_games_against_hard_to_the_end(world):
    token = make_bot(world, "randomu")
    result = run(world, RANDOM, token, "--games", "4", "--opponent", "ai:hard",
                 "--variant", "ultimate", "--parallel", "4", "--rated")
    assert result["games"] == 4 and result["error"] is None, result
    assert result["reasons"].get("time", 0) == 0  # every game played out, none lost late
    record = bots(world)["randomu"]["vs_ai"]["ultimate"]["hard"]
    assert sum(record.values()) == 4


def test_two_bots_play_each_other_through_the_ladder_command(world):
    strong, weak = make_bot(world, "ladder-a"), make_bot(world, "ladder-b")
    done = cli("ladder", "--server", world[0].url, "--games", "4", f"{MINIMAX}={strong}",
               f"{RANDOM}={weak}", "--timeout", "120")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    mine = {r["bot"]: r for r in result["round"]}
    assert mine["ladder-a"]["losses"] == 0 and mine["ladder-b"]["wins"] == 0
    assert sum(mine["ladder-a"][k] for k in ("wins", "draws", "losses")) == 4
    ladder = bots(world)
    assert ladder["ladder-a"]["rating"] >= 1500 >= ladder["ladder-b"]["rating"]
    assert sum(ladder["ladder-a"]["vs_bots"].values()) == 4


def test_the_sdk_stops_when_another_program_takes_its_token_over(world):
    token = make_bot(world, "steady")
    program = slow_bot(world, "steady", 0.15)
    bot = start(world, program, token, "--games", "6", "--opponent", "ai:perfect")
    try:
        eventually(lambda: bots(world)["steady"]["online"], 60, interval=0.1)
        # Another stream with the same token replaces the SDK's: it says so and stops,
        # never a tug-of-war of reconnections.
        intruder = Api(world[0].url, token.read_text().strip())
        for line in intruder.stream():
            assert line["type"] == "hello"
            break
        out, err = bot.communicate(timeout=60)
    finally:
        bot.kill()
    result = json.loads(out.splitlines()[-1])
    assert bot.returncode == 3, err
    assert "another program is now playing as steady (this one stops)" in err
    assert result["reconnects"] == 0 and result["games"] < 6, result


def test_a_revoked_token_is_cut_off_mid_game(world):
    _, store, _, _ = world
    token = make_bot(world, "doomed")
    program = slow_bot(world, "doomed", 0.3)
    bot = start(world, program, token, "--games", "50", "--opponent", "ai:perfect")
    try:
        eventually(lambda: bots(world)["doomed"]["online"], 60, interval=0.1)
        revoked = cli("revoke", "doomed", "--store", store)
        assert revoked.returncode == 0, revoked.stderr
        began = time.monotonic()
        out, _ = bot.communicate(timeout=30)
        assert time.monotonic() - began < 15
    finally:
        bot.kill()
    result = json.loads(out.splitlines()[-1])
    assert bot.returncode == 1 and result["error"] and result["games"] < 50
    eventually(lambda: not bots(world)["doomed"]["online"], 60, interval=0.1)
    with pytest.raises(Unauthorized):
        Api(world[0].url, token.read_text().strip()).challenge("ai:easy")


def test_a_move_that_takes_too_long_is_stopped_and_resigned_before_the_deadline(world):
    token = make_bot(world, "sleepy")
    program = slow_bot(world, "sleepy", 6.5)  # the server's deadline is 5 s
    result = run(world, program, token, "--games", "1", "--opponent", "ai:easy", "--rated")
    assert (result["games"], result["losses"], result["reasons"]) == (1, 1, {"resign": 1})
    assert result["errors"] == {"too slow": 1}
    assert bots(world)["sleepy"]["vs_ai"]["classic"]["easy"]["losses"] == 1


def test_the_sdks_games_are_casual_unless_rated(world):
    token = make_bot(world, "practice")
    result = run(world, MINIMAX, token, "--games", "2", "--opponent", "ai:perfect")
    assert result["games"] == 2 and result["error"] is None, result
    assert bots(world)["practice"]["vs_ai"]["classic"]["perfect"] == {
        "wins": 0, "draws": 0, "losses": 0}


def test_a_person_makes_bots_on_the_site_and_their_tokens_play(world):
    server = world[0]
    person = requests.Session()
    person.get(server.url + "/bots/new", timeout=10).raise_for_status()
    page = person.post(server.url + "/bots/new", data={"name": "webmade", "about": "from a form"},
                       headers={"Origin": server.url}, timeout=10)
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    token = re.search(r'id="bot-token"[^>]*value="([^"]+)"', page.text, re.S).group(1)
    assert f"--server {server.url} --token-file" in page.text
    made = person.post(server.url + "/api/bots", json={"name": "jsonmade"}, timeout=10).json()
    tokens.extend([token, made["token"]])
    assert Api(server.url, token).account()["bot"]["name"] == "webmade"
    assert Api(server.url, made["token"]).account()["bot"]["name"] == "jsonmade"
    taken = person.post(server.url + "/api/bots", json={"name": "WEBMADE"}, timeout=10)
    assert taken.status_code == 409
    revoked = person.post(server.url + "/bot/jsonmade/revoke", headers={"Origin": server.url},
                          timeout=10, allow_redirects=False)
    assert revoked.status_code == 303
    with pytest.raises(Unauthorized):
        Api(server.url, made["token"]).account()


def test_no_token_reaches_the_server_log(world):
    assert len(tokens) >= 9  # the tests above ran first and made their bots
    log = world[2].read_text()
    assert "/api/bot/game/" in log  # the log is there and has the bots' calls
    assert "/bots/new" in log and "/api/ladder/game" in log
    for token in tokens:
        assert token not in log
    assert "Bearer" not in log
    assert "Traceback" not in log


def test_the_site_serves_the_sdk_as_one_file_that_plays_with_the_standard_library_alone(
        world, tmp_path):
    server = world[0]
    guide = requests.get(server.url + "/bots/guide", timeout=10)
    assert guide.status_code == 200 and guide.headers["Content-Type"].startswith("text/html")
    assert "Write a bot in five minutes" in guide.text
    sdk = requests.get(server.url + "/bots/sdk.py", timeout=10)
    assert sdk.status_code == 200 and "attachment" in sdk.headers["Content-Disposition"]
    (tmp_path / "sdk.py").write_bytes(sdk.content)
    (tmp_path / "mybot.py").write_text(Path(MINIMAX).read_text())
    token = make_bot(world, "downloaded")
    # -S: no site-packages (no ttt, nothing pip installed); -I: no PYTHONPATH, no cwd tricks.
    done = subprocess.run([PY, "-I", "-S", "sdk.py", "mybot.py", "--server", server.url,
                           "--token-file", str(token), "--games", "2", "--opponent",
                           "ai:perfect", "--quiet"], cwd=tmp_path, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert (result["games"], result["losses"], result["error"]) == (2, 0, None), result
