"""Issue 31: /healthz and ttt_part_up report the store and the message queue each on its own."""

from __future__ import annotations

import pytest

from tests.support.servers import free_port
from ttt.web import create_app

TOKEN = "health-metrics-token"


def built(**config):
    return create_app({"TESTING": True, "SECRET_KEY": "h", "TTT_STORE": "memory://",
                       "TTT_RATE_LIMIT": 0, "TTT_METRICS_TOKEN": TOKEN, **config})


@pytest.fixture
def make():
    apps = []

    def make_app(**config):
        apps.append(built(**config))
        return apps[-1]

    yield make_app
    for app in apps:
        app.extensions["ttt_store"].close()


def part_up(app, part: str) -> float:
    text = app.test_client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
                                 ).get_data(as_text=True)
    line = next(ln for ln in text.splitlines() if ln.startswith(f'ttt_part_up{{part="{part}"}}'))
    return float(line.split()[-1])


def test_healthy_parts_are_each_named(make):
    app = make()
    answer = app.test_client().get("/healthz")
    assert answer.status_code == 200
    assert answer.json == {"ok": True, "parts": {"store": "up"}}
    assert part_up(app, "store") == 1.0


def test_a_store_down_is_named(make, monkeypatch):
    app = make()
    monkeypatch.setattr(app.extensions["ttt_store"].wrapped, "ping", lambda: False)
    answer = app.test_client().get("/healthz")
    assert answer.status_code == 503
    assert answer.json["down"] == ["store"] and answer.json["parts"]["store"] == "down"
    assert answer.json["error"] == "store unavailable"
    assert part_up(app, "store") == 0.0


def test_a_message_queue_down_is_503_naming_the_queue(make):
    """Redis as the message queue out of reach (nothing on that port), the store fine: the
    old check looked at the store only and said healthy."""
    app = make(TTT_MESSAGE_QUEUE=f"redis://127.0.0.1:{free_port()}/0")
    answer = app.test_client().get("/healthz")
    assert answer.status_code == 503, answer.json
    assert answer.json["down"] == ["queue"]
    assert answer.json["parts"] == {"store": "up", "queue": "down"}
    assert part_up(app, "queue") == 0.0 and part_up(app, "store") == 1.0


@pytest.mark.redis
def test_a_message_queue_up_is_named(make, redis_url):
    app = make(TTT_MESSAGE_QUEUE=redis_url)
    answer = app.test_client().get("/healthz")
    assert answer.status_code == 200
    assert answer.json["parts"] == {"store": "up", "queue": "up"}
    assert part_up(app, "queue") == 1.0
