"""Issue 47: `hard`'s opening book, computed offline (bench/uttt_book.py), shipped as data."""

from __future__ import annotations

import json
import random
import time
import tomllib
from pathlib import Path

import pytest

from ttt.ai import mcts, mcts_book
from ttt.ai.mcts_book import BOOK_PATH, book_move, key, symmetries
from ttt.rules.ultimate import UltimateBoard

ROOT = Path(__file__).resolve().parents[2]


def book() -> dict[str, int]:
    return json.loads(BOOK_PATH.read_text())["moves"]


def moves_of(position: str) -> list[int]:
    """The moves that made a book position (its key: X's cells, a slash, O's cells)."""
    xs, os_ = ([int(c) for c in part.split(",") if c] for part in position.split("/"))
    return [m for pair in zip(xs, os_ + [None], strict=False) for m in pair if m is not None]


def test_the_book_is_shipped_as_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert BOOK_PATH.name in config["tool"]["setuptools"]["package-data"]["ttt.ai"]
    assert BOOK_PATH.parent == ROOT / "ttt" / "ai"


def test_every_book_move_is_legal_and_safe_and_the_book_covers_the_first_two_moves():
    moves = book()
    first = [(m,) for m in UltimateBoard().legal_moves()]
    second = [(*f, m) for f in first for m in UltimateBoard.from_moves(f).legal_moves()]
    assert len(moves) == 1 + len(first) + len(second) == 802
    for position, move in moves.items():
        board = UltimateBoard.from_moves(moves_of(position))
        assert key(board) == position
        assert move in board.legal_moves()
        assert move in mcts.safe_moves(board)[1]
        assert book_move(board) == move


def test_symmetric_positions_have_symmetric_book_moves():
    moves = book()
    for history in ([], [40], [0], [1, 14], [40, 36], [4, 40]):
        move = moves[key(UltimateBoard.from_moves(history))]
        for turn in symmetries():
            turned = UltimateBoard.from_moves([turn[m] for m in history])
            # The turned move, or its image by a symmetry of the position itself (after 40,
            # the four corners' moves are one move).
            same = [s for s in symmetries()
                    if key(UltimateBoard.from_moves([s[turn[m]] for m in history]))
                    == key(turned)]
            assert moves[key(turned)] in {s[turn[move]] for s in same}


def test_hard_plays_from_the_book_at_once_without_a_search(monkeypatch):
    def no_search(*args, **kwargs):
        raise AssertionError("a book position was searched")

    monkeypatch.setattr(mcts, "search", no_search)
    hard = mcts.LEVELS["hard"]
    for history in ([], [40], [80, 76]):
        board = UltimateBoard.from_moves(history)
        began = time.perf_counter()
        move = hard.choose(board, random.Random(1), game="book", history=history)
        assert time.perf_counter() - began < 0.5
        assert move == book()[key(board)]
    # Past the book, it searches (and the others levels never read the book).
    with pytest.raises(AssertionError, match="searched"):
        hard.choose(UltimateBoard.from_moves([40, 36, 4, 37]), random.Random(1))
    with pytest.raises(AssertionError, match="searched"):
        mcts.LEVELS["medium"].choose(UltimateBoard(), random.Random(1))


def test_no_book_file_means_no_book(monkeypatch, tmp_path):
    monkeypatch.setattr(mcts_book, "BOOK_PATH", tmp_path / "none.json")
    mcts_book._moves.cache_clear()
    try:
        assert book_move(UltimateBoard()) is None
    finally:
        mcts_book._moves.cache_clear()
