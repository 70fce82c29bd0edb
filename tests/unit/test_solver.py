"""The solver: scores, best moves and move scores on hand-drawn positions, and the whole table."""

from __future__ import annotations

from functools import cache

from tests.support.boards import reachable_boards
from ttt.ai import solver
from ttt.rules.classic import Board


def _wins_at_once(board: Board, cell: int) -> bool:
    """Whether the player on turn wins by marking this cell (the rules decide, not the solver)."""
    outcome = board.play(cell).outcome()
    return outcome is not None and outcome.winner == board.turn


@cache
def _minimax(text: str) -> int:
    """An independent, naive negamax over Board objects, on the solver's score scale."""
    board = Board.parse(text)
    outcome = board.outcome()
    empties = board.empty.bit_count()
    if outcome is not None:
        # The side that just moved won, or nobody did.
        return 0 if outcome.winner is None else -(1 + empties)
    return max(-_minimax(str(board.play(cell))) for cell in board.legal_moves())


def _all_boards() -> tuple[Board, ...]:
    """Every reachable position."""
    return reachable_boards()


def test_ai_takes_the_immediate_win():
    board = Board.parse("XX.OO....")
    assert solver.best_moves(board) == (2,)
    assert _wins_at_once(board, 2)


def test_ai_takes_the_immediate_win_rather_than_blocking():
    # O threatens the middle row too, but winning ends the game first.
    scores = solver.move_scores(Board.parse("XX.OO...."))
    assert scores[2] > scores[5] == 0
    assert all(scores[c] < 0 for c in (6, 7, 8))


def test_ai_blocks_the_opponents_line():
    board = Board.parse("XX..O....")
    assert board.turn == "O"
    assert solver.best_moves(board) == (2,)
    scores = solver.move_scores(board)
    assert scores[2] == 0
    # Anything else lets X complete the top row next move: a loss with 4 cells left.
    assert {c: s for c, s in scores.items() if c != 2} == {3: -5, 5: -5, 6: -5, 7: -5, 8: -5}


def test_ai_prefers_the_quickest_win_over_a_slower_win():
    board = Board.parse("XOO.X....")
    scores = solver.move_scores(board)
    # 8 wins now (diagonal); 3, 5 and 6 also win, but two plies later.
    assert _wins_at_once(board, 8)
    assert scores[8] == 5
    assert scores[3] == scores[5] == scores[6] == 3
    assert scores[7] == 0
    assert solver.best_moves(board) == (8,)


def test_empty_board_is_a_draw_and_every_first_move_draws():
    board = Board()
    assert solver.score(board) == 0
    assert solver.move_scores(board) == dict.fromkeys(range(9), 0)
    assert solver.best_moves(board) == tuple(range(9))


def test_the_only_drawing_reply_to_a_corner_opening_is_the_centre():
    board = Board.parse("X........")
    assert solver.best_moves(board) == (4,)
    assert all(s < 0 for c, s in solver.move_scores(board).items() if c != 4)


def test_fork_position_wins_in_three_plies_and_every_reply_loses():
    # X: top left and centre; O: top and bottom right. X to move, no threat on the board.
    board = Board.parse("XO..X...O")
    assert not any(_wins_at_once(board, c) for c in board.legal_moves())
    assert solver.best_moves(board) == (3, 6)
    assert solver.score(board) == 3  # X wins on the third ply with 2 empty cells left
    assert solver.plies_of(solver.score(board), board.empty.bit_count()) == 3
    for fork in (3, 6):
        forked = board.play(fork)
        # Two threats: whatever O does, X has a winning cell next move.
        for reply in forked.legal_moves():
            after = forked.play(reply)
            if after.is_over:
                raise AssertionError(f"O's reply {reply} ended the game after fork {fork}")
            best = solver.best_moves(after)
            assert best and all(_wins_at_once(after, c) for c in best)
    # The non-forking moves only draw.
    assert {c: s for c, s in solver.move_scores(board).items() if c not in (3, 6)} == {
        2: 0,
        5: 0,
        7: 0,
    }


def test_score_scale_is_one_plus_the_empty_cells_after_the_winning_move():
    # Terminal boards: the player to move has lost; the winner left 4 / 0 / 2 cells empty.
    assert solver.score(Board.parse("XXXOO....")) == -(1 + 4)
    assert solver.score(Board.parse("XOXOXOOXX")) == -(1 + 0)
    assert solver.score(Board.parse("XX.OOOX..")) == -(1 + 3)
    assert solver.score(Board.parse("XOXXOOOXX")) == 0
    # One move from a win: the winning move leaves empties - 1 cells.
    board = Board.parse("XX.OO....")
    assert solver.score(board) == 1 + (board.empty.bit_count() - 1)
    # The last cell wins: nothing is left after it.
    assert solver.move_scores(Board.parse("XOOX.....")).get(7) == 1


def test_move_scores_and_best_moves_are_empty_once_the_game_is_over():
    for text in ("XXXOO....", "XOXXOOOXX"):
        board = Board.parse(text)
        assert solver.move_scores(board) == {}
        assert solver.best_moves(board) == ()


def test_result_of_reads_the_sign_of_a_score():
    assert solver.result_of(5) == "win"
    assert solver.result_of(1) == "win"
    assert solver.result_of(0) == "draw"
    assert solver.result_of(-1) == "loss"
    assert solver.result_of(-9) == "loss"


def test_plies_of_counts_moves_to_the_end_under_perfect_play():
    assert solver.plies_of(5, 5) == 1  # win with the next move
    assert solver.plies_of(3, 5) == 3  # win on the third ply
    assert solver.plies_of(-5, 6) == 2  # the opponent wins with their next move
    assert solver.plies_of(0, 9) == 9  # a draw fills the board
    assert solver.plies_of(0, 4) == 4
    assert solver.plies_of(1, 1) == 1  # a win on the last cell


def test_solve_returns_a_score_for_each_of_the_5478_positions():
    table = solver.solve()
    assert len(table) == 5478
    assert set(table) == {solver.mover_key(b) for b in _all_boards()}


def test_solver_agrees_with_a_naive_minimax_on_every_position():
    for board in _all_boards():
        expected = _minimax(str(board))
        assert solver.score(board) == expected, str(board)
        if not board.is_over:
            scores = solver.move_scores(board)
            assert scores == {c: -_minimax(str(board.play(c))) for c in board.legal_moves()}
            assert max(scores.values()) == expected
            top = [c for c, s in scores.items() if s == expected]
            assert solver.best_moves(board) == tuple(top)


def test_scores_is_computed_once_and_reused():
    assert solver.scores() is solver.scores()
    assert solver.scores() == solver.solve()
