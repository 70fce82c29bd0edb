"""Live games per kind beyond the contract (tests/unit/test_store.py): the SQLite file from the
release before the kind columns, the query plans and the move's UPDATE, and Redis indexes
written by a process of the release before the kind indexes."""

from __future__ import annotations

import json
import re
import sqlite3

from ttt.game.endings import abort, resign
from ttt.game.match import create, play
from ttt.store import KINDS, open_store
from ttt.store.codec import to_json
from ttt.store.sqlite import LIVE_BY_KIND

NOW = 1000.0

# The games table and its indexes as the release before the kind columns left them.
PREVIOUS_RELEASE = """
CREATE TABLE games (id TEXT PRIMARY KEY, rev INTEGER NOT NULL, updated REAL NOT NULL,
    live INTEGER NOT NULL, seat_x TEXT, seat_o TEXT, body TEXT NOT NULL,
    untouched INTEGER NOT NULL DEFAULT 0, created REAL, deadline REAL, origin TEXT);
CREATE TABLE players (id TEXT PRIMARY KEY, current TEXT, record TEXT, name TEXT, seen REAL);
CREATE INDEX games_live_x ON games (seat_x) WHERE live = 1;
CREATE INDEX games_live_o ON games (seat_o) WHERE live = 1;
CREATE INDEX games_live ON games (live) WHERE live = 1;
CREATE INDEX games_untouched ON games (created) WHERE untouched = 1;
CREATE INDEX games_deadline ON games (deadline) WHERE deadline IS NOT NULL;
CREATE INDEX players_seen ON players (seen);
CREATE INDEX games_live_origin ON games (origin) WHERE live = 1;
"""


def _old_row(conn: sqlite3.Connection, match, drop_variant: bool = False) -> None:
    """Insert a game as a process of the previous release did (no mode, no variant)."""
    body = to_json(match)
    if drop_variant:  # bodies from before Ultimate have no variant: classic
        del body["variant"]
    conn.execute("INSERT INTO games (id, rev, updated, live, seat_x, seat_o, body, created) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (match.id, match.rev, match.updated, 0 if match.is_over else 1,
                  match.seats["X"], match.seats["O"], json.dumps(body), match.created))


def _expected(**counts: int) -> dict[tuple[str, str], int]:
    named = {tuple(k.split("_")): n for k, n in counts.items()}
    return {kind: named.get(kind, 0) for kind in KINDS}


def test_sqlite_migration_gives_an_older_file_its_kinds_from_the_bodies(tmp_path):
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(PREVIOUS_RELEASE)
    for match in (create("ai", "a", NOW, level="easy"),
                  create("ai", "b", NOW, level="easy"),
                  create("friend", "a", NOW, variant="ultimate"),
                  resign(create("ai", "c", NOW, level="easy", variant="ultimate"), "c", NOW)):
        _old_row(old, match)
    _old_row(old, create("local", "d", NOW), drop_variant=True)
    old.commit()
    old.close()
    store = open_store(f"sqlite:///{path}")
    try:
        assert store.count_live_by_kind() == _expected(ai_classic=2, friend_ultimate=1,
                                                       local_classic=1)
        with store._conn() as conn:
            rows = conn.execute("SELECT mode, variant, live FROM games").fetchall()
            indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master "
                                                  "WHERE type = 'index'")}
        assert sorted(rows) == [("ai", "classic", 1), ("ai", "classic", 1),
                                ("ai", "ultimate", 0), ("friend", "ultimate", 1),
                                ("local", "classic", 1)]
        assert "games_live_kind" in indexes and "games_live" not in indexes
        store.create(create("local", "e", NOW, variant="ultimate"))
        assert store.count_live_by_kind() == _expected(ai_classic=2, friend_ultimate=1,
                                                       local_classic=1, local_ultimate=1)
    finally:
        store.close()


def test_sqlite_counts_a_game_an_older_process_inserts_meanwhile(tmp_path):
    """Sharing the file with a process not yet upgraded: its rows have no kind columns set,
    and are counted by their bodies."""
    path = tmp_path / "shared.sqlite3"
    store = open_store(f"sqlite:///{path}")
    try:
        store.create(create("ai", "a", NOW, level="easy"))
        other = sqlite3.connect(path)
        _old_row(other, create("friend", "b", NOW, variant="ultimate"))
        _old_row(other, create("ai", "c", NOW, level="easy"), drop_variant=True)
        other.commit()
        other.close()
        counts = store.count_live_by_kind()
        assert counts == _expected(ai_classic=2, friend_ultimate=1)
        assert sum(counts.values()) == store.count_live() == 3
    finally:
        store.close()


def test_sqlite_counts_read_one_covering_index_and_a_move_leaves_it_alone(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'g.sqlite3'}")
    try:
        with store._conn() as conn:
            for sql in (LIVE_BY_KIND, "SELECT COUNT(*) FROM games WHERE live = 1"):
                plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
                assert "COVERING INDEX games_live_kind" in plan, plan
        match = create("local", "a", NOW)
        store.create(match)
        statements: list[str] = []
        with store._conn() as conn:  # the pool hands this connection out next (one thread)
            conn.set_trace_callback(statements.append)
        for n, cell in enumerate((4, 0)):
            store.update(match.id, lambda m, c=cell, t=NOW + 1 + n: play(m, "a", c, t))
        with store._conn() as conn:
            conn.set_trace_callback(None)
        assert len(statements) == 2, statements  # one statement a move, nothing else
        for sql in statements:
            found = re.fullmatch(r"UPDATE games SET (.*?)body = '.*' WHERE id = '[\w-]+' "
                                 r"AND rev = \d+", sql, re.S)
            assert found, sql[:200]
            columns = set(re.findall(r"(\w+) = ", found.group(1)))
            assert columns <= {"rev", "updated", "untouched"}, columns
    finally:
        store.close()


def test_redis_purge_mends_the_kind_indexes_an_older_process_left(redis_url):
    """A process of the release before the kind indexes wrote LIVE alone: a game it created
    is in no kind index, a game it ended stays in one. The purge puts both right."""
    store = open_store(redis_url)
    try:
        r = store.redis
        store.create(create("ai", "a", NOW, level="easy"))
        made_before = create("friend", "b", NOW, variant="ultimate")
        r.set(f"ttt:game:{made_before.id}", json.dumps(to_json(made_before)), ex=3600)
        r.zadd("ttt:live", {made_before.id: made_before.updated})
        ended_before = create("local", "c", NOW, variant="ultimate")
        store.create(ended_before)
        ended = abort(ended_before, "c", NOW + 1)
        r.set(f"ttt:game:{ended.id}", json.dumps(to_json(ended)), ex=60)
        r.zrem("ttt:live", ended.id)
        assert store.count_live_by_kind() == _expected(ai_classic=1, local_ultimate=1)
        store.purge(finished_before=0, idle_before=0)
        counts = store.count_live_by_kind()
        assert counts == _expected(ai_classic=1, friend_ultimate=1)
        assert sum(counts.values()) == store.count_live() == 2
        assert r.zscore("ttt:live-kind:friend:ultimate", made_before.id) == made_before.updated
        store.purge(finished_before=0, idle_before=0)  # nothing left to mend
        assert store.count_live_by_kind() == counts
    finally:
        store.close()
