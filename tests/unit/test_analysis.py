"""Analysis: per-move judgements, first mistakes in scripted games, game-tree statistics."""

from __future__ import annotations

import pytest

from ttt.ai import analysis
from ttt.rules.classic import Board, CellOccupied, GameOver, InvalidCell

# --- analyze --------------------------------------------------------------------------------------


def test_analyze_has_exactly_the_documented_shape():
    answer = analysis.analyze(Board.parse("XX.OO...."))
    assert set(answer) == {"turn", "moves", "best", "advice"}
    assert isinstance(answer["moves"], list) and isinstance(answer["best"], list)
    for move in answer["moves"]:
        assert set(move) == {"cell", "result", "plies"}
        assert isinstance(move["cell"], int) and isinstance(move["plies"], int)
        assert move["result"] in {"win", "draw", "loss"}


def test_analyze_x_to_move_with_an_immediate_win():
    # X X .
    # O O .
    # . . .
    assert analysis.analyze(Board.parse("XX.OO....")) == {
        "turn": "X",
        "moves": [
            {"cell": 2, "result": "win", "plies": 1},  # completes the top row
            {"cell": 5, "result": "draw", "plies": 5},  # blocks; O blocks 2, X blocks 6: draw
            {"cell": 6, "result": "loss", "plies": 2},  # O completes the middle row
            {"cell": 7, "result": "loss", "plies": 2},
            {"cell": 8, "result": "loss", "plies": 2},
        ],
        "best": [2],
        "advice": "Play the top right (the bottom left, the bottom right or the bottom "
                  "would lose).",
    }


def test_analyze_o_to_move_must_block():
    # X X .
    # . O .
    # . . .
    assert analysis.analyze(Board.parse("XX..O....")) == {
        "turn": "O",
        "moves": [
            {"cell": 2, "result": "draw", "plies": 6},  # a chain of forced blocks to a full board
            {"cell": 3, "result": "loss", "plies": 2},  # X completes the top row
            {"cell": 5, "result": "loss", "plies": 2},
            {"cell": 6, "result": "loss", "plies": 2},
            {"cell": 7, "result": "loss", "plies": 2},
            {"cell": 8, "result": "loss", "plies": 2},
        ],
        "best": [2],
        "advice": "Play the top right (the bottom left, the bottom right or any edge but the top "
                  "would lose).",
    }


def test_advice_names_the_few_best_squares_or_else_the_ones_to_avoid():
    assert analysis.analyze(Board())["advice"] == "Every square is as good as the others here."
    assert analysis.analyze(Board.from_moves([4]))["advice"] == (
        "Play any corner (any edge would lose).")
    # X top left, O centre, X bottom right: six squares draw, the two other corners lose.
    assert analysis.analyze(Board.from_moves([0, 4, 8]))["advice"] == (
        "Most squares are fine; avoid the top right or the bottom left: that would lose.")


def test_cells_in_few_words():
    assert analysis.cells_words([0, 2, 6, 8]) == "any corner"
    assert analysis.cells_words([1, 3, 5]) == "any edge but the bottom"
    assert analysis.cells_words([4, 0]) == "the centre or the top left"
    assert analysis.cells_words([4, 0, 2]) == "the centre, the top left or the top right"


def test_analyze_a_fork_is_a_win_in_three_plies():
    # X O .
    # . X .
    # . . O      X at 3 or 6 makes two threats at once.
    answer = analysis.analyze(Board.parse("XO..X...O"))
    by_cell = {m["cell"]: (m["result"], m["plies"]) for m in answer["moves"]}
    assert by_cell == {
        2: ("draw", 5),
        3: ("win", 3),
        5: ("draw", 5),
        6: ("win", 3),
        7: ("draw", 5),
    }
    assert answer["best"] == [3, 6]


def test_analyze_the_empty_board_every_move_draws_in_nine():
    answer = analysis.analyze(Board())
    assert answer["turn"] == "X"
    assert answer["moves"] == [{"cell": c, "result": "draw", "plies": 9} for c in range(9)]
    assert answer["best"] == list(range(9))


def test_analyze_a_finished_board_has_no_moves():
    for text in ("XXXOO....", "XOXXOOOXX"):
        assert analysis.analyze(Board.parse(text))["moves"] == []


# --- first mistakes -------------------------------------------------------------------------------


def test_first_mistakes_in_a_lost_game_finds_xs_missed_block():
    # X opens in a corner, O takes the centre; X threatens 2, O blocks there and so threatens
    # the anti-diagonal 2-4-6. X plays 3 instead of blocking at 6, and O wins there.
    moves = [0, 4, 1, 2, 3, 6]
    final = Board.from_moves(moves).outcome()
    assert final is not None and final.winner == "O"
    found = analysis.first_mistakes(moves)
    assert found["O"] is None
    mistake = found["X"]
    assert mistake is not None
    assert (mistake.side, mistake.ply, mistake.cell) == ("X", 4, 3)
    assert (mistake.before, mistake.after) == ("draw", "loss")
    assert mistake.best == (6,)


def test_first_mistakes_in_a_drawn_game_where_both_sides_threw_something_away():
    # O answers the corner with an edge (losing); X then misses both forks and only draws.
    moves = [0, 1, 4, 8, 2, 6, 7, 3, 5]
    final = Board.from_moves(moves).outcome()
    assert final is not None and final.winner is None
    found = analysis.first_mistakes(moves)
    o_mistake, x_mistake = found["O"], found["X"]
    assert o_mistake is not None and x_mistake is not None
    assert (o_mistake.ply, o_mistake.cell, o_mistake.before, o_mistake.after) == (
        1,
        1,
        "draw",
        "loss",
    )
    assert o_mistake.best == (4,)
    assert (x_mistake.ply, x_mistake.cell, x_mistake.before, x_mistake.after) == (
        4,
        2,
        "win",
        "draw",
    )
    assert x_mistake.best == (3, 6)


def test_first_mistakes_in_a_perfect_game_are_none():
    moves = [4, 0, 8, 2, 1, 7, 3, 5, 6]
    final = Board.from_moves(moves).outcome()
    assert final is not None and final.winner is None
    assert analysis.first_mistakes(moves) == {"X": None, "O": None}


def test_first_mistakes_reports_only_the_first_mistake_of_each_side():
    # X throws away the win at ply 4 (win -> draw), then fails to block 7 at ply 6
    # (draw -> loss) and O wins; only the first of the two is reported.
    moves = [0, 1, 4, 8, 2, 6, 3, 7]
    final = Board.from_moves(moves).outcome()
    assert final is not None and final.winner == "O"
    mistake = analysis.first_mistakes(moves)["X"]
    assert mistake is not None
    assert (mistake.ply, mistake.before, mistake.after) == (4, "win", "draw")


def test_first_mistakes_of_no_moves_are_none():
    assert analysis.first_mistakes([]) == {"X": None, "O": None}


def test_first_mistakes_rejects_illegal_move_lists_with_the_rules_errors():
    with pytest.raises(CellOccupied):
        analysis.first_mistakes([0, 0])
    with pytest.raises(InvalidCell):
        analysis.first_mistakes([9])
    with pytest.raises(GameOver):
        analysis.first_mistakes([0, 3, 1, 4, 2, 5])


def test_mistake_describes_itself_and_serialises():
    mistake = analysis.first_mistakes([0, 4, 1, 2, 3, 6])["X"]
    assert mistake is not None
    text = mistake.describe()
    # One numbering everywhere: the move list's (ply + 1), as the review caption counts.
    assert text == "Move 5, X left, turned a draw into a loss; better was the bottom left."
    assert mistake.to_json() == {
        "side": "X",
        "ply": 4,
        "move": 5,
        "cell": 3,
        "before": "draw",
        "after": "loss",
        "best": [6],
        "better": "the bottom left",
        "text": text,
    }


# --- game statistics ------------------------------------------------------------------------------


def test_game_stats_counts_every_possible_game():
    stats = analysis.game_stats()
    assert stats["games"] == 255_168
    assert stats["x_wins"] == 131_184
    assert stats["o_wins"] == 77_904
    assert stats["draws"] == 46_080
    assert stats["x_wins"] + stats["o_wins"] + stats["draws"] == stats["games"]


def test_game_stats_counts_games_by_length():
    stats = analysis.game_stats()
    assert stats["games_by_length"] == {
        "5": 1_440,
        "6": 5_328,
        "7": 47_952,
        "8": 72_576,
        "9": 127_872,
    }
    assert sum(stats["games_by_length"].values()) == stats["games"]


def test_game_stats_counts_positions():
    stats = analysis.game_stats()
    assert stats["positions"] == 5_478
    assert stats["terminal_positions"] == 958
    assert stats["positions_up_to_symmetry"] == 765


def test_game_stats_has_exactly_the_documented_keys():
    assert set(analysis.game_stats()) == {
        "games",
        "x_wins",
        "o_wins",
        "draws",
        "games_by_length",
        "positions",
        "terminal_positions",
        "positions_up_to_symmetry",
    }
