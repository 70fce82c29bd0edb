"""The two games behind one interface: boards, levels, views, analysis and replay links."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ttt.game.variants import CLASSIC, RECORD_LEVELS, ULTIMATE, VARIANTS, record_key
from ttt.rules.classic import Board, IllegalMove
from ttt.rules.ultimate import UltimateBoard

ROOT = Path(__file__).resolve().parents[2]


def test_variants_are_found_by_name():
    assert VARIANTS["classic"] is CLASSIC and VARIANTS["ultimate"] is ULTIMATE
    assert list(VARIANTS) == ["classic", "ultimate"]


def test_each_variant_builds_its_own_board():
    assert CLASSIC.from_moves([]) == Board() and CLASSIC.cells == 9
    assert ULTIMATE.from_moves([]) == UltimateBoard() and ULTIMATE.cells == 81
    assert str(CLASSIC.from_moves([4, 0])) == "O...X...."
    assert ULTIMATE.from_moves([40, 36]) == UltimateBoard().play(40).play(36)
    with pytest.raises(IllegalMove):
        ULTIMATE.from_moves([40, 0])


def test_the_levels_offered_are_the_ai_levels_and_each_picks_a_legal_move():
    assert CLASSIC.levels == ("easy", "medium", "hard", "perfect")
    assert ULTIMATE.levels == ("easy", "medium", "hard")
    with pytest.raises(ValueError):
        ULTIMATE.player("perfect")
    for v in (CLASSIC, ULTIMATE):
        board = v.from_moves([4])
        assert v.player("easy").choose(board, random.Random(1)) in board.legal_moves()


def test_the_extra_view_fields():
    assert CLASSIC.extra_view(Board()) == {}
    board = UltimateBoard.from_moves([40])
    assert ULTIMATE.extra_view(board) == {"boards": ".........", "next": 4, "targets": [4]}


def test_ultimate_targets_are_where_the_side_on_move_may_play_and_none_once_over():
    """PROTOCOL v4: the page lights the boards the view names, and works out no rule."""
    assert ULTIMATE.extra_view(UltimateBoard())["targets"] == list(range(9))
    rng = random.Random(29)
    board = UltimateBoard()
    while not board.is_over:
        targets = ULTIMATE.extra_view(board)["targets"]
        if board.next is not None:
            assert targets == [board.next]
        else:  # sent to a closed board: every open one
            assert targets == [b for b in range(9) if board.boards[b] == "."]
        assert {cell // 9 for cell in board.legal_moves()} == set(targets)
        board = board.play(rng.choice(board.legal_moves()))
    assert ULTIMATE.extra_view(board)["targets"] == []
    assert ULTIMATE.review([40, 36])["targets"] == [list(range(9)), [4], [0]]


def test_the_record_key_is_made_in_one_place_and_sent():
    assert record_key("classic", "hard") == "hard"
    assert record_key("ultimate", "hard") == "ultimate-hard"
    assert set(RECORD_LEVELS) == {record_key(n, lv) for n, v in VARIANTS.items() for lv in v.levels}


def test_analyze_answers_in_the_same_shape_for_both():
    for v, moves in ((CLASSIC, [4]), (ULTIMATE, [40])):
        board = v.from_moves(moves)
        answer = v.analyze(board)
        assert answer["turn"] == "O"
        assert [m["cell"] for m in answer["moves"]] == list(board.legal_moves())
        assert set(answer["best"]) <= set(board.legal_moves()) and answer["best"]


def test_ultimate_review_lists_every_position():
    review = ULTIMATE.review([40, 36])
    assert review["positions"] == [str(UltimateBoard.from_moves([40, 36][:n])) for n in range(3)]
    assert review["next"] == [None, 4, 0]
    assert review["review"] == {"X": None, "O": None}


@pytest.mark.parametrize(
    ("v", "moves", "text"), [(CLASSIC, [4, 0, 8], "408"), (ULTIMATE, [40, 36, 4], "40.36.4")]
)
def test_replay_links_round_trip(v, moves, text):
    assert v.format_moves(moves) == text
    assert v.parse_moves(text) == moves


@pytest.mark.parametrize(
    ("v", "text"),
    [(CLASSIC, ""), (CLASSIC, "44"), (CLASSIC, "49"), (CLASSIC, "0123456780"), (CLASSIC, "4a"),
     (ULTIMATE, ""), (ULTIMATE, "40.0"), (ULTIMATE, "40..36"), (ULTIMATE, "81"),
     (ULTIMATE, "40.-1"), (ULTIMATE, "400")],
)
def test_replay_links_that_are_not_a_game_are_value_errors(v, text):
    with pytest.raises(ValueError):
        v.parse_moves(text)


def test_the_new_engine_modules_import_no_web_database_or_redis_packages():
    probe = (
        "import json, sys, ttt.rules.ultimate, ttt.ai.mcts, ttt.game.variants\n"
        "bad = ('flask', 'socketio', 'engineio', 'redis', 'sqlite3')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in bad)))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
