"""The same contract for every store: create, get, atomic update, records, purge."""

import contextlib
import os
import random
import threading
import time
from dataclasses import replace

import pytest

from tests.support.servers import in_ci
from ttt.game.endings import rematch, resign
from ttt.game.match import MatchError, create, play, results, take_seat
from ttt.store import CapReached, Caps, Update, empty_record, open_store

NOW = 1000.0


def _redis_url():
    return os.environ.get("TTT_TEST_REDIS")


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "memory":
        s = open_store("memory://")
    elif request.param == "sqlite":
        s = open_store(f"sqlite:///{tmp_path / 'games.sqlite3'}")
    else:
        url = request.getfixturevalue("redis_url")
        s = open_store(url)
    yield s
    s.close()


def credited(change):
    """A change that also credits the records, as the table does."""

    def apply(match):
        after = change(match)
        return Update(after, tuple(results(match, after)))

    return apply


def win_for_x(store, player="alice"):
    """An AI game (X: the player) one move from X's win on the top row."""
    match = create("ai", player, NOW, you="X", level="easy")
    match = replace(match, moves=(0, 3, 1, 4))
    store.create(match)
    return match


def test_create_then_get_returns_an_equal_match(store):
    match = create("friend", "alice", NOW, you="X")
    store.create(match)
    assert store.get(match.id) == match
    assert store.get("no-such-game-0000000") is None


def test_update_applies_a_change_and_returns_before_and_after(store):
    match = create("local", "alice", NOW)
    store.create(match)
    before, after = store.update(match.id, lambda m: play(m, "alice", 4, NOW))
    assert before == match and after.moves == (4,)
    assert store.get(match.id) == after
    assert store.update("no-such-game-0000000", lambda m: m) is None


def test_a_refused_change_leaves_the_match_untouched(store):
    match = create("local", "alice", NOW)
    store.create(match)
    with pytest.raises(MatchError):
        store.update(match.id, lambda m: play(m, "mallory", 4, NOW))
    assert store.get(match.id) == match


def test_concurrent_moves_on_one_version_land_exactly_once(store):
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    store.create(match)
    landed, refused = [], []
    barrier = threading.Barrier(8)

    def attempt(cell):
        barrier.wait()
        try:
            store.update(match.id, lambda m: play(m, "alice", cell, NOW, version=0))
            landed.append(cell)
        except MatchError as error:
            refused.append(error.code)

    threads = [threading.Thread(target=attempt, args=(c,)) for c in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(landed) == 1 and len(refused) == 7
    assert set(refused) <= {"not_your_turn", "stale"}
    assert store.get(match.id).moves == (landed[0],)


def test_a_game_won_against_the_ai_counts_in_the_record_once(store):
    match = win_for_x(store)
    assert store.record("alice") == empty_record()
    store.update(match.id, credited(lambda m: play(m, "alice", 2, NOW)))
    store.update(match.id, credited(lambda m: m))
    record = store.record("alice")
    assert record["easy"] == {"wins": 1, "draws": 0, "losses": 0}
    assert record["perfect"] == {"wins": 0, "draws": 0, "losses": 0}


def test_current_game_is_remembered_per_player(store):
    assert store.current("alice") is None
    store.set_current("alice", "g" * 22)
    store.set_current("bob", "h" * 22)
    assert store.current("alice") == "g" * 22 and store.current("bob") == "h" * 22


def test_a_write_that_sets_the_current_game_leaves_set_current_the_same(store):
    """`current` given to a create or an update (issue 44: Redis sets it in the write's round
    trip): the `set_current` that follows keeps its meaning, a later one moves it on, and a
    refused create sets nothing."""
    game = create("friend", "alice", NOW, you="X")
    store.create(game, current="alice")
    store.set_current("alice", game.id)
    assert store.current("alice") == game.id
    store.set_current("alice", "g" * 22)
    assert store.current("alice") == "g" * 22
    store.update(game.id, lambda m: Update(take_seat(m, "bob", NOW), current="bob"))
    store.set_current("bob", game.id)
    assert store.current("bob") == game.id
    store.set_current("alice", game.id)  # nothing kept from alice's create: written
    assert store.current("alice") == game.id
    with pytest.raises(CapReached):
        store.create(create("ai", "alice", NOW, level="easy"), Caps(per_player=1, total=100),
                     current="alice")
    assert store.current("alice") == game.id


def test_profile_reads_the_name_the_current_game_the_record_and_the_live_games(store):
    """One read for what a new game needs (issue 28): the same as `name`, `current`,
    `record` and `live_games`."""
    assert store.profile("alice") == (None, None, empty_record(), [])
    store.set_current("alice", "g" * 22)
    assert store.profile("alice") == (None, "g" * 22, empty_record(), [])
    store.set_name("alice", "Ana")
    store.set_name("bob", "Ben")
    match = win_for_x(store)
    assert store.profile("alice").live == [match.id]
    store.update(match.id, credited(lambda m: play(m, "alice", 2, NOW)))
    assert store.record("alice")["easy"]["wins"] == 1
    friends = take_seat(create("friend", "bob", NOW, you="O"), "alice", NOW)
    local = create("local", "alice", NOW)
    store.create(friends)
    store.create(local)
    profile = store.profile("alice")
    assert profile == ("Ana", "g" * 22, store.record("alice"), store.live_games("alice")) == (
        store.name("alice"), store.current("alice"), store.record("alice"),
        sorted([friends.id, local.id]))
    assert profile.live == sorted([friends.id, local.id])
    assert store.profile("bob") == ("Ben", None, empty_record(), [friends.id])


def test_purge_drops_finished_and_abandoned_games_but_keeps_live_ones(store):
    live = create("local", "alice", NOW)
    stale_live = create("local", "alice", NOW - 10_000)
    store.create(live)
    store.create(stale_live)
    finished = win_for_x(store)
    store.update(finished.id, lambda m: play(m, "alice", 2, NOW))
    assert store.count_live() == 2 and store.count_live("alice") == 2
    gone = store.purge(finished_before=NOW + 1, idle_before=NOW - 5_000)
    assert gone == 2
    assert store.get(live.id) is not None
    assert store.get(finished.id) is None and store.get(stale_live.id) is None


def test_ping_answers(store):
    assert store.ping() is True


def test_sqlite_store_survives_reopening(tmp_path):
    url = f"sqlite:///{tmp_path / 'g.sqlite3'}"
    first = open_store(url)
    match = win_for_x(first)
    first.update(match.id, credited(lambda m: play(m, "alice", 2, NOW)))
    first.set_current("alice", match.id)
    first.set_name("alice", "Ana")
    first.close()
    second = open_store(url)
    assert second.get(match.id).moves == (0, 3, 1, 4, 2)
    assert second.record("alice")["easy"]["wins"] == 1
    assert second.current("alice") == match.id and second.name("alice") == "Ana"
    second.close()


def test_unknown_store_url_is_refused():
    with pytest.raises(ValueError):
        open_store("mongodb://nope")


def test_redis_contract_runs_in_ci():
    """Guard: CI must have redis-server, so the redis params above never skip there."""
    if in_ci():
        import shutil

        assert shutil.which("redis-server"), "CI needs redis-server"


def test_live_games_are_counted_per_player_in_every_seat_kind(store):
    store.create(create("local", "alice", NOW))                 # both seats
    store.create(create("friend", "alice", NOW, you="O"))       # X still open
    store.create(create("ai", "alice", NOW, you="X", level="easy"))
    store.create(create("friend", "bob", NOW, you="X"))
    assert store.count_live("alice") == 3 and store.count_live("bob") == 1
    assert store.count_live() == 4


def test_redis_games_expire_finished_soon_and_live_games_only_when_idle(redis_url):
    store = open_store(redis_url, finished_ttl=60, idle_ttl=3600)
    match = win_for_x(store)
    key = f"ttt:game:{match.id}"
    assert 3500 < store.redis.ttl(key) <= 3600
    store.update(match.id, lambda m: play(m, "alice", 2, NOW))
    assert 0 < store.redis.ttl(key) <= 60
    assert store.count_live("alice") == 0
    store.close()


def test_redis_outage_raises_store_unavailable_and_ping_says_no():
    from tests.support.servers import free_port
    from ttt.store import StoreUnavailable

    store = open_store(f"redis://127.0.0.1:{free_port()}/0")
    assert store.ping() is False
    with pytest.raises(StoreUnavailable):
        store.get("a" * 22)
    store.close()


def test_delete_removes_a_game_and_its_live_count(store):
    match = create("friend", "alice", NOW, you="X")
    store.create(match)
    store.delete(match.id)
    assert store.get(match.id) is None and store.count_live("alice") == 0
    store.delete(match.id)  # deleting twice is harmless


def test_caps_hold_inside_the_creating_transaction(store):
    caps = Caps(per_player=3, total=5)
    for _ in range(3):
        store.create(create("ai", "alice", NOW, level="easy"), caps)
    with pytest.raises(CapReached) as refused:
        store.create(create("ai", "alice", NOW, level="easy"), caps)
    assert refused.value.per_player
    store.create(create("friend", "bob", NOW), caps)
    store.create(create("friend", "carol", NOW), caps)
    with pytest.raises(CapReached) as full:
        store.create(create("friend", "dave", NOW), caps)
    assert not full.value.per_player
    assert store.count_live() == 5


def test_parallel_creates_cannot_race_past_the_cap(store):
    """20 creates at once from a player with 45 live games leave at most 50."""
    caps = Caps(per_player=50, total=100_000)
    for _ in range(45):
        store.create(create("ai", "alice", NOW, level="easy"))
    start = threading.Barrier(20)

    def one():
        start.wait()
        with contextlib.suppress(CapReached):
            store.create(create("ai", "alice", NOW, level="easy"), caps)

    threads = [threading.Thread(target=one) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.count_live("alice") == 50


def test_an_update_can_create_a_game_in_the_same_transaction(store):
    match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
    store.create(resign(match, "bob", NOW))
    made = []

    def change(m):
        marked, fresh = rematch(m, "alice", NOW, __import__("random").Random(1))
        made.append(fresh)
        return Update(marked, create=fresh)

    with pytest.raises(MatchError):  # nobody offered: nothing is written, nothing created
        store.update(match.id, change)
    assert not made and store.count_live() == 0
    from ttt.game.endings import offer_rematch

    store.update(match.id, lambda m: offer_rematch(m, "bob", NOW))
    _, after = store.update(match.id, change)
    assert after.rematch_id == made[-1].id
    assert store.get(made[-1].id).seats == {"X": "bob", "O": "alice"}
    assert store.count_live("alice") == 1


def test_names_live_games_and_due_clocks(store):
    assert store.name("alice") is None
    store.set_name("alice", "Ana 👩‍💻")
    assert store.name("alice") == "Ana 👩‍💻"
    timed = take_seat(create("friend", "alice", NOW, you="X", clock=10), "bob", NOW)
    store.create(timed)
    store.create(create("ai", "alice", NOW, level="easy"))
    done = resign(create("ai", "alice", NOW, level="easy"), "alice", NOW)
    store.create(done)
    assert len(store.live_games("alice")) == 2 and timed.id in store.live_games("alice")
    assert store.live_games("bob") == [timed.id]
    # The first moves have the first-move window (FIRST_MOVE, 30 s) each.
    assert store.due(NOW + 29.9) == [] and store.due(NOW + 30) == [timed.id]
    store.update(timed.id, lambda m: play(m, "alice", 4, NOW + 5))
    assert store.due(NOW + 30) == [] and store.due(NOW + 35) == [timed.id]
    store.update(timed.id, lambda m: resign(m, "bob", NOW + 6))
    assert store.due(NOW + 100) == []


def test_purge_drops_games_nobody_touched_soon(store):
    untouched = create("friend", "alice", NOW, you="X")
    joined = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW + 1)
    store.create(untouched)
    store.create(joined)
    store.purge(finished_before=0, idle_before=0, untouched_before=NOW + 10)
    if store.get(untouched.id) is not None:  # Redis lets the short TTL do it
        assert 0 < store.redis.ttl(f"ttt:game:{untouched.id}") <= 6 * 3600
    assert store.get(joined.id) is not None


def test_sqlite_opens_a_file_from_the_first_release(tmp_path):
    import json
    import sqlite3

    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE games (id TEXT PRIMARY KEY, rev INTEGER NOT NULL, updated REAL NOT NULL,
            live INTEGER NOT NULL, seat_x TEXT, seat_o TEXT, body TEXT NOT NULL);
        CREATE TABLE players (id TEXT PRIMARY KEY, current TEXT, record TEXT);
    """)
    body = {"id": "g" * 22, "mode": "friend", "level": None, "seats": {"X": "a", "O": "b"},
            "moves": [4], "claimed_by": "X", "rematch_id": None, "hints": {"X": 0, "O": 0},
            "start": 0, "created": NOW, "updated": NOW, "rev": 2}
    old.execute("INSERT INTO games VALUES (?, 2, ?, 0, 'a', 'b', ?)",
                ("g" * 22, NOW, json.dumps(body)))
    old.commit()
    old.close()
    store = open_store(f"sqlite:///{path}")
    match = store.get("g" * 22)
    assert match.winner == "X" and match.reason == "claim"
    store.set_name("a", "Ana")
    assert store.name("a") == "Ana"
    store.close()


def test_two_processes_on_one_sqlite_file_never_act_on_a_stale_copy(tmp_path):
    """Each SqliteStore keeps the games it wrote: another process's write makes that copy
    stale, and a change is then decided again on the row as stored (moves and refusals)."""
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    one, two = open_store(url), open_store(url)
    try:
        match = take_seat(create("friend", "alice", NOW, you="X"), "bob", NOW)
        one.create(match)
        two.update(match.id, lambda m: play(m, "alice", 4, NOW))  # one's copy is now stale
        # Bob's move: on one's copy it is not his turn; on the row it is, and it lands.
        before, after = one.update(match.id, lambda m: play(m, "bob", 0, NOW))
        assert before.moves == (4,) and after.moves == (4, 0)
        # Alice's move with the version two last saw: stale on the row, whatever two cached.
        with pytest.raises(MatchError) as refused:
            two.update(match.id, lambda m: play(m, "alice", 8, NOW, version=1))
        assert refused.value.code == "stale"
        before, after = two.update(match.id, lambda m: play(m, "alice", 8, NOW, version=2))
        assert after.moves == (4, 0, 8)
        assert one.get(match.id) == two.get(match.id) == after
        # A game ended through a stale copy is ended once, on the stored row.
        ai = create("ai", "carol", NOW, you="X", level="easy")
        one.create(ai)
        two.update(ai.id, lambda m: resign(m, "carol", NOW))
        with pytest.raises(MatchError) as refused:  # one's copy says "playing": not trusted
            one.update(ai.id, lambda m: resign(m, "carol", NOW))
        assert refused.value.code == "game_over"
        two.delete(ai.id)
        assert one.update(ai.id, lambda m: resign(m, "carol", NOW)) is None
    finally:
        one.close()
        two.close()


def _running(store, seconds=10):
    """A timed friend game in which both have moved: X on move, its clock running."""
    from ttt.game.match import play

    match = take_seat(create("friend", "alice", NOW, you="X", clock=seconds), "bob", NOW)
    match = play(play(match, "alice", 4, NOW), "bob", 0, NOW)
    store.create(match)
    return match


def test_resume_stamps_and_gives_an_outage_back_to_running_clocks_once(store):
    from ttt.game.match import credit_outage

    assert store.resume(lambda: NOW, 5.0, credit_outage) == []  # the first stamp: nothing to give
    match = _running(store)  # X runs out at NOW + 10
    done = resign(_running(store), "bob", NOW)
    store.update(done.id, lambda m: resign(m, "bob", NOW))
    assert store.resume(lambda: NOW + 4, 5.0, credit_outage) == []  # a tick, not an outage
    credited = store.resume(lambda: NOW + 104, 5.0, credit_outage)  # down for 100 s
    assert [m.id for m in credited] == [match.id]
    assert store.get(match.id).deadline == NOW + 110 == credited[0].deadline
    assert store.due(NOW + 109) == [] and store.due(NOW + 110) == [match.id]
    assert store.resume(lambda: NOW + 104.5, 5.0, credit_outage) == []  # given once, not twice
    after = store.update(match.id, lambda m: play(m, "alice", 8, NOW + 105))[1]
    assert after.deadline == NOW + 115  # the compare-and-set still holds after a credit


def test_racing_resumes_give_the_outage_back_exactly_once(store):
    from ttt.game.match import credit_outage

    store.resume(lambda: NOW, 5.0, credit_outage)
    match = _running(store)
    barrier = threading.Barrier(6)
    given = []

    def resume():
        barrier.wait()
        given.extend(store.resume(lambda: NOW + 60, 5.0, credit_outage))

    threads = [threading.Thread(target=resume) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(given) == 1 and store.get(match.id).deadline == NOW + 70


def test_sqlite_keeps_the_stamp_across_a_restart(tmp_path):
    from ttt.game.match import credit_outage

    path = tmp_path / "games.sqlite3"
    first = open_store(f"sqlite:///{path}")
    first.resume(lambda: NOW, 5.0, credit_outage)
    match = _running(first)
    first.close()
    again = open_store(f"sqlite:///{path}")
    assert [m.id for m in again.resume(lambda: NOW + 40, 5.0, credit_outage)] == [match.id]
    assert again.get(match.id).deadline == NOW + 50
    again.close()


def test_a_rematch_created_in_an_update_is_refused_by_its_caps_with_nothing_written(store):
    """Caps counted inside the write that creates the game (8 parallel rematches let 10 live
    games through a cap of 3 when the count came before the write)."""
    store.create(create("ai", "alice", NOW, you="X", level="easy"))  # one live game
    done = resign(create("ai", "alice", NOW, you="X", level="easy"), "alice", NOW + 1)
    store.create(done)

    def again(match):
        marked, fresh = rematch(match, "alice", NOW + 2, random.Random(1))
        return Update(marked, create=fresh, caps=Caps(per_player=1, total=100))

    with pytest.raises(CapReached):
        store.update(done.id, again)
    assert store.get(done.id) == done and store.count_live("alice") == 1
    _, marked = store.update(done.id, lambda m: again(m)._replace(caps=Caps(2, 100)))
    assert marked.rematch_id and store.count_live("alice") == 2


def test_a_rematch_counts_against_its_starters_address_in_the_write(store):
    for _ in range(2):
        store.create(replace(create("local", "bob", NOW), origin="addr"))
    done = resign(create("ai", "alice", NOW, you="X", level="easy"), "alice", NOW + 1)
    store.create(done)

    def again(match):
        marked, fresh = rematch(match, "alice", NOW + 2, random.Random(1), origin="addr")
        return Update(marked, create=fresh, caps=Caps(per_player=50, total=100, per_origin=2))

    with pytest.raises(CapReached):
        store.update(done.id, again)
    assert store.get(done.id).rematch_id is None


def test_idle_players_with_no_live_game_lose_their_profile(store):
    store.set_name("b" * 22, "Ben")
    store.set_current("b" * 22, "g" * 22)
    if hasattr(store, "redis"):  # Redis forgets by itself: the profile expires when idle
        ttl = store.redis.ttl("ttt:player:" + "b" * 22)
        assert 0 < ttl <= store.idle_ttl
        return
    store.purge(finished_before=0, idle_before=time.time() + 10)
    assert store.name("b" * 22) is None and store.current("b" * 22) is None


def _ended(store, match, now=NOW + 1):
    """End a live game through the store, as its player would (abort or resign)."""
    from ttt.game.endings import abort

    end = abort if match.mode == "local" else resign
    store.update(match.id, lambda m: end(m, m.seats["X"], now))


def test_live_games_are_counted_per_kind_exactly(store):
    """Games of every mode and variant, created capped and not, some ended, a rematch, one
    deleted, one purged and (Redis) one expired: every kind is counted exactly, zeros named,
    and the kinds add up to the total at every step."""
    from collections import Counter

    from ttt.game.endings import offer_rematch
    from ttt.store import KINDS

    def made(mode, variant, when=NOW, caps=None, **kw):
        kw.setdefault("level", "easy" if mode == "ai" else None)
        match = create(mode, "alice", when, variant=variant, **kw)
        store.create(match, caps)
        return match

    def check(expected):
        counts = store.count_live_by_kind()
        assert list(counts)[:len(KINDS)] == list(KINDS) and set(counts) == set(KINDS)
        assert counts == {kind: expected[kind] for kind in KINDS}
        assert sum(counts.values()) == store.count_live()

    check(Counter())
    caps = Caps(per_player=50, total=1000)
    ai = [made("ai", "classic", caps=caps) for _ in range(3)]
    ai_u = [made("ai", "ultimate"), made("ai", "ultimate", caps=caps)]
    local_u = [made("local", "ultimate", caps=caps) for _ in range(2)]
    stale = made("local", "classic", when=NOW - 10_000)
    friend = made("friend", "classic", clock=10)
    friend_u = made("friend", "ultimate", caps=caps)
    want = Counter({("ai", "classic"): 3, ("ai", "ultimate"): 2, ("local", "ultimate"): 2,
                    ("local", "classic"): 1, ("friend", "classic"): 1,
                    ("friend", "ultimate"): 1})
    check(want)
    _ended(store, ai[0])
    _ended(store, local_u[1])
    store.update(ai[1].id, lambda m: play(m, "alice", 4, NOW + 1))  # a move: still live
    want -= Counter({("ai", "classic"): 1, ("local", "ultimate"): 1})
    check(want)
    # A rematch of an ended friend game is made in the update that marks the old one.
    def again(match):
        marked, fresh = rematch(match, "alice", NOW + 3, random.Random(1))
        return Update(marked, create=fresh)

    store.update(friend.id, lambda m: take_seat(m, "bob", NOW))
    _ended(store, friend)
    check(want - Counter({("friend", "classic"): 1}))
    store.update(friend.id, lambda m: offer_rematch(m, "bob", NOW + 2))
    store.update(friend.id, again)
    check(want)  # its rematch began
    store.delete(friend_u.id)
    want[("friend", "ultimate")] -= 1
    check(want)
    if hasattr(store, "redis"):  # a live game's body expired by its TTL: its ids stay listed
        store.redis.delete(f"ttt:game:{ai_u[0].id}")
        check(want)  # until the purge, in the total and in its kind alike
        want[("ai", "ultimate")] -= 1
    store.purge(finished_before=0, idle_before=NOW - 5_000)
    want[("local", "classic")] -= 1
    check(want)
    assert store.get(stale.id) is None
