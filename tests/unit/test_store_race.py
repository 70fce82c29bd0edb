"""The Redis store's one-trip write (issue 44) refuses a stale `rev` as the WATCH/MULTI did.

Two OS processes, each with its own RedisStore on one Redis, hold the same game at the same
`rev` (each read it: its cached copy) and land a move on it at the same moment: one lands,
the other's write is refused by the script and its change is computed again on the game as
it now is, where the move is stale. Also: a Redis that forgot the script (SCRIPT FLUSH, a
restart) is sent it again, and a copy made stale by another process is never written over.
"""

from __future__ import annotations

import multiprocessing
import time

from ttt.game.match import MatchError, create, play, take_seat
from ttt.store.redis import RedisStore

ROUNDS = 25
X, O = "x" * 22, "o" * 22  # noqa: E741 - the sides


def _racer(url: str, cell: int, games, barrier, results) -> None:
    """Play X's first move at `cell` in each game sent, all racers at once."""
    store = RedisStore(url)
    try:
        for game_id in iter(games.get, None):
            assert store.get(game_id).rev is not None  # the copy the change is computed on
            seen: list[int] = []

            def change(match, seen=seen):
                seen.append(match.rev)
                return play(match, X, cell, time.time(), version=0)

            barrier.wait(30)
            try:
                store.update(game_id, change)
                outcome = "moved"
            except MatchError as error:
                outcome = error.code
            results.put((cell, game_id, outcome, seen))
    finally:
        store.close()


def _friend_game(store: RedisStore) -> str:
    match = take_seat(create("friend", X, time.time(), you="X"), O, time.time())
    store.create(match)
    return match.id


def test_two_processes_racing_one_move_land_exactly_one(redis_url):
    store = RedisStore(redis_url)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    results = context.Queue()
    queues = [context.Queue(), context.Queue()]
    racers = [context.Process(target=_racer, args=(redis_url, cell, queue, barrier, results))
              for cell, queue in zip((0, 8), queues, strict=True)]
    for racer in racers:
        racer.start()
    try:
        outcomes: dict[str, list] = {}
        for _ in range(ROUNDS):
            game_id = _friend_game(store)
            start = store.get(game_id).rev
            for queue in queues:
                queue.put(game_id)
            for _ in range(2):
                cell, got, outcome, seen = results.get(timeout=30)
                outcomes.setdefault(got, []).append((cell, outcome, seen))
            rounds = outcomes[game_id]
            assert sorted(o for _, o, _ in rounds) == ["moved", "stale"], rounds
            winner = next(c for c, o, _ in rounds if o == "moved")
            _, _, lost_seen = next(r for r in rounds if r[1] == "stale")
            # The loser computed its move on the copy at `start` (refused by the script), then
            # again on the game as the winner left it: stale there, nothing written.
            assert lost_seen == [start, start + 1], rounds
            after = store.get(game_id)
            assert after.moves == (winner,) and after.rev == start + 1
    finally:
        for queue in queues:
            queue.put(None)
        for racer in racers:
            racer.join(30)
        store.close()
    assert all(racer.exitcode == 0 for racer in racers)


def test_a_copy_made_stale_by_another_store_is_not_written_over(redis_url):
    """The first store's cached copy is a move behind: its next change is computed again."""
    mine, theirs = RedisStore(redis_url), RedisStore(redis_url)
    game_id = _friend_game(mine)
    mine.get(game_id)
    theirs.update(game_id, lambda m: play(m, X, 4, time.time()))
    seen = []

    def o_moves(match):
        seen.append(len(match.moves))
        return play(match, O, 0, time.time())

    before, after = mine.update(game_id, o_moves)
    assert seen == [1] or seen == [0, 1]  # a play on the stale copy refuses: O is not on move
    assert after.moves == (4, 0) and mine.get(game_id).moves == (4, 0)
    mine.close()
    theirs.close()


def test_a_redis_that_forgot_the_script_is_sent_it_again(redis_url):
    store = RedisStore(redis_url)
    game_id = _friend_game(store)
    store.redis.script_flush()
    store.update(game_id, lambda m: play(m, X, 4, time.time()))
    assert store.get(game_id).moves == (4,)
    store.close()
