"""The rules: parsing, turns, legal moves, play, outcomes and symmetry."""

from __future__ import annotations

import itertools

import pytest

from tests.support.boards import reachable_boards
from ttt.rules.classic import (
    Board,
    CellOccupied,
    GameOver,
    IllegalMove,
    InvalidBoard,
    InvalidCell,
    canonical_key,
)


def _reachable_boards() -> set[str]:
    """Every reachable board, drawn as text."""
    return {str(b) for b in reachable_boards()}


def _rotate(text: str) -> str:
    """The board turned a quarter clockwise."""
    return "".join(text[(2 - col) * 3 + row] for row in range(3) for col in range(3))


def _mirror(text: str) -> str:
    """The board reflected left to right."""
    return "".join(text[row * 3 + (2 - col)] for row in range(3) for col in range(3))


# --- parse and str ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", [".........", "X........", "XO.......", "XX.OO....", "XOXXOOOXX", "XXXOO...."]
)
def test_parse_round_trips_through_str(text):
    board = Board.parse(text)
    assert str(board) == text
    assert Board.parse(str(board)) == board


def test_parse_places_marks_row_by_row_from_top_left():
    board = Board.parse("X.......O")
    assert board.cell(0) == "X"
    assert board.cell(8) == "O"
    assert all(board.cell(i) == "." for i in range(1, 8))
    assert board.x == 1 and board.o == 1 << 8


def test_every_reachable_board_round_trips():
    for text in _reachable_boards():
        assert str(Board.parse(text)) == text


# --- turn and legal moves -----------------------------------------------------------------------


def test_x_moves_first_on_the_empty_board():
    assert Board().turn == "X"
    assert Board.parse(".........").turn == "X"


def test_turn_alternates():
    assert Board.parse("X........").turn == "O"
    assert Board.parse("XO.......").turn == "X"
    assert Board.parse("XX.OO....").turn == "X"
    assert Board.parse("XX..O....").turn == "O"


def test_turn_is_none_once_won_or_drawn():
    assert Board.parse("XXXOO....").turn is None
    assert Board.parse("OOOXX.X..").turn is None
    assert Board.parse("XX.OOOX..").turn is None
    assert Board.parse("XOXXOOOXX").turn is None


def test_legal_moves_are_the_empty_cells_in_order():
    assert Board().legal_moves() == tuple(range(9))
    assert Board.parse("XX.OO....").legal_moves() == (2, 5, 6, 7, 8)
    assert Board.parse("XOXOXO...").legal_moves() == (6, 7, 8)


def test_legal_moves_are_empty_once_the_game_is_over():
    # Cells 5 to 8 are empty, but X has the top row.
    assert Board.parse("XXXOO....").legal_moves() == ()
    assert Board.parse("XOXXOOOXX").legal_moves() == ()


# --- play -----------------------------------------------------------------------------------------


def test_play_marks_the_cell_for_the_side_on_turn_and_leaves_the_board_alone():
    before = Board.parse("X........")
    after = before.play(4)
    assert str(after) == "X...O...."
    assert str(before) == "X........"
    assert str(after.play(8)) == "X...O...X"


def test_play_on_an_occupied_cell_raises_cell_occupied():
    board = Board.parse("X...O....")
    for cell in (0, 4):
        with pytest.raises(CellOccupied):
            board.play(cell)


def test_play_after_the_game_is_over_raises_game_over():
    with pytest.raises(GameOver):
        Board.parse("XXXOO....").play(5)
    with pytest.raises(GameOver):
        Board.parse("XOXXOOOXX").play(0)


@pytest.mark.parametrize("cell", [-1, 9, 100, 1.0, "4", None, True])
def test_play_outside_0_to_8_or_not_an_int_raises_invalid_cell(cell):
    with pytest.raises(InvalidCell):
        Board().play(cell)


def test_illegal_move_errors_are_value_errors():
    for error in (CellOccupied, GameOver, InvalidCell, IllegalMove, InvalidBoard):
        assert issubclass(error, ValueError)
    for error in (CellOccupied, GameOver, InvalidCell):
        assert issubclass(error, IllegalMove)


def test_from_moves_plays_the_cells_in_order():
    assert Board.from_moves([]) == Board()
    assert str(Board.from_moves([4, 0, 8])) == "O...X...X"
    assert Board.from_moves([0, 3, 1, 4, 2]) == Board.parse("XXXOO....")


def test_from_moves_rejects_illegal_sequences():
    with pytest.raises(CellOccupied):
        Board.from_moves([4, 4])
    with pytest.raises(GameOver):
        Board.from_moves([0, 3, 1, 4, 2, 5])
    with pytest.raises(InvalidCell):
        Board.from_moves([9])


# --- outcome --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "winner", "line"),
    [
        ("XXXOO....", "X", (0, 1, 2)),
        ("OO.XXX...", "X", (3, 4, 5)),
        ("OO....XXX", "X", (6, 7, 8)),
        ("XO.XO.X..", "X", (0, 3, 6)),
        ("XO.XOX.O.", "O", (1, 4, 7)),
        ("OX.OX.O.X", "O", (0, 3, 6)),
        ("X.O.XO..X", "X", (0, 4, 8)),
        ("XXOXO.O..", "O", (2, 4, 6)),
        ("XXO.XO..O", "O", (2, 5, 8)),
    ],
)
def test_outcome_names_the_winner_and_the_line(text, winner, line):
    outcome = Board.parse(text).outcome()
    assert outcome is not None
    assert outcome.winner == winner
    assert outcome.line == line
    assert outcome.result == winner


def test_outcome_of_a_full_board_without_a_line_is_a_draw():
    outcome = Board.parse("XOXXOOOXX").outcome()
    assert outcome is not None
    assert outcome.winner is None
    assert outcome.line is None
    assert outcome.result == "draw"


def test_outcome_is_none_while_the_game_is_on():
    for text in (".........", "X........", "XX.OO....", "XOXXOOOX."):
        assert Board.parse(text).outcome() is None
        assert not Board.parse(text).is_over


def test_a_win_on_the_last_cell_is_a_win_not_a_draw():
    outcome = Board.parse("XOXOXOOXX").outcome()
    assert outcome is not None and outcome.winner == "X" and outcome.line == (0, 4, 8)


# --- impossible boards ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "XX.......",  # X has moved twice in a row
        "O........",  # O moved first
        "OO.X.....",  # O ahead of X
        "XXXX.OO..",  # X two ahead
        "XXXOOO...",  # both sides have a line
        "XXX...OOO",  # both sides have a line
        "XXXOO.O..",  # O moved after X won
        "OOOXX.X.X",  # X moved after O won
    ],
)
def test_parse_rejects_boards_that_cannot_arise_in_a_game(text):
    with pytest.raises(InvalidBoard):
        Board.parse(text)


@pytest.mark.parametrize(
    "text",
    ["", "XX.OO...", "XX.OO.....", "XX.OO...Z", "XX.OO..0.", "XX-OO....", "123456789"],
)
def test_parse_rejects_garbage_and_wrong_lengths(text):
    with pytest.raises(InvalidBoard):
        Board.parse(text)


def test_exactly_5478_of_the_3_to_the_9_boards_parse_and_they_are_the_reachable_ones():
    accepted = set()
    for cells in itertools.product("XO.", repeat=9):
        text = "".join(cells)
        try:
            Board.parse(text)
        except InvalidBoard:
            continue
        accepted.add(text)
    assert len(accepted) == 5478
    assert accepted == _reachable_boards()


# --- symmetry -------------------------------------------------------------------------------------


def test_canonical_key_is_equal_for_all_eight_images_of_a_board():
    text = "XO..X...O"
    images = set()
    for start in (text, _mirror(text)):
        image = start
        for _ in range(4):
            images.add(image)
            image = _rotate(image)
    assert len(images) == 8
    keys = {canonical_key(Board.parse(image)) for image in images}
    assert len(keys) == 1


def test_canonical_key_is_invariant_under_rotation_and_reflection_for_every_board():
    # Rotation and reflection generate all eight symmetries of the square.
    for text in _reachable_boards():
        key = canonical_key(Board.parse(text))
        assert canonical_key(Board.parse(_rotate(text))) == key
        assert canonical_key(Board.parse(_mirror(text))) == key


def test_canonical_key_tells_apart_boards_that_are_not_symmetric():
    corner, edge, centre = (Board.parse(t) for t in ("X........", ".X.......", "....X...."))
    assert len({canonical_key(corner), canonical_key(edge), canonical_key(centre)}) == 3
    assert canonical_key(Board.parse("X...O....")) != canonical_key(Board.parse("X.O......"))


def test_the_reachable_boards_fall_into_765_symmetry_classes():
    keys = {canonical_key(Board.parse(text)) for text in _reachable_boards()}
    assert len(keys) == 765
