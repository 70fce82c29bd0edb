"""Issue 45: failures an on-call engineer sees within a minute, and metrics an alert can trust."""

from __future__ import annotations

import logging
import os
import shutil

import pytest

from ttt.pool.thinker import Task
from ttt.store.sqlite import SqliteStore
from ttt.web import create_app

TOKEN = "oncall-metrics-token"


def built(**config):
    return create_app({"TESTING": True, "SECRET_KEY": "o", "TTT_STORE": "memory://",
                       "TTT_RATE_LIMIT": 0, "TTT_METRICS_TOKEN": TOKEN, "TTT_AI_WORKERS": 0,
                       **config})


def scrape(app) -> dict[str, float]:
    """Every sample of one scrape, by its name and labels as written."""
    text = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
                                 ).get_data(as_text=True)
    return {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
            for line in text.splitlines() if line and not line.startswith("#")}


def test_error_counters_are_at_zero_from_start_up():
    """Each known label value is served at 0 before anything went wrong: `increase()` sees
    the first error (a series born at 1 shows none). The process-wide counters may hold
    earlier tests' counts: there, present is what counts."""
    app = built()
    seen = scrape(app)
    for series in ('ttt_unhandled_errors_total{where="move"}',
                   'ttt_unhandled_errors_total{where="socketio"}',
                   'ttt_unhandled_errors_total{where="/g/<game_id>"}',
                   'ttt_http_server_errors_total{route="/",status="500"}',
                   'ttt_store_errors_total{operation="update"}',
                   'ttt_store_errors_total{operation="create"}',
                   'ttt_connections_refused_total{reason="full"}',
                   'ttt_connections_refused_total{reason="address"}',
                   'ttt_probe_failures_total{probe="/healthz"}',
                   'ttt_probe_failures_total{probe="/readyz"}'):
        assert series in seen, series
    assert seen['ttt_store_errors_total{operation="update"}'] == 0.0
    assert seen["ttt_connections_max"] == app.config["TTT_MAX_OPEN_CONNECTIONS"] > 0
    assert seen["ttt_store_lost"] == 0.0
    assert not [s for s in seen if s.startswith("ttt_http_server_errors_total{route=\"/healthz")]


def test_a_probe_503_is_counted_apart_from_server_errors(monkeypatch):
    app = built()
    before = scrape(app)
    monkeypatch.setattr(app.extensions["ttt_store"].wrapped, "ping", lambda: False)
    assert app.test_client().get("/healthz").status_code == 503
    monkeypatch.undo()
    after = scrape(app)
    probe = 'ttt_probe_failures_total{probe="/healthz"}'
    assert after[probe] == before[probe] + 1
    errors = {k: v for k, v in after.items() if k.startswith("ttt_http_server_errors_total")}
    assert errors == {k: v for k, v in before.items() if k in errors}


def test_a_sqlite_file_deleted_under_the_process_is_the_store_down(tmp_path, caplog):
    """The process keeps reading the deleted file through its descriptors: `SELECT 1` said
    healthy. The file's identity says it is gone, once in the log."""
    path = tmp_path / "ttt.sqlite3"
    store = SqliteStore(str(path))
    try:
        assert store.ping() and not store.lost
        os.unlink(path)
        with caplog.at_level(logging.ERROR, "ttt.store"):
            assert [store.ping() for _ in range(5)] == [False] * 5
        assert store.lost
        assert len([r for r in caplog.records if "lost its data" in r.getMessage()]) == 1
    finally:
        store.close()


def test_a_sqlite_file_replaced_by_another_store_is_the_store_down(tmp_path):
    path, other = tmp_path / "ttt.sqlite3", tmp_path / "other.sqlite3"
    store, elsewhere = SqliteStore(str(path)), SqliteStore(str(other))
    try:
        elsewhere.close()
        assert store.ping()
        shutil.copy(other, tmp_path / "x")
        os.replace(tmp_path / "x", path)  # another file (a restore under a running process)
        assert store.ping() is False and store.lost
    finally:
        store.close()


def test_a_second_process_on_one_sqlite_file_shares_its_identity(tmp_path):
    path = tmp_path / "ttt.sqlite3"
    first, second = SqliteStore(str(path)), SqliteStore(str(path))
    try:
        assert first.identity == second.identity and first.ping() and second.ping()
    finally:
        first.close()
        second.close()


@pytest.mark.redis
def test_a_flushed_redis_is_the_store_down_naming_it(redis_url):
    import redis

    app = built(TTT_STORE=redis_url)
    try:
        assert app.test_client().get("/healthz").status_code == 200
        redis.Redis.from_url(redis_url).flushdb()
        answer = app.test_client().get("/healthz")
        assert answer.status_code == 503 and answer.json["down"] == ["store"]
        assert "lost its data" in answer.json["store"]
        seen = scrape(app)
        assert seen['ttt_part_up{part="store"}'] == 0.0 and seen["ttt_store_lost"] == 1.0
        # Another process started since on the empty Redis does not make it whole again.
        again = built(TTT_STORE=redis_url)
        assert again.test_client().get("/healthz").status_code == 200
        assert app.test_client().get("/healthz").status_code == 503
        again.extensions["ttt_store"].close()
    finally:
        app.extensions["ttt_store"].close()


def test_a_killed_local_worker_is_counted_and_restarted_with_one_line(caplog):
    """kill -9 of a search process: the pool's live count drops at once, and the next search
    starts another with one log line and a restart counted."""
    from ttt.pool import workers

    app = built(TTT_AI_WORKERS=1)
    thinker = app.extensions["ttt_table"].thinker
    try:
        runner = thinker.runners[0]
        task = Task("analyze", "classic", (4,)).as_json()
        runner.run(task, 0.1)
        seen = scrape(app)
        assert seen['ttt_ai_workers{where="local"}'] == 1.0
        assert seen["ttt_ai_worker_restarts_total"] == 0.0
        assert seen['ttt_ai_searches_failed_total{cause="worker_lost"}'] == 0.0
        killed = runner.pid
        runner._child.kill()
        runner._child.wait()
        assert scrape(app)['ttt_ai_workers{where="local"}'] == 0.0
        with caplog.at_level(logging.WARNING, "ttt.workers"):
            runner.run(task, 0.1)
        lines = [r.getMessage() for r in caplog.records if r.name == "ttt.workers"]
        assert lines == [f"AI worker {killed} ended (exit -9): starting another"]
        seen = scrape(app)
        assert seen['ttt_ai_workers{where="local"}'] == 1.0
        assert seen["ttt_ai_worker_restarts_total"] == 1.0
        assert workers.restarts(thinker) == 1
    finally:
        thinker.close()


def test_event_lines_carry_a_keyed_player_hash_stable_across_connections(make_player, app):
    """Two connections of one player (one cookie): the same `player` in both JSON event
    lines, another for another player, and never the player id itself."""
    import json

    from ttt.runtime.jsonlog import JsonFormatter

    lines: list[dict] = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(json.loads(JsonFormatter().format(record)))

    access = logging.getLogger("ttt.access")
    keep, level = Keep(), access.level
    access.addHandler(keep)
    access.setLevel(logging.INFO)
    try:
        cookie = app.test_client()
        for client in (make_player(cookie), make_player(), make_player(cookie)):
            client.emit("new_game", {"mode": "local"}, callback=True)
    finally:
        access.removeHandler(keep)
        access.setLevel(level)
    players = [line.get("player") for line in lines if line.get("event") == "new_game"]
    assert len(players) == 3 and all(players), lines
    assert players[0] == players[2] != players[1]
    assert len({line["conn"] for line in lines}) == 3  # three connections, two players
    ids = {conn.player for conn in app.extensions["ttt_presence"]._conns.values()}
    assert len(ids) == 2 and not any(pid in json.dumps(lines) for pid in ids)
