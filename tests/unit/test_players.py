"""The players: a proof that perfect never loses, the level order, and the arena."""

from __future__ import annotations

import random

import pytest

from ttt.ai import levels, solver
from ttt.ai.levels import arena, player
from ttt.rules.classic import Board

STRONGEST_FIRST = ("perfect", "hard", "medium", "easy", "random")
GAMES = 20_000
# The closest pair of neighbouring levels is about 2 percentage points apart; with 20,000 games a
# rate's standard error is at most 0.35 points, so a 1-point margin is far outside luck.
MARGIN = 0.01


def _perfect_options(board: Board) -> set[int]:
    """Every cell the perfect player may pick on this board (its tied choices)."""
    t = levels.tree()
    state = t.index[board.key]
    return {t.cells[state][i] for i in t.perfect[state]}


def _walk_every_line(me: str) -> dict[str, int]:
    """Explore all games where `me` plays perfectly and the opponent plays anything.

    At the opponent's turns every legal move is tried; at ours every one of the perfect
    player's tied options is. Fails on a loss or on an option of less than optimal value.
    Returns how many finished games of each result were reached (positions counted once).
    """
    seen: set[Board] = set()
    finals = {"win": 0, "draw": 0}
    stack = [Board()]
    while stack:
        board = stack.pop()
        if board in seen:
            continue
        seen.add(board)
        outcome = board.outcome()
        if outcome is not None:
            assert outcome.winner in (me, None), f"perfect {me} lost: {board}"
            finals["draw" if outcome.winner is None else "win"] += 1
            continue
        if board.turn == me:
            options = _perfect_options(board)
            assert options, f"no move for perfect {me} on {board}"
            scores = solver.move_scores(board)
            top = max(scores.values())
            for cell in options:
                assert scores[cell] == top, f"perfect {me} may play {cell} on {board}"
                stack.append(board.play(cell))
        else:
            stack.extend(board.play(cell) for cell in board.legal_moves())
    return finals


def _rate(tally: levels.Tally, side: str) -> float:
    return (tally.x_wins if side == "X" else tally.o_wins) / tally.games


def _points(tally: levels.Tally, side: str) -> float:
    wins = tally.x_wins if side == "X" else tally.o_wins
    return (wins + 0.5 * tally.draws) / tally.games


def _play(level: str, side: str, opponent: str, seed: int) -> levels.Tally:
    me, them = player(level), player(opponent)
    x, o = (me, them) if side == "X" else (them, me)
    return arena(x, o, GAMES, random.Random(seed))


def _assert_strictly_decreasing(values: list[float]) -> None:
    for stronger, weaker in zip(values, values[1:], strict=False):
        assert stronger - weaker > MARGIN, values


# --- the proof ------------------------------------------------------------------------------------


def test_perfect_as_x_never_loses_and_only_plays_optimal_moves_against_every_line():
    finals = _walk_every_line("X")
    # The walk really reached finished games, and perfect X wins some of them.
    assert finals["win"] > 0 and finals["draw"] > 0


def test_perfect_as_o_never_loses_and_only_plays_optimal_moves_against_every_line():
    finals = _walk_every_line("O")
    assert finals["win"] > 0 and finals["draw"] > 0


def test_perfect_choose_picks_among_its_optimal_options_on_every_position():
    perfect = player("perfect")
    t = levels.tree()
    for key, cells in zip(t.keys, t.cells, strict=True):
        if not cells:
            continue
        board = Board(key & 0x1FF, key >> 9)
        options = _perfect_options(board)
        assert options <= set(solver.best_moves(board))
        for seed in range(3):
            assert perfect.choose(board, random.Random(seed)) in options


def test_perfect_player_takes_an_immediate_win():
    board = Board.parse("XX.OO....")
    for seed in range(20):
        assert player("perfect").choose(board, random.Random(seed)) == 2


def test_perfect_player_blocks():
    board = Board.parse("XX..O....")
    for seed in range(20):
        assert player("perfect").choose(board, random.Random(seed)) == 2


def test_perfect_against_perfect_is_always_a_draw():
    tally = arena(player("perfect"), player("perfect"), 2_000, random.Random(0))
    assert (tally.x_wins, tally.o_wins, tally.draws) == (0, 0, 2_000)


# --- levels ---------------------------------------------------------------------------------------


def test_levels_are_strictly_ordered_by_win_rate_against_random_as_x():
    rates = [_rate(_play(level, "X", "random", seed=11), "X") for level in STRONGEST_FIRST]
    _assert_strictly_decreasing(rates)


def test_levels_are_strictly_ordered_by_win_rate_against_random_as_o():
    rates = [_rate(_play(level, "O", "random", seed=12), "O") for level in STRONGEST_FIRST]
    _assert_strictly_decreasing(rates)


def test_levels_are_strictly_ordered_by_points_against_perfect_as_x():
    tallies = [_play(level, "X", "perfect", seed=13) for level in STRONGEST_FIRST]
    assert all(t.x_wins == 0 for t in tallies)  # nobody beats perfect
    assert _points(tallies[0], "X") == 0.5  # perfect against perfect: all draws
    _assert_strictly_decreasing([_points(t, "X") for t in tallies])


def test_levels_are_strictly_ordered_by_points_against_perfect_as_o():
    tallies = [_play(level, "O", "perfect", seed=14) for level in STRONGEST_FIRST]
    assert all(t.o_wins == 0 for t in tallies)
    assert _points(tallies[0], "O") == 0.5
    _assert_strictly_decreasing([_points(t, "O") for t in tallies])


def test_perfect_as_x_beats_random_about_995_in_1000():
    tally = _play("perfect", "X", "random", seed=21)
    assert tally.o_wins == 0
    assert 0.985 <= _rate(tally, "X") <= 1.0


def test_perfect_as_o_beats_random_about_916_in_1000():
    tally = _play("perfect", "O", "random", seed=22)
    assert tally.x_wins == 0
    assert 0.90 <= _rate(tally, "O") <= 0.93


# --- arena and tally ------------------------------------------------------------------------------


def test_arena_with_the_same_seed_gives_the_same_tally():
    first = arena(player("medium"), player("easy"), 5_000, random.Random(42))
    second = arena(player("medium"), player("easy"), 5_000, random.Random(42))
    assert first == second
    assert first.by_first == second.by_first


def test_arena_with_a_different_seed_gives_a_different_tally():
    first = arena(player("medium"), player("easy"), 5_000, random.Random(42))
    other = arena(player("medium"), player("easy"), 5_000, random.Random(43))
    assert first != other


def test_tally_totals_add_up_and_match_the_first_move_breakdown():
    tally = arena(player("easy"), player("random"), 3_000, random.Random(3))
    assert tally.games == 3_000
    assert tally.x_wins + tally.o_wins + tally.draws == 3_000
    for side in ("X", "O"):
        rows = tally.by_first[side]
        assert len(rows) == 9
        assert sum(r[0] for r in rows) == tally.x_wins
        assert sum(r[1] for r in rows) == tally.o_wins
        assert sum(r[2] for r in rows) == tally.draws


def test_perfect_always_opens_where_its_tree_says():
    opening = _perfect_options(Board())
    tally = arena(player("perfect"), player("random"), 2_000, random.Random(4))
    played = {cell for cell, row in enumerate(tally.by_first["X"]) if sum(row)}
    assert played <= opening and played


def test_arena_reports_progress_and_ends_with_the_total():
    seen: list[int] = []
    arena(player("random"), player("random"), 1_000, random.Random(5), seen.append)
    assert seen and seen[-1] == 1_000
    assert seen == sorted(seen)


# --- players --------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", STRONGEST_FIRST)
def test_choose_returns_a_legal_cell_on_every_position(level):
    chooser = player(level)
    rng = random.Random(7)
    t = levels.tree()
    for key, cells in zip(t.keys, t.cells, strict=True):
        if cells:
            board = Board(key & 0x1FF, key >> 9)
            assert chooser.choose(board, rng) in board.legal_moves()


def test_choose_on_a_finished_board_raises_value_error():
    with pytest.raises(ValueError):
        player("perfect").choose(Board.parse("XXXOO...."), random.Random(0))


def test_random_level_plays_every_empty_cell():
    board = Board.parse("XX.OO....")
    rng = random.Random(8)
    picks = {player("random").choose(board, rng) for _ in range(200)}
    assert picks == {2, 5, 6, 7, 8}


def test_player_looks_up_every_level_by_name():
    for name in STRONGEST_FIRST:
        assert player(name).name == name
    randomness = [player(name).randomness for name in STRONGEST_FIRST]
    assert randomness == sorted(randomness)
    assert player("perfect").randomness == 0 and player("random").randomness == 1


def test_unknown_level_raises_value_error():
    with pytest.raises(ValueError, match="nope"):
        player("nope")
