"""/metrics (operator only), the per-event log line, and a drained `python app.py`."""

from __future__ import annotations

import json
import re
import signal

import pytest
import requests

from tests.support.servers import Remote, Server, close_all
from tests.support.waiting import eventually
from ttt.store import KINDS
from ttt.web import create_app, get_socketio

TOKEN = "metrics-test-token"


def value(text: str, name: str, **labels: str) -> float:
    """One sample of the exposition (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        found = re.fullmatch(r"([a-z_]+)(?:\{(.*)\})? (\S+)", line)
        if found and found.group(1) == name:
            have = ",".join(sorted((found.group(2) or "").split(","))) if found.group(2) else ""
            if have == wanted:
                return float(found.group(3))
    return 0.0


@pytest.fixture
def metered():
    app = create_app({"TESTING": True, "SECRET_KEY": "m", "TTT_STORE": "memory://",
                      "TTT_RATE_LIMIT": 0, "TTT_METRICS_TOKEN": TOKEN})
    yield app
    app.extensions["ttt_store"].close()


def scrape(client) -> str:
    answer = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200 and answer.mimetype == "text/plain"
    return answer.get_data(as_text=True)


def test_metrics_are_off_by_default(client):
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", headers={"Authorization": "Bearer x"}).status_code == 404


def test_a_stranger_is_refused_the_metrics(metered):
    client = metered.test_client()
    assert client.get("/metrics").status_code == 401
    for header in (f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN, "Bearer "):
        assert client.get("/metrics", headers={"Authorization": header}).status_code == 401
    assert "ttt_" not in client.get("/metrics").get_data(as_text=True)


def test_a_separate_bind_takes_metrics_off_the_site():
    app = create_app({"TESTING": True, "SECRET_KEY": "m", "TTT_STORE": "memory://",
                      "TTT_METRICS_TOKEN": TOKEN, "TTT_METRICS_BIND": "127.0.0.1:9"})
    answer = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 404


def test_counters_move_when_games_are_played(metered):
    client = metered.test_client()
    client.get("/")
    sio = get_socketio(metered).test_client(metered, flask_test_client=client)
    before = scrape(client)
    assert value(before, "ttt_connections") == 1 and value(before, "ttt_connected_players") == 1
    game = sio.emit("new_game", {"mode": "local"}, callback=True)["game"]
    for cell in (0, 3, 1, 4, 2):
        assert sio.emit("move", {"game": game["id"], "cell": cell}, callback=True)["ok"]
    refused = sio.emit("move", {"game": game["id"], "cell": 8}, callback=True)
    ultimate = sio.emit("new_game", {"mode": "ai", "variant": "ultimate", "you": "X",
                                     "level": "easy"}, callback=True)["game"]
    assert sio.emit("move", {"game": ultimate["id"], "cell": 40}, callback=True)["ok"]
    searched = value(before, "ttt_ai_search_seconds_count")
    # The AI's reply lands when a worker has found it.
    eventually(lambda: value(scrape(client), "ttt_ai_search_seconds_count") != searched, 60,
               "the ultimate AI's search was never counted")
    after = scrape(client)
    assert value(after, "ttt_events_total", event="move", result="ok") == 6
    code = refused["error"]["code"]
    assert value(after, "ttt_events_total", event="move", result=code) == 1
    assert value(after, "ttt_event_seconds_count", event="move") == 7
    assert value(after, "ttt_games_started_total", mode="local", variant="classic") == 1
    assert value(after, "ttt_games_finished_total", mode="local", variant="classic") == 1
    assert value(after, "ttt_games_started_total", mode="ai", variant="ultimate") == 1
    assert value(after, "ttt_live_games", mode="ai", variant="ultimate") == 1
    assert value(after, "ttt_live_games", mode="local", variant="classic") == 0  # it ended
    assert value(after, "ttt_ai_search_seconds_count") > value(before,
                                                               "ttt_ai_search_seconds_count")
    assert value(after, "ttt_store_errors_total", operation="update") == 0
    sio.disconnect()
    assert value(scrape(client), "ttt_connections") == 0


def live_games(text: str) -> dict[tuple[str, str], float]:
    """Every ttt_live_games sample, by (mode, variant); fails on one without those labels."""
    found = {}
    for line in text.splitlines():
        if line.startswith("ttt_live_games"):
            sample = re.fullmatch(r'ttt_live_games\{mode="(\w+)",variant="(\w+)"\} (\S+)', line)
            assert sample, line
            found[sample.group(1), sample.group(2)] = float(sample.group(3))
    return found


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store_url(request, tmp_path):
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ttt.sqlite3'}"
    return request.getfixturevalue("redis_url")


def test_live_games_are_exported_by_mode_and_variant(store_url):
    """Games of several kinds played through the app: one labelled gauge per kind, zeros
    included, their sum the store's total."""
    app = create_app({"TESTING": True, "SECRET_KEY": "m", "TTT_STORE": store_url,
                      "TTT_RATE_LIMIT": 0, "TTT_METRICS_TOKEN": TOKEN})
    client = app.test_client()
    client.get("/")
    sio = get_socketio(app).test_client(app, flask_test_client=client)
    try:
        assert live_games(scrape(client)) == dict.fromkeys(KINDS, 0)

        def new(**payload):
            # Each in a tab of its own (`from` null): no AI game is left (PROTOCOL v4).
            answer = sio.emit("new_game", {**payload, "from": None}, callback=True)
            assert answer["ok"], answer
            return answer["game"]["id"]

        for _ in range(2):
            new(mode="ai", level="easy", you="X")
        new(mode="ai", variant="ultimate", level="easy", you="X")
        new(mode="friend", variant="ultimate", you="X")
        new(mode="friend", you="O", clock=30)
        ended = new(mode="local")
        for cell in (0, 3, 1, 4, 2):  # X wins the top row: no longer live
            assert sio.emit("move", {"game": ended, "cell": cell}, callback=True)["ok"]
        new(mode="local", variant="ultimate")
        text = scrape(client)
        assert live_games(text) == {
            ("ai", "classic"): 2, ("ai", "ultimate"): 1, ("local", "classic"): 0,
            ("local", "ultimate"): 1, ("friend", "classic"): 1, ("friend", "ultimate"): 1}
        assert sum(live_games(text).values()) == app.extensions["ttt_store"].count_live() == 6
    finally:
        sio.disconnect()
        app.extensions["ttt_table"].thinker.close()
        app.extensions["ttt_store"].close()


def test_an_unreachable_store_keeps_the_live_figure_and_counts_one_error_a_scrape(metered):
    """During an outage the live series stay (NaN before any read, then the last value),
    ttt_store_up says 0, and each scrape counts one failed read."""
    import math

    from ttt.store import StoreUnavailable

    client = metered.test_client()
    store = metered.extensions["ttt_store"].wrapped

    def unreachable():
        raise StoreUnavailable("connection refused")

    store.count_live_by_kind = unreachable
    for failed in (1, 2):  # served all the same, the figures NaN; counted once
        text = scrape(client)
        assert set(live_games(text)) == set(KINDS)
        assert all(math.isnan(v) for v in live_games(text).values())
        assert "ttt_connections 0.0" in text and value(text, "ttt_store_up") == 0
        assert value(text, "ttt_store_errors_total", operation="count_live_by_kind") == failed
    del store.count_live_by_kind
    text = scrape(client)
    assert live_games(text) == dict.fromkeys(KINDS, 0) and value(text, "ttt_store_up") == 1
    assert value(text, "ttt_store_errors_total", operation="count_live_by_kind") == 2
    store.count_live_by_kind = unreachable
    assert live_games(scrape(client)) == dict.fromkeys(KINDS, 0)  # the last value, kept
    del store.count_live_by_kind


def test_the_ai_pool_reports_its_searches_and_its_queue(metered):
    from ttt.web.ops.metrics import observe_search, watch_queue

    class Queue:
        def waiting(self) -> int:
            return 4

    client = metered.test_client()
    count = value(scrape(client), "ttt_ai_search_seconds_count")
    observe_search(0.3)
    watch_queue(Queue())
    text = scrape(client)
    assert value(text, "ttt_ai_search_seconds_count") == count + 1
    assert value(text, "ttt_ai_queue_depth") == 4
    watch_queue(metered.extensions["ttt_table"].thinker)
    assert value(scrape(client), "ttt_ai_queue_depth") == 0


@pytest.mark.server
def test_a_served_process_logs_each_event_as_json_without_secrets(tmp_path):
    log = tmp_path / "server.log"
    server = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "logs",
                     "TTT_LOG_FORMAT": "json", "TTT_METRICS_TOKEN": TOKEN}, log=log).start()
    alice = Remote(server.url)
    try:
        assert alice.call("set_name", {"name": "Zoë <b>"})["ok"]
        game = alice.call("new_game", {"mode": "local"})["game"]
        for cell in (4, 0):
            assert alice.call("move", {"game": game["id"], "cell": cell})["ok"]
        refused = alice.call("move", {"game": game["id"], "cell": 4})
        assert not refused["ok"]
        metrics = requests.get(server.url + "/metrics", timeout=10,
                               headers={"Authorization": f"Bearer {TOKEN}"}).text
        assert value(metrics, "ttt_events_total", event="move", result="ok") == 2
        assert requests.get(server.url + "/metrics", timeout=10).status_code == 401
    finally:
        close_all([alice])
        server.stop()
    text = log.read_text()
    lines = [json.loads(line) for line in text.splitlines()
             if line.startswith("{") and '"ttt.access"' in line]
    mine = [(r["event"], r["result"]) for r in lines if r["game"] == game["id"]]
    assert mine == [("new_game", "ok"), ("move", "ok"), ("move", "ok"),
                    ("move", refused["error"]["code"])], mine
    assert all(isinstance(r["ms"], float | int) and r["level"] == "INFO" for r in lines)
    assert alice.cookie not in text and TOKEN not in text
    assert "Zo" not in text  # a name never reaches the log, escaped or not


@pytest.mark.server
def test_python_app_py_drains_on_sigterm_and_its_player_comes_back(tmp_path):
    from tests.support.stack import player

    store = f"sqlite:///{tmp_path / 'ttt.sqlite3'}"
    log = tmp_path / "server.log"
    server = Server({"TTT_STORE": store, "TTT_SECRET_KEY": "drain"}, log=log).start()
    alice = player(server.url, ["websocket"], reconnect=True)
    try:
        game = alice.call("new_game", {"mode": "local"})["game"]
        assert alice.call("move", {"game": game["id"], "cell": 4})["ok"]
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == 0  # by itself, well before anyone kills it
        # The client hears the close on its own thread.
        eventually(lambda: alice.drops, 30, "the client never heard the close")
        assert alice.drops == 1
        server.start()  # the same port: the client finds it again by itself
        assert _connected(alice)
        assert alice.call("join", {"game": game["id"]}, timeout=15)["game"]["moves"] == [4]
    finally:
        close_all([alice])
        server.stop()
    text = log.read_text()
    assert "drained: 1 connections closed" in text and "Traceback" not in text


def _connected(remote: Remote, timeout: float = 30) -> bool:
    eventually(lambda: remote.sio.connected, timeout, "the client never connected again",
               interval=0.02)
    return True


def test_on_call_figures_are_exported(metered):
    """Issue 32: process and platform collectors, build info, store latency by operation,
    AI queue wait, refused connections, unhandled errors and 5xx by route."""
    from ttt.runtime import fingerprint
    from ttt.web.ops.metrics import observe_wait, refused_connection, unhandled

    client = metered.test_client()
    before = scrape(client)
    observe_wait(0.02)
    refused_connection("full")
    unhandled("move")
    metered.extensions["ttt_store"].get("nosuchgameatall00000a")
    text = scrape(client)
    for name in ("process_resident_memory_bytes", "process_open_fds", "python_info",
                 "python_gc_objects_collected_total"):
        assert name in text, name
    assert value(text, "ttt_build_info", commit=fingerprint.commit(),
                 version=fingerprint.version()) == 1
    assert value(text, "ttt_store_seconds_count", operation="get") >= 1
    assert (value(text, "ttt_ai_queue_wait_seconds_count")
            == value(before, "ttt_ai_queue_wait_seconds_count") + 1)
    assert (value(text, "ttt_connections_refused_total", reason="full")
            == value(before, "ttt_connections_refused_total", reason="full") + 1)
    assert (value(text, "ttt_unhandled_errors_total", where="move")
            == value(before, "ttt_unhandled_errors_total", where="move") + 1)


def test_a_route_that_fails_counts_a_5xx_and_an_unhandled_error(metered):
    from ttt.web.ops.metrics import SERVER_ERRORS, UNHANDLED

    metered.config["PROPAGATE_EXCEPTIONS"] = False  # answered 500 as in production

    @metered.get("/boom-for-the-test")
    def boom():
        raise RuntimeError("a bug")

    errors = SERVER_ERRORS.labels("/boom-for-the-test", "500")._value.get()
    bugs = UNHANDLED.labels("/boom-for-the-test")._value.get()
    assert metered.test_client().get("/boom-for-the-test").status_code == 500
    text = scrape(metered.test_client())
    assert value(text, "ttt_http_server_errors_total", route="/boom-for-the-test",
                 status="500") == errors + 1
    assert value(text, "ttt_unhandled_errors_total", where="/boom-for-the-test") == bugs + 1


def test_a_connection_without_a_session_is_counted_refused(metered):
    client = metered.test_client()
    before = value(scrape(client), "ttt_connections_refused_total", reason="session")
    sio = get_socketio(metered).test_client(metered)  # no page opened: no session cookie
    assert not sio.is_connected()
    after = value(scrape(client), "ttt_connections_refused_total", reason="session")
    assert after == before + 1


def test_the_scrape_passes_promtool(metered, tmp_path):
    """`promtool check metrics` on a real scrape (names, types, help, units)."""
    import subprocess

    from tests.support.servers import need_binary

    promtool = need_binary("promtool")
    metered.extensions["ttt_store"].get("nosuchgameatall00000a")
    text = scrape(metered.test_client())
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_shipped_prometheus_config_passes_promtool(tmp_path):
    """deploy/prometheus.yml as shipped, its token file made as docs/deploy.md says."""
    import subprocess

    from tests.support.servers import ROOT, need_binary

    promtool = need_binary("promtool")
    config = (ROOT / "deploy" / "prometheus.yml").read_text()
    token = tmp_path / "ttt-metrics-token"
    token.write_text("a-token\n")
    token.chmod(0o600)
    assert "/etc/prometheus/ttt-metrics-token" in config
    (tmp_path / "prometheus.yml").write_text(
        config.replace("/etc/prometheus/ttt-metrics-token", str(token)))
    done = subprocess.run([promtool, "check", "config", str(tmp_path / "prometheus.yml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_timings_count_as_the_library_histogram_does() -> None:
    """issue 28: `Timings` folds observations in batches; a scrape sees every one of them in
    the same buckets and sum as prometheus_client's own Histogram."""
    import random

    from prometheus_client import CollectorRegistry, Histogram, generate_latest

    from ttt.web.ops.collectors import Timings
    from ttt.web.ops.metrics import STORE_BUCKETS

    plain = Histogram("plain_seconds", "h", ["operation"], buckets=STORE_BUCKETS,
                      registry=CollectorRegistry())
    fast = Timings("plain_seconds", "h", ["operation"], buckets=STORE_BUCKETS,
                    registry=CollectorRegistry())
    dice = random.Random(3)
    amounts = [*STORE_BUCKETS[:-1], 0.0, 100.0] + [dice.expovariate(500) for _ in range(700)]
    for amount in amounts:  # past FOLD_AT: some folded on the way, the rest at the scrape
        plain.labels("get").observe(amount)
        fast.labels("get").observe(amount)

    def lines(h: Histogram) -> list[str]:
        return [line for line in generate_latest(h).decode().splitlines()  # type: ignore[arg-type]
                if not line.startswith("#") and "_created" not in line]

    def total(h: Histogram) -> float:
        return float(next(line for line in lines(h) if "_sum" in line).split()[-1])

    # Every bucket and the count exactly; the sum to rounding (added in another order).
    assert [line for line in lines(fast) if "_sum" not in line] == \
        [line for line in lines(plain) if "_sum" not in line]
    assert total(fast) == pytest.approx(total(plain), rel=1e-12)
    assert f'plain_seconds_count{{operation="get"}} {float(len(amounts))}' in lines(fast)
    with pytest.raises(ValueError):
        fast.observe(1.0)  # the labelled parent: missing label values, as before


def test_event_counts_fold_into_the_library_counter_across_threads() -> None:
    """issue 28: an event's count (`Labelled`) is one append, folded at each scrape and
    every FOLD_AT counts; eight threads counting at once lose none, and a scrape sees all."""
    import threading

    from prometheus_client import CollectorRegistry, generate_latest

    from ttt.web.ops.collectors import Labelled

    events = Labelled("plain_events", "c", ["event", "result"], registry=CollectorRegistry())
    per_thread = 1000  # each thread passes FOLD_AT a few times: folds race with appends

    def count(result: str) -> None:
        child = events.labels("move", result)
        for _ in range(per_thread):
            child.inc()

    threads = [threading.Thread(target=count, args=("ok" if n % 2 else "stale",))
               for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events.labels("join", "ok").inc(2.5)  # under FOLD_AT: only the scrape folds it
    text = generate_latest(events).decode()  # type: ignore[arg-type]
    assert f'plain_events_total{{event="move",result="ok"}} {4.0 * per_thread}' in text
    assert f'plain_events_total{{event="move",result="stale"}} {4.0 * per_thread}' in text
    assert 'plain_events_total{event="join",result="ok"} 2.5' in text
    with pytest.raises(ValueError):
        events.labels("join", "ok").inc(-1)  # as the library's: counters only go up
    with pytest.raises(ValueError):
        events.inc()  # the labelled parent: missing label values, as before
