"""Issue 47: a game's searches go to the worker that keeps its tree, and the trees are counted.

Two real worker processes behind the app's scheduler: a game's second search lands on the
worker whose last answer said it keeps that game's tree, and starts from it (a reuse counted
there); the worker killed, its successor starts the game afresh, and the trees it held count as
dropped. /metrics shows the trees the workers keep (games, nodes, bytes) summed over them.
"""

from __future__ import annotations

import pytest

from ttt.pool.thinker import Task
from ttt.rules.ultimate import UltimateBoard
from ttt.web import create_app, get_table

TOKEN = "trees-test-token"
OPENING = (40, 36, 4, 37)  # past the opening book: hard searches


@pytest.fixture
def pooled():
    app = create_app({"TESTING": True, "SECRET_KEY": "t", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0, "TTT_AI_WORKERS": 2, "TTT_METRICS_TOKEN": TOKEN})
    yield app
    get_table(app).thinker.close()
    app.extensions["ttt_store"].close()


def scrape(app) -> dict[str, float]:
    text = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
                                 ).get_data(as_text=True)
    return {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
            for line in text.splitlines() if line and not line.startswith("#")}


def ai_move(thinker, game: str, moves: tuple[int, ...], rev: int) -> int:
    ticket = thinker.move(Task("move", "ultimate", moves, "hard", rev), "owner", "10.0.0.1",
                          game, rev, lambda ticket: None)
    assert ticket.wait(120) and ticket.error is None, ticket.error
    return ticket.result


def a_reply(moves: tuple[int, ...]) -> tuple[int, ...]:
    """The moves and a reply of the player that does not end the game."""
    board = UltimateBoard.from_moves(moves)
    reply = next(m for m in board.legal_moves() if not board.play(m).is_over)
    return (*moves, reply)


def keeping(runners, game_count: int = 1):
    return [r for r in runners if r.trees.get("games") == game_count]


def test_a_games_searches_go_to_the_worker_that_keeps_its_tree_and_a_new_one_starts_afresh(pooled):
    thinker = get_table(pooled).thinker
    runners = thinker.runners
    assert len(runners) == 2
    moves = (*OPENING, ai_move(thinker, "g1", OPENING, 1))
    (home,) = keeping(runners)  # one worker keeps the game's tree, the other none
    (other,) = [r for r in runners if r is not home]
    assert home.trees["nodes"] > 0 and home.trees["reused"] == 0
    seen = scrape(pooled)
    assert seen["ttt_ai_trees"] == 1 and seen["ttt_ai_tree_nodes"] == home.trees["nodes"]
    assert seen["ttt_ai_tree_bytes"] == home.trees["bytes"] > 0
    assert seen["ttt_ai_tree_reuses_total"] == 0

    # The game's next search goes to its home, and starts from the kept tree.
    moves = a_reply(moves)
    moves = (*moves, ai_move(thinker, "g1", moves, 3))
    assert keeping(runners) == [home] and home.trees["reused"] == 1
    assert other.trees.get("games", 0) == 0
    assert scrape(pooled)["ttt_ai_tree_reuses_total"] == 1

    # The home worker dies between moves: its successor starts the game afresh.
    home._child.kill()
    home._child.wait()
    moves = a_reply(moves)
    ai_move(thinker, "g1", moves, 5)
    assert keeping(runners) == [home] and home.restarts == 1
    assert home.trees["reused"] == 0  # the new worker's own count: nothing reused
    figures = home.tree_figures()
    assert figures["reused"] == 1 and figures["dropped_worker_lost"] == 1
    seen = scrape(pooled)
    assert seen["ttt_ai_trees"] == 1 and seen["ttt_ai_tree_reuses_total"] == 1
    assert seen['ttt_ai_trees_dropped_total{reason="worker_lost"}'] == 1
    for reason in ("over", "idle", "full", "stale"):
        assert f'ttt_ai_trees_dropped_total{{reason="{reason}"}}' in seen
