"""The rules of ultimate tic-tac-toe: sending, closed boards, big-board lines, draws, errors.

Boards are drawn in cell order, one small board per line (board 0 first), each line its
nine cells row by row, the way `str(board)` writes them.
"""

from __future__ import annotations

import random

import pytest

from ttt.rules.classic import (
    CellOccupied,
    GameOver,
    IllegalMove,
    InvalidBoard,
    InvalidCell,
    Outcome,
    Termination,
)
from ttt.rules.ultimate import UltimateBoard, WrongBoard

EMPTY = "........."


def draw(*boards: str, next: int | None = None) -> UltimateBoard:
    """A board from nine small boards (missing ones empty)."""
    return UltimateBoard.parse("".join(boards + (EMPTY,) * (9 - len(boards))), next)


def cells_of(*boards: int) -> set[int]:
    return {9 * b + c for b in boards for c in range(9)}


# --- the empty board and the sending rule -------------------------------------------------------


def test_the_empty_board_lets_x_play_any_of_the_81_cells():
    board = UltimateBoard()
    assert board.turn == "X"
    assert board.next is None
    assert board.ply == 0
    assert board.legal_moves() == tuple(range(81))
    assert board.boards == "........."
    assert str(board) == "." * 81
    assert board.outcome() is None and not board.is_over


def test_a_cell_sends_the_opponent_to_the_small_board_of_the_same_number():
    board = UltimateBoard().play(40)  # board 4, cell 4: the centre of the centre
    assert board.turn == "O"
    assert board.next == 4
    assert board.legal_moves() == (36, 37, 38, 39, 41, 42, 43, 44)
    board = board.play(36)  # board 4, cell 0: X must go to the top-left board
    assert board.next == 0
    assert board.legal_moves() == tuple(range(9))
    assert str(board) == "." * 36 + "O...X...." + "." * 36


def test_a_cell_outside_the_board_sent_to_is_not_allowed():
    board = UltimateBoard().play(40)
    for cell in (0, 35, 45, 80):
        with pytest.raises(WrongBoard):
            board.play(cell)


def test_a_won_board_is_closed_and_sending_there_frees_the_opponent():
    board = draw(
        "XXXOO....",  # board 0: X's top row
        next=1,
    )
    assert board.boards == "X........"
    assert board.turn == "O"
    after = board.play(9)  # board 1, cell 0: would send X to board 0, which is closed
    assert after.next is None
    assert set(after.legal_moves()) == cells_of(1, 2, 3, 4, 5, 6, 7, 8) - {9}
    with pytest.raises(WrongBoard):
        after.play(5)  # an empty cell of the won board 0


def test_a_full_small_board_without_a_line_is_closed_and_frees_the_opponent():
    board = draw(
        EMPTY, EMPTY, EMPTY,
        "XOXXOOOXX",  # board 3: full, nobody's line
        next=0,
    )  # fmt: skip
    assert board.boards == "...-....."
    after = board.play(3)  # board 0, cell 3: would send X to board 3
    assert after.next is None
    assert len(after.legal_moves()) == 81 - 9 - 1


def test_winning_a_small_board_with_the_move_that_sends_to_it_frees_the_opponent():
    # X takes cell 2 of board 2, completing its top row there, and would send O to board 2.
    board = draw(EMPTY, "O.O......", "XX.......", next=2)
    after = board.play(20)
    assert after.boards == "..X......"
    assert after.next is None


def test_filling_the_last_cell_of_a_small_board_closes_it():
    # X to move in board 0, where only cell 8 is left.
    board = draw("XOXXOOOX.", "O........", "X........", next=0)
    after = board.play(8)
    assert after.boards == "-........"
    assert after.next == 8


# --- the big board ------------------------------------------------------------------------------


def test_three_won_small_boards_in_a_row_win_the_game():
    board = draw(
        "XXXOO....",  # X won board 0
        "........O",  # O's move here sent X to board 8
        "O........",
        EMPTY,
        "XXX.OO...",  # X won board 4
        EMPTY, EMPTY, EMPTY,
        "XX.OO....",  # X threatens the top row of board 8
        next=8,
    )
    assert board.turn == "X"
    won = board.play(74)  # board 8, cell 2
    assert won.outcome() == Outcome("X", (0, 4, 8))
    assert won.is_over and won.turn is None and won.next is None
    assert won.legal_moves() == ()
    assert won.boards == "X...X...X"
    with pytest.raises(GameOver):
        won.play(75)


@pytest.mark.parametrize(
    ("won", "line"),
    [((0, 1, 2), (0, 1, 2)), ((3, 4, 5), (3, 4, 5)), ((2, 5, 8), (2, 5, 8)),
     ((2, 4, 6), (2, 4, 6)), ((1, 4, 7), (1, 4, 7))],
)
def test_the_outcome_names_the_small_boards_of_the_line(won, line):
    # O has just completed the line; X holds as many marks, none in a line.
    boards = [EMPTY] * 9
    for b in won:
        boards[b] = "OOOXX.X.."
    board = UltimateBoard.parse("".join(boards))
    outcome = board.outcome()
    assert outcome == Outcome("O", line)
    assert board.turn is None


def test_every_small_board_closed_without_a_line_is_a_draw():
    # Small winners X O X / - O O / O X X: no three in a row for anybody.
    x, o, full = "XXXOO....", "OOOXX....", "XOXXOOOXX"
    board = draw(x, o, x, full, o, o, o, x, x)
    assert board.boards == "XOX-OOOXX"
    assert board.outcome() == Outcome(None, None, Termination.FULL)
    assert board.outcome().result == "draw"
    assert board.turn is None and board.legal_moves() == ()
    with pytest.raises(GameOver):
        board.play(80)


def test_the_game_goes_on_while_a_small_board_is_open_even_if_no_line_is_left():
    x, o, full = "XXXOO....", "OOOXX....", "XOXXOOOXX"
    board = draw(x, o, x, full, o, o, o, x, "XX..O....")
    assert board.outcome() is None
    assert board.turn == "O"
    assert board.legal_moves() == tuple(72 + c for c in (2, 3, 5, 6, 7, 8))


# --- errors ---------------------------------------------------------------------------------------


def test_a_taken_cell_is_occupied_even_in_a_closed_board():
    board = draw("XXXOO....", next=1)
    with pytest.raises(CellOccupied):
        board.play(0)
    board = UltimateBoard().play(40)
    with pytest.raises(CellOccupied):
        board.play(40)


@pytest.mark.parametrize("cell", [-1, 81, 100, 4.0, "4", None, True])
def test_a_cell_outside_0_to_80_or_not_an_int_is_invalid(cell):
    with pytest.raises(InvalidCell):
        UltimateBoard().play(cell)


def test_the_errors_are_the_classic_rules_errors():
    assert issubclass(WrongBoard, IllegalMove)
    assert not issubclass(WrongBoard, CellOccupied)
    for error in (WrongBoard, CellOccupied, GameOver, InvalidCell, InvalidBoard):
        assert issubclass(error, ValueError)


def test_from_moves_plays_in_order_and_rejects_illegal_sequences():
    board = UltimateBoard.from_moves([40, 36, 4])
    assert board == UltimateBoard().play(40).play(36).play(4)
    assert board.next == 4 and board.turn == "O" and board.ply == 3
    with pytest.raises(CellOccupied):
        UltimateBoard.from_moves([40, 40])
    with pytest.raises(WrongBoard):
        UltimateBoard.from_moves([40, 0])
    with pytest.raises(InvalidCell):
        UltimateBoard.from_moves([81])


# --- parse ---------------------------------------------------------------------------------------


def test_parse_reads_cells_in_board_order_and_round_trips():
    text = "X" + "." * 39 + "O" + "." * 40
    board = UltimateBoard.parse(text, next=4)
    assert str(board) == text
    assert board.cell(0) == "X" and board.cell(40) == "O" and board.cell(1) == "."
    assert board.x[0] == 1 and board.o[4] == 1 << 4
    assert UltimateBoard.parse(str(board), board.next) == board


@pytest.mark.parametrize(
    ("text", "next"),
    [
        ("." * 80, None),                               # too short
        ("." * 80 + "Z", None),                         # not a mark
        ("XX" + "." * 79, None),                        # X moved twice
        ("O" + "." * 80, None),                         # O moved first
        ("XXXOOO..." + "X" + "." * 71, None),           # one small board won by both
        ("." * 81, 4),                                  # sent somewhere before any move
        ("X" + "." * 80, 4),                            # X's only mark sends to board 0
        ("XXXOO...." + "." * 72, 0),                    # sent to a closed board
        ("." * 81, 9),                                  # no such board
    ],
)
def test_parse_rejects_what_cannot_arise(text, next):
    with pytest.raises(InvalidBoard):
        UltimateBoard.parse(text, next)


def test_parse_rejects_both_sides_holding_a_line_of_small_boards():
    x, o = "XXXOO....", "OOOXX...."
    with pytest.raises(InvalidBoard):
        draw(x, x, x, o, o, o)


# --- random games against a referee that reads the text ------------------------------------------


def _referee(text: str, moves: list[int]) -> tuple[str, int | None, set[int]]:
    """The small boards' states, `next` and the legal cells, worked out from the text alone."""
    smalls = [text[9 * b:9 * b + 9] for b in range(9)]

    def line_of(cells: str, mark: str) -> bool:
        lines = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8),
                 (0, 4, 8), (2, 4, 6))
        return any(all(cells[i] == mark for i in line) for line in lines)

    states = "".join(
        "X" if line_of(s, "X") else "O" if line_of(s, "O") else "-" if "." not in s else "."
        for s in smalls
    )
    over = line_of(states, "X") or line_of(states, "O") or "." not in states
    if over:
        return states, None, set()
    target = moves[-1] % 9 if moves else None
    if target is not None and states[target] != ".":
        target = None
    boards = [target] if target is not None else [b for b in range(9) if states[b] == "."]
    legal = {9 * b + c for b in boards for c in range(9) if smalls[b][c] == "."}
    return states, target, legal


def test_random_games_agree_with_a_referee_that_reads_the_text():
    rng = random.Random(16)
    endings = set()
    for _ in range(100):
        board, moves = UltimateBoard(), []
        while True:
            states, target, legal = _referee(str(board), moves)
            assert board.boards == states
            assert board.next == target
            assert set(board.legal_moves()) == legal
            assert board.ply == len(moves)
            assert UltimateBoard.parse(str(board), board.next) == board
            if not legal:
                break
            assert board.turn == "XO"[len(moves) % 2]
            cell = rng.choice(sorted(legal))
            moves.append(cell)
            board = board.play(cell)
        assert UltimateBoard.from_moves(moves) == board
        outcome = board.outcome()
        assert outcome is not None and board.turn is None
        if outcome.winner:
            assert all(board.boards[b] == outcome.winner for b in outcome.line)
        endings.add(outcome.result)
    assert endings == {"X", "O", "draw"}
