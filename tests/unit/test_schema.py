"""Schema versions (issue 32): each store records its layout's version, migrations run once
and are recorded, and a process refuses a store newer than its code knows."""

from __future__ import annotations

import json
import sqlite3

import pytest
import redis

from ttt.store import schema
from ttt.store.redis import MIGRATIONS_KEY, SCHEMA_KEY, RedisStore
from ttt.store.sqlite import SqliteStore


def _sqlite_version(path) -> tuple[int, list]:
    with sqlite3.connect(path) as conn:
        return (conn.execute("PRAGMA user_version").fetchone()[0],
                conn.execute("SELECT version, readable_from FROM migrations").fetchall())


def test_sqlite_records_its_version_once(tmp_path):
    path = tmp_path / "ttt.sqlite3"
    SqliteStore(str(path)).close()
    assert _sqlite_version(path) == (schema.SCHEMA_VERSION,
                                     [(schema.SCHEMA_VERSION, schema.READABLE_FROM)])
    with sqlite3.connect(path) as conn:
        at = conn.execute("SELECT at FROM migrations").fetchone()[0]
    SqliteStore(str(path)).close()  # a second start migrates nothing
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT at FROM migrations").fetchall() == [(at,)]


def test_sqlite_from_an_unversioned_release_is_migrated(tmp_path):
    """A file of the releases before versions (user_version 0, no kind columns)."""
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE games (id TEXT PRIMARY KEY, rev INTEGER NOT NULL, "
                           "updated REAL NOT NULL, live INTEGER NOT NULL, seat_x TEXT, "
                           "seat_o TEXT, body TEXT NOT NULL);"
                           "CREATE TABLE players (id TEXT PRIMARY KEY, current TEXT, record TEXT);")
        conn.execute("INSERT INTO games VALUES ('g1', 1, 0, 1, 'p', NULL, ?)",
                     (json.dumps({"mode": "friend"}),))
    SqliteStore(str(path)).close()
    assert _sqlite_version(path)[0] == schema.SCHEMA_VERSION
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT mode, variant FROM games").fetchall() == [("friend", "classic")]


def _make_newer(path, readable_from: int) -> None:
    newer = schema.SCHEMA_VERSION + 1
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO migrations VALUES (?, ?, 0, 'future')", (newer, readable_from))
        conn.execute(f"PRAGMA user_version = {newer}")


def test_sqlite_newer_than_the_code_is_refused(tmp_path):
    path = tmp_path / "ttt.sqlite3"
    SqliteStore(str(path)).close()
    _make_newer(path, readable_from=schema.SCHEMA_VERSION + 1)
    with pytest.raises(schema.SchemaTooNew, match="schema version 2"):
        SqliteStore(str(path))


def test_sqlite_newer_but_readable_is_served_untouched(tmp_path):
    """A newer release whose migration only added: this code still runs on it (rollback)."""
    path = tmp_path / "ttt.sqlite3"
    SqliteStore(str(path)).close()
    _make_newer(path, readable_from=schema.SCHEMA_VERSION)
    SqliteStore(str(path)).close()
    assert _sqlite_version(path)[0] == schema.SCHEMA_VERSION + 1  # never migrated down


def test_redis_records_its_version_once(redis_url):
    RedisStore(redis_url).close()
    RedisStore(redis_url).close()
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    assert client.hgetall(SCHEMA_KEY) == {"version": str(schema.SCHEMA_VERSION),
                                          "readable_from": str(schema.READABLE_FROM)}
    records = [json.loads(r) for r in client.lrange(MIGRATIONS_KEY, 0, -1)]
    assert [r["version"] for r in records] == [schema.SCHEMA_VERSION]
    assert client.ttl(SCHEMA_KEY) == -1  # never expires


def test_redis_newer_than_the_code_is_refused(redis_url):
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    newer = schema.SCHEMA_VERSION + 1
    client.hset(SCHEMA_KEY, mapping={"version": newer, "readable_from": newer})
    with pytest.raises(schema.SchemaTooNew):
        RedisStore(redis_url)
    client.hset(SCHEMA_KEY, "readable_from", schema.SCHEMA_VERSION)
    RedisStore(redis_url).close()  # readable: served
    assert client.hget(SCHEMA_KEY, "version") == str(newer)


def test_redis_that_lost_its_data_is_reported(redis_url, caplog):
    store = RedisStore(redis_url)
    redis.Redis.from_url(redis_url).flushdb()  # as a restart without persistence
    with caplog.at_level("ERROR", logger="ttt.store"):
        store.purge(0, 0, 0)
    assert "lost its data" in caplog.text
    store.close()
