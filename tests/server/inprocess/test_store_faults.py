"""Issue 31: a SQLite store that cannot write (full or read-only disk) is `unavailable`, not a
bug: players get `unavailable` (not `internal`), /healthz 503 naming the store, the real error
is never hidden by a second ROLLBACK, and everything comes back by itself with the disk.

Here the disk is simulated per connection (`max_page_count` for a full one, `query_only` for
a read-only one); tests/server/process/test_store_disk.py fills a real small filesystem.
"""

from __future__ import annotations

import sqlite3

import pytest

from ttt.game.match import create
from ttt.store import StoreUnavailable
from ttt.store.sqlite import SqliteStore
from ttt.web import create_app, get_socketio

NOW = 1_700_000_000.0


def pragma_on_every_connection(store: SqliteStore, monkeypatch, pragma: list[str]) -> None:
    """Run `pragma[0]` on every connection the store's pool has or opens (changeable)."""
    pool = store._pool
    opened = pool._open

    def open_with_pragma() -> sqlite3.Connection:
        conn = opened()
        conn.execute(pragma[0])
        return conn

    monkeypatch.setattr(pool, "_open", open_with_pragma)
    for conn in list(pool._idle):
        conn.execute(pragma[0])


def set_pragma(store: SqliteStore, pragma: list[str], value: str) -> None:
    pragma[0] = value
    for conn in list(store._pool._idle):
        conn.execute(value)


def test_a_full_store_raises_unavailable_and_recovers(tmp_path, monkeypatch):
    store = SqliteStore(str(tmp_path / "full.sqlite3"))
    pragma = ["PRAGMA max_page_count = 1"]  # never below the pages in use: no room to grow
    pragma_on_every_connection(store, monkeypatch, pragma)
    with pytest.raises(StoreUnavailable) as full:
        for n in range(2000):
            store.create(create("local", f"p{n:021d}", NOW))
    # The real error, not "cannot rollback - no transaction is active".
    assert "full" in str(full.value) and "rollback" not in str(full.value)
    assert store.ping() is False  # reads work; the write probe does not
    set_pragma(store, pragma, "PRAGMA max_page_count = 1073741823")
    assert store.ping() is True
    store.create(create("local", "q" * 22, NOW))
    store.close()


def test_a_rollback_after_sqlite_rolled_back_is_not_attempted(tmp_path):
    from ttt.store.sqlite_faults import rollback_if_open

    conn = sqlite3.connect(tmp_path / "r.sqlite3", isolation_level=None)
    rollback_if_open(conn)  # no transaction: nothing raised
    conn.execute("BEGIN IMMEDIATE")
    rollback_if_open(conn)
    assert not conn.in_transaction
    conn.close()


@pytest.fixture
def sqlite_app(tmp_path):
    app = create_app({"TESTING": True, "SECRET_KEY": "faults", "TTT_RATE_LIMIT": 0,
                      "TTT_STORE": f"sqlite:///{tmp_path / 'ttt.sqlite3'}"})
    yield app
    app.extensions["ttt_table"].thinker.close()
    app.extensions["ttt_store"].close()


def player(app):
    web = app.test_client()
    web.get("/")
    sio = get_socketio(app).test_client(app, flask_test_client=web)
    assert sio.is_connected()
    return sio


def test_a_read_only_store_answers_unavailable_and_health_503_then_recovers(
        sqlite_app, monkeypatch):
    store = sqlite_app.extensions["ttt_store"].wrapped
    alice = player(sqlite_app)
    game = alice.emit("new_game", {"mode": "local"}, callback=True)["game"]
    pragma = ["PRAGMA query_only = 1"]  # writes fail as on a read-only file: SQLITE_READONLY
    pragma_on_every_connection(store, monkeypatch, pragma)

    refused = alice.emit("move", {"game": game["id"], "cell": 4}, callback=True)
    assert refused["ok"] is False and refused["error"]["code"] == "unavailable", refused
    refused = alice.emit("new_game", {"mode": "local"}, callback=True)
    assert refused["error"]["code"] == "unavailable", refused
    health = sqlite_app.test_client().get("/healthz")
    assert health.status_code == 503 and health.json["down"] == ["store"], health.json

    set_pragma(store, pragma, "PRAGMA query_only = 0")  # the disk is writable again
    assert sqlite_app.test_client().get("/healthz").status_code == 200
    moved = alice.emit("move", {"game": game["id"], "cell": 4}, callback=True)
    assert moved["ok"] is True, moved
    alice.disconnect()
