"""The thinker: fair and bounded scheduling, the cache, dedupe, budgets, and a worker's death."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from tests.support.waiting import eventually
from ttt.pool.thinker import ACTIVE_SECONDS, REPLY_BOUND, Busy, Scheduler, Task, WorkerLost
from ttt.pool.workers import ProcessRunner


class Gate:
    """A fake worker: each run waits until the test opens it; records what ran, in order."""

    def __init__(self, lose: int = 0) -> None:
        self.ran: list[tuple[dict, float]] = []
        self.running = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        self.lose = lose  # the first runs that "die"

    def run(self, task: dict, seconds: float):
        self.ran.append((task, seconds))
        self.running.release()
        assert self.release.acquire(timeout=30), "the test never let the search finish"
        if self.lose:
            self.lose -= 1
            raise WorkerLost("killed")
        return {"cell": task["moves"][-1] if task["moves"] else 0, "kind": task["kind"]}

    def step(self) -> None:
        """Wait for a search to start, then let it finish."""
        assert self.running.acquire(timeout=30), "no search started"
        self.release.release()

    def close(self) -> None:
        pass


def move(scheduler, owner, address, game, rev=1, done=None, moves=(0,)):
    task = Task("move", "ultimate", moves, "hard", 7)
    return scheduler.move(task, owner, address, game, rev, done or (lambda t: None))


def analyze(scheduler, owner, address, moves):
    return scheduler.analyze(Task("analyze", "ultimate", moves), owner, address)


def test_one_search_per_player_and_addresses_take_turns():
    gate = Gate()
    pool = Scheduler([gate], max_queue=20)
    first = move(pool, "ana", "home", "g1", moves=(1,))
    gate.running.acquire(timeout=30)  # ana's first search holds the only worker
    move(pool, "ana", "home", "g2", moves=(2,))   # ana's second waits for her first
    move(pool, "ben", "home", "g3", moves=(3,))   # same address as ana
    move(pool, "cid", "cafe", "g4", moves=(4,))   # another address
    gate.release.release()
    assert first.wait(30)
    for _ in range(3):
        gate.step()
    order = [task["moves"][0] for task, _ in gate.ran]
    # After home's search, cafe has its turn before home's second; ana's second search
    # never ran beside her first.
    assert order[:2] == [1, 4] and sorted(order[2:]) == [2, 3]
    pool.close()


def test_a_join_during_the_ais_turn_shares_the_search_already_asked():
    gate = Gate()
    pool = Scheduler([gate])
    landed: list = []
    first = move(pool, "ana", "home", "g1", rev=5, done=landed.append)
    again = move(pool, "ana", "home", "g1", rev=5, done=landed.append)
    assert again is first
    gate.step()
    assert first.wait(30) and len(gate.ran) == 1 and landed == [first]
    pool.close()


def test_evaluations_are_cached_by_position_and_a_repeat_costs_nothing():
    gate = Gate()
    pool = Scheduler([gate])
    asked = analyze(pool, "ana", "home", (40,))
    assert analyze(pool, "ben", "cafe", (40,)) is asked  # the same search, shared
    gate.step()
    assert asked.wait(30) and pool.searches == 1
    again = analyze(pool, "cid", "pub", (40,))
    assert again.done() and again.result == asked.result and pool.searches == 1
    assert len(gate.ran) == 1
    pool.close()


def test_a_full_queue_refuses_evaluations_but_never_a_move():
    gate = Gate()
    pool = Scheduler([gate], max_queue=2, per_address=2)
    move(pool, "ana", "home", "g1")
    gate.running.acquire(timeout=30)  # running: the queue is empty again
    analyze(pool, "ben", "b", (1,))
    analyze(pool, "cid", "c", (2,))
    with pytest.raises(Busy):
        analyze(pool, "dan", "d", (3,))  # two queued: full
    queued = move(pool, "eve", "e", "g2")  # a move is queued all the same
    with pytest.raises(Busy):
        analyze(pool, "ben", "b", (4,))  # and one search per player
    gate.release.release()
    for _ in range(3):
        gate.step()
    assert queued.wait(30) and queued.error is None
    pool.close()


def test_one_address_gets_its_share_of_the_queue_and_no_more():
    gate = Gate()
    pool = Scheduler([gate], max_queue=8, per_address=2)
    move(pool, "ana", "home", "g1")
    gate.running.acquire(timeout=30)
    analyze(pool, "p1", "crowd", (1,))
    analyze(pool, "p2", "crowd", (2,))
    with pytest.raises(Busy):
        analyze(pool, "p3", "crowd", (3,))  # the crowd's share is taken
    analyze(pool, "p4", "alone", (4,))  # another address still gets in
    gate.release.release()
    for _ in range(3):
        gate.step()
    pool.close()


def test_the_budget_shrinks_with_the_backlog_and_the_view_can_say_so():
    gate = Gate()
    now = [0.0]
    pool = Scheduler([gate], max_queue=50, clock=lambda: now[0])
    move(pool, "p0", "a0", "g0")
    gate.running.acquire(timeout=30)
    assert pool.budget_of("g0") == 1.2  # nobody waiting: the level's full 1.2 s
    for n in range(1, 6):
        move(pool, f"p{n}", f"a{n}", f"g{n}")
    gate.release.release()
    gate.step()
    # Five prefixes waiting on one worker: each search gets a fifth of the reply bound (less
    # the overhead a search costs beyond its budget), so a round of them fits in the bound.
    assert 0.2 <= pool.budget_of("g1") < 1.2
    assert 5 * pool.budget_of("g1") <= REPLY_BOUND
    assert gate.ran[1][1] == pool.budget_of("g1")
    for _ in range(4):
        gate.step()
    # The others stopped asking a while ago: the AI takes its full time again.
    now[0] += ACTIVE_SECONDS + 1
    move(pool, "p5", "a5", "g5", rev=2)
    gate.step()
    assert pool.budget_of("g5") == 1.2
    pool.close()


def test_a_lost_worker_means_the_search_is_asked_again_and_lands_once():
    gate = Gate(lose=1)
    pool = Scheduler([gate])
    landed: list = []
    ticket = move(pool, "ana", "home", "g1", done=landed.append)
    gate.step()  # dies
    gate.step()  # asked again
    assert ticket.wait(30) and ticket.error is None and ticket.attempts == 1
    assert landed == [ticket] and len(gate.ran) == 2
    pool.close()


@pytest.mark.server
def test_a_worker_process_killed_mid_search_is_replaced_and_the_move_still_found():
    runner = ProcessRunner()
    pool = Scheduler([runner])
    try:
        warm = analyze(pool, "ana", "home", (40,))  # starts the worker and waits for it
        assert warm.wait(60) and warm.error is None
        first = runner.pid
        landed: list = []
        # Past the opening book (its moves are instant): a search that takes its time.
        ticket = move(pool, "ana", "home", "g1", done=landed.append, moves=(40, 36, 4, 37))
        eventually(lambda: pool._running, 30, "the search on its worker", interval=0.005)
        os.kill(first, signal.SIGKILL)
        assert ticket.wait(60), "the move was lost with its worker"
        assert ticket.error is None and ticket.attempts == 1
        assert isinstance(ticket.result, int) and ticket.result // 9 == 1  # sent to board 1
        assert landed == [ticket]
        assert runner.pid is not None and runner.pid != first  # a fresh worker
        again = analyze(pool, "ben", "cafe", (40, 36))
        assert again.wait(60) and again.error is None and again.result["best"]
    finally:
        pool.close()


def test_evaluations_take_seats_in_the_capacity_that_refuses_new_games():
    """Issue 41: analyses count toward the AI's capacity like games: past it, a new slow
    game is crowded and an evaluation from a new prefix is busy; those already in keep
    theirs."""
    gate = Gate()
    pool = Scheduler([gate], max_queue=1000, per_address=10)
    seats = pool.capacity()
    asked = [analyze(pool, f"p{n}", f"prefix{n}", (n,)) for n in range(seats)]
    hard = Task("move", "ultimate", (), "hard", 1)
    assert pool.crowded(hard, "newcomer")  # the analysers fill the rotation
    with pytest.raises(Busy):
        analyze(pool, "late", "another", (99,))
    assert pool.evaluations_refused == 1
    analyze(pool, "p0b", "prefix0", (98,))  # a prefix in the rotation still gets in
    for _ in range(len(asked) + 1):
        gate.step()
    assert all(t.wait(30) for t in asked)
    pool.close()
