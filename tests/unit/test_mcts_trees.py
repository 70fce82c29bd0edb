"""Issue 47: proven results (MCTS-Solver) and a game's tree kept between its moves."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from ttt.ai import mcts, mcts_trees
from ttt.ai.mcts import Node, analyze, choice, search
from ttt.pool import thinker
from ttt.rules.ultimate import UltimateBoard

EMPTY = "........."
# X to move in board 3. X has won boards 0 and 4 and holds two cells of board 8's top row; board 1
# has one empty cell, its cell 8. X's move 28 (board 3, cell 1) sends O to board 1, whose only
# cell sends X to board 8, where 74 wins the game: a win in two, and no win in one.
X_WINS_IN_TWO = UltimateBoard.parse(
    "XXXOO...." "XOXXOOOX." + EMPTY + EMPTY + "O..XXX..O" "O...O...." + EMPTY + EMPTY
    + "XX.OO....", next=3)
# O to move anywhere: X has won boards 0 and 4 and threatens board 8's top row
# (tests/unit/test_mcts).
O_MUST_NOT_SEND_TO_8 = UltimateBoard.parse(
    "XXXOO...." "O........" "........O" "O........" "XXX.OO..." + EMPTY + EMPTY + EMPTY
    + "XX..O...X")
# The hard level by play-outs only (nothing timed), its rules kept but its opening book (these
# tests search from the first moves).
HARD = replace(mcts.LEVELS["hard"], playouts=3_000, seconds=None, book=False)


@pytest.fixture(autouse=True)
def _no_trees():
    mcts._TREES.clear()
    yield
    mcts._TREES.clear()


def wins_in_one(board: UltimateBoard) -> bool:
    return any((o := board.play(m).outcome()) and o.winner == board.turn
               for m in board.legal_moves())


def count(node: Node) -> int:
    return 1 + sum(count(child) for child in node.children)


# --- proofs --------------------------------------------------------------------------------------


def test_a_win_in_two_is_proven_and_played_at_once():
    board = X_WINS_IN_TWO
    assert not wins_in_one(board)
    root = search(board, random.Random(1), playouts=50_000)
    assert root.proven == 0.0  # the side that moved last (O) has lost
    best = choice(root)
    assert best.move == 28 and best.proven == 1.0
    after = board.play(28)
    assert all(wins_in_one(after.play(reply)) for reply in after.legal_moves())
    assert root.visits < 2_000  # stopped at the proof, not at the budget
    for seed in range(5):
        assert HARD.choose(board, random.Random(seed)) == 28
    assert mcts.LAST_SEARCH["proven"]


def test_a_move_proven_lost_is_never_preferred_over_an_unproven_one():
    board = O_MUST_NOT_SEND_TO_8
    root = search(board, random.Random(2), playouts=3_000)  # every move, unsafe ones too
    lost = [c for c in root.children if c.proven == 0.0]
    losing = {m for m in board.legal_moves() if wins_in_one(board.play(m))}
    assert 17 in losing and {c.move for c in lost} == losing  # every move X answers with a win
    for child in lost:
        assert child.visits == 1  # proven on expansion, never followed again
    assert choice(root).proven != 0.0
    # Even with the most visits, a proven loss is not chosen while a move is not proven lost.
    parent = Node(-1, [])
    loss, unknown = Node(3, []), Node(5, [])
    loss.visits, loss.reward, loss.proven = 900, 800.0, 0.0
    unknown.visits, unknown.reward = 10, 2.0
    parent.children = [loss, unknown]
    assert choice(parent) is unknown


def test_analysis_shows_a_proven_score_as_computed():
    answer = analyze(X_WINS_IN_TWO, playouts=5_000)
    scores = {m["cell"]: m for m in answer["moves"]}
    assert scores[28]["score"] == 1.0
    assert answer["best"] == [28]


# --- trees kept between moves --------------------------------------------------------------------


def test_the_next_search_starts_with_the_visits_kept_from_the_move_played():
    history = [40, 36]
    board = UltimateBoard.from_moves(history)
    move = HARD.choose(board, random.Random(3), game="g", history=history)
    kept = mcts._TREES["g"]
    assert kept.moves == (40, 36, move) and kept.root.move == move
    reply = max(kept.root.children, key=lambda c: c.visits)  # the reply searched most
    visits = reply.visits
    assert visits > 50
    history = [*history, move, reply.move]
    HARD.choose(UltimateBoard.from_moves(history), random.Random(4), game="g", history=history)
    assert mcts.LAST_SEARCH["kept"] == visits
    assert mcts.LAST_SEARCH["visits"] >= visits + HARD.playouts // 4
    # Another position than the one kept (a move was taken back, another game) starts afresh.
    HARD.choose(board, random.Random(5), game="g", history=[40, 36])
    assert mcts.LAST_SEARCH["kept"] == 0


def test_the_tree_goes_when_the_game_ends_on_the_ai_move():
    history = [40, 36]
    HARD.choose(UltimateBoard.from_moves(history), random.Random(3), game="g", history=history)
    assert mcts.tree_stats()["games"] == 1
    # The same game, now where the AI wins at once: its move ends the game, and the tree.
    moves = [0]  # any history that does not extend the kept one
    HARD.choose(X_WINS_IN_TWO.play(28).play(17), random.Random(1), game="g", history=moves)
    assert "g" not in mcts._TREES
    HARD.choose(UltimateBoard.from_moves(history), random.Random(3), game="h", history=history)
    mcts.forget_game("h")
    assert mcts.tree_stats() == {"games": 0, "nodes": 0}


def test_trees_are_bounded_per_game_in_all_and_in_idle_time(monkeypatch):
    root = search(UltimateBoard(), random.Random(6), playouts=2_000, max_nodes=300)
    assert count(root) <= 301 and root.visits == 2_000
    monkeypatch.setattr(mcts_trees, "TREE_NODES", 300)    # one game's tree stops growing there
    monkeypatch.setattr(mcts_trees, "TREES_NODES", 1_500)  # all games': the oldest trees go
    for game in "abcd":
        history = [40, 36]
        HARD.choose(UltimateBoard.from_moves(history), random.Random(7), game=game,
                    history=history)
        stats = mcts.tree_stats()
        assert stats["nodes"] <= 1_500
        for kept in mcts._TREES.values():  # nodes counted at most: one a visit of the root
            assert count(kept.root) <= min(301, kept.root.visits)
    assert "d" in mcts._TREES and "a" not in mcts._TREES
    assert "".join(mcts._TREES) in ("bcd", "cd", "d")  # least recently used first out
    before = mcts.tree_report()
    assert before["dropped_full"] >= 4 - len(mcts._TREES)  # counted, as a worker reports
    assert before["bytes"] == before["nodes"] * mcts_trees.NODE_BYTES > 0
    monkeypatch.setattr(mcts_trees, "TREE_IDLE", -1.0)
    assert mcts.tree_stats() == {"games": 0, "nodes": 0}
    after = mcts.tree_report()
    assert after["dropped_idle"] == before["dropped_idle"] + before["games"]
    assert after["bytes"] == 0


def test_a_worker_search_keeps_the_tree_by_game_id():
    task = thinker.Task("move", "ultimate", (40, 36, 4, 37), "hard", 1, game="w1")  # no book
    move = thinker.search(task.as_json(), 0.3)
    assert mcts._TREES["w1"].moves == (40, 36, 4, 37, move)
    thinker.search(replace(task, game=None).as_json(), 0.3)  # no game: nothing kept
    assert list(mcts._TREES) == ["w1"]
