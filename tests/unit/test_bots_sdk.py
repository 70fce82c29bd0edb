"""The SDK's runner against a fake API: what it sends for what it is sent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import ttt.bots.sdk
from ttt.bots import bundle
from ttt.bots.sdk import Mover, Runner, draw_board, explain, judge
from ttt.web.bots.pages import SDK_DEFAULT

ROOT = Path(__file__).resolve().parents[2]


class FakeApi:
    """Records calls; answers challenges with a game whose second seat is open."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def challenge(self, opponent, variant="classic", you=None, clock=None, rated=True):
        self.calls.append(("challenge", opponent))
        return {"ok": True, "game": {"id": f"g{len(self.calls)}", "status": "playing",
                                     "seats": {"X": "human", "O": "open"}, "can": [],
                                     "rev": 0, "you": "X"}}

    def move(self, game_id, cell):
        self.calls.append(("move", (game_id, cell)))
        return {"ok": True}

    def call(self, path, body=None, method="POST"):
        self.calls.append(("call", path))
        return {"ok": True, "game": {"id": path.split("/")[4], "status": "aborted",
                                     "seats": {"X": "human", "O": "open"}, "you": "X"}}


def view(rev: int, can=("move",), status="playing", moves=(), seats=None) -> dict:
    board = "".join("X" if i in moves[::2] else "O" if i in moves[1::2] else "."
                    for i in range(9))
    return {"id": "g", "rev": rev, "can": list(can), "status": status, "you": "X",
            "seats": seats or {"X": "human", "O": "ai"}, "winner": None, "board": board,
            "moves": list(moves), "turn": "X", "legal": [i for i in range(9) if i not in moves]}


def test_the_runner_answers_each_position_once_and_counts_each_game_once():
    """PROTOCOL v5: one answer per position (a later view of the same board, a presence
    change's new rev, is not asked again), none before both seats are taken, and an older
    view overtaken by a newer one is not answered."""
    api = FakeApi()
    runner = Runner(api, lambda game: game["legal"][0])
    for game in (view(0, seats={"X": "human", "O": "open"}), view(1), view(1), view(0),
                 view(3), view(5, moves=(0, 4)), view(4, moves=(0, 4)), view(6, moves=(0, 4)),
                 view(7, can=[], status="draw"), view(7, can=[], status="draw")):
        runner._game(game)
    assert [c for c in api.calls if c[0] == "move"] == [("move", ("g", 0)), ("move", ("g", 1))]
    assert (runner.tally.draws, runner.tally.games) == (1, 1)


def test_an_untaken_challenge_to_a_bot_is_withdrawn_and_the_next_one_follows():
    api = FakeApi()
    runner = Runner(api, lambda game: 0, schedule=["bot:busy", "bot:busy"])
    runner.challenge_wait = 0.0
    runner._start_more()
    assert api.calls == [("challenge", "bot:busy")]
    runner._withdraw_stale()
    runner._handle(runner.events.get_nowait())
    assert api.calls[1] == ("call", "/api/bot/game/g1/abort")
    assert runner.tally.aborted == 1
    runner._start_more()
    assert api.calls[-1] == ("challenge", "bot:busy") and not runner.schedule


def test_a_rounds_opponent_not_online_yet_is_waited_for_then_given_up():
    """The ladder starts every bot at once: a challenge to one still connecting is refused
    "not online"; it is tried again for a while (the round would end with 0 games), then given
    up with a sentence as any final refusal."""
    runner = Runner(FakeApi(), lambda game: 0, schedule=["bot:late"])
    runner._refused("bot:late", {"code": "not_allowed", "message": "late is not online"})
    assert runner.schedule == ["bot:late"] and runner.refused is None
    runner.online_wait = 0.0
    runner._refused("bot:late", {"code": "not_allowed", "message": "late is not online"})
    assert runner.schedule == [] and "not online" in runner.refused
    learner = Runner(FakeApi(), lambda game: 0, games=1, opponent="bot:late")
    learner._refused("bot:late", {"code": "not_allowed", "message": "late is not online"})
    assert learner.schedule == [], "a learner's challenge to an absent bot is said at once"


def test_a_link_waits_for_its_person():
    api = FakeApi()
    runner = Runner(api, lambda game: 0, schedule=["link"])
    runner.challenge_wait = 0.0
    runner._start_more()
    runner._withdraw_stale()
    assert api.calls == [("challenge", "link")]


def test_a_bad_answer_is_named_with_what_it_was_and_the_legal_cells():
    game = {"id": "g", "board": "X...O....", "legal": [1, 2, 3, 5, 6, 7, 8], "you": "X"}
    assert judge(game, 2) == (2, None)
    for returned, words in (("XX..O....", "a board?"), ((0, 1), "row * 3 + column"),
                            (None, "not a cell number"), (4, "not one of the legal cells"),
                            (True, "not a cell number")):
        cell, problem = judge(game, returned)
        assert cell is None and words in problem.text, returned
    shown = explain(game, judge(game, 4)[1])
    assert "  X . .\n  . O .\n  . . ." in shown and "legal cells: 1-3, 5-8" in shown


def test_an_ultimate_position_is_drawn_in_its_small_boards():
    board = ["."] * 81
    board[9 * 1 + 0] = "X"   # small board 1, its top left: row 0, column 3
    board[9 * 5 + 8] = "O"   # small board 5, its bottom right: row 5, column 8
    drawn = draw_board({"board": "".join(board)}).splitlines()
    assert drawn[0] == "  . . . | X . . | . . ."
    assert drawn[3] == "  ------+-------+------"
    assert drawn[6] == "  . . . | . . . | . . O"


def test_the_traceback_starts_at_the_programs_own_frames():
    def move(game):
        return game["legal"][99]

    runner = Runner(FakeApi(), move)
    cell, problem = runner._ask(view(1))
    assert cell is None and problem.kind == "IndexError"
    assert problem.text.startswith("Traceback") and "in move" in problem.text
    assert "_ask" not in problem.text  # the SDK's own frames are left out
    assert "bots/sdk" not in problem.text  # whichever of its parts they are in


def test_a_failed_move_resigns_that_game_and_counts_the_error():
    api, shown = FakeApi(), []
    runner = Runner(api, lambda game: "X........", show=shown.append)
    runner._game(view(1))
    assert ("call", "/api/bot/game/g/resign") in api.calls
    assert not [c for c in api.calls if c[0] == "move"]
    assert runner.tally.errors == {"returned str": 1}
    assert "your move failed in game g" in shown[0] and "legal cells: 0-8" in shown[0]


def test_a_replaced_stream_stops_the_runner_with_the_message():
    runner = Runner(FakeApi(), lambda game: 0)
    runner._handle({"type": "hello", "bot": "mini"})
    runner._handle({"type": "replaced"})
    assert runner.replaced and runner._done.is_set()
    assert runner.error == "another program is now playing as mini (this one stops)"


def test_the_child_process_is_stopped_when_move_takes_too_long(tmp_path):
    program = tmp_path / "slowbot.py"
    program.write_text("import time\n\ndef move(game):\n    if game['board'][0] == 'X':\n"
                       "        time.sleep(60)\n    return game['legal'][0]\n")
    mover = Mover(program)
    try:
        mover.check()
        assert mover({"board": "." * 9, "legal": [3]}, 20) == (3, None)
        began = time.monotonic()
        cell, problem = mover({"board": "X" + "." * 8, "legal": [3]}, 0.5)
        assert time.monotonic() - began < 5
        assert cell is None and problem.kind == "too slow"
        assert problem.text.startswith("your move took longer than 0.5 s")
        # Where it was stuck: the program's own line, none of the SDK's frames (issue 40).
        assert "it was here:" in problem.text and "slowbot.py\", line 5, in move" in \
            problem.text and "time.sleep(60)" in problem.text, problem.text
        assert "sdk.py" not in problem.text and "bots/sdk" not in problem.text
        assert mover({"board": "." * 9, "legal": [5]}, 20) == (5, None)  # a new child plays on
    finally:
        mover.close()


def test_a_bad_return_gets_the_hint_that_fits():
    game = {"legal": [0, 4], "board": "." * 9}
    hints = {None: "did you forget `return`?", "4": "return an int: return 4, not '4'",
             4.0: "return an int: return 4, not 4.0", (1, 1): "return row * 3 + column",
             "X" * 9: "a board?"}
    for returned, hint in hints.items():
        cell, problem = judge(game, returned)
        assert cell is None and hint in problem.text, (returned, problem.text)
    assert judge(game, 4) == (4, None)


def test_the_served_sdk_is_the_one_file_built_from_its_parts(client):
    served = client.get("/bots/sdk.py", base_url="https://ttt.example.org").get_data(as_text=True)
    built = bundle.build()
    assert built.count(SDK_DEFAULT) == 1  # the line the site writes its address on
    assert served == built.replace(SDK_DEFAULT, 'DEFAULT_SERVER = "https://ttt.example.org"')
    # Every part is in it, in order, and none of their imports of each other.
    at = [served.index(f"(ttt/bots/sdk/{part}.py)") for part in ttt.bots.sdk.PARTS]
    assert at == sorted(at)
    assert not [line for line in served.splitlines() if "import ttt" in line
                or line.lstrip().startswith("from ttt")]


def test_the_one_file_runs_with_the_standard_library_alone_and_has_every_name(client, tmp_path):
    """`python -I -S sdk.py` in a folder with no ttt: its help, every name the package exports,
    and a practice game played to its end (`--local` needs no server)."""
    (tmp_path / "sdk.py").write_bytes(client.get("/bots/sdk.py").get_data())
    shutil.copy(ROOT / "examples" / "bots" / "minimax.py", tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-I", "-S", *args], cwd=tmp_path, text=True,
                              capture_output=True, timeout=120)

    shown = run("sdk.py", "--help")
    assert shown.returncode == 0 and "--token-file" in shown.stdout, shown.stderr
    names = run("-c", "import json, runpy; print(json.dumps(sorted(runpy.run_path('sdk.py'))))")
    assert names.returncode == 0, names.stderr
    assert set(ttt.bots.sdk.__all__) - {"PARTS"} <= set(json.loads(names.stdout))
    played = run("sdk.py", "minimax.py", "--local", "--games", "2", "--opponent", "ai:hard")
    assert played.returncode == 0, played.stderr
    assert json.loads(played.stdout)["draws"] == 2  # perfect play against perfect play
