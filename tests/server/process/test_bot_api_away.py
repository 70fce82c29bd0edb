"""Issue 31: the bot API with its store away answers JSON 503 `unavailable` on every endpoint.

With Redis (store and bot book) down, `book().by_token` raised before the API's error
handler: an HTML 500 and a traceback (`Exception on /api/bot/account`). An open stream died
with a traceback too; now its last line says why.
"""

from __future__ import annotations

import json
import threading

import pytest
import requests

from tests.support.servers import RedisServer, Server, need_binary

pytestmark = [pytest.mark.server, pytest.mark.redis]

OPERATOR = "operator-token-for-the-away-test-0123456789"


def test_every_bot_endpoint_answers_json_503_with_the_store_away(tmp_path):
    redis = RedisServer(need_binary("redis-server"), tmp_path)
    log = tmp_path / "server.log"
    server = Server({"TTT_STORE": redis.url, "TTT_SECRET_KEY": "away",
                     "TTT_OPERATOR_TOKEN": OPERATOR, "TTT_BOT_CREATE_RATE": "1000"},
                    log=log).start()
    try:
        person = requests.Session()
        person.get(server.url + "/", timeout=10).raise_for_status()
        made = person.post(server.url + "/api/bots", json={"name": "awaybot"}, timeout=10)
        assert made.status_code == 200, made.text
        bot = {"Authorization": f"Bearer {made.json()['token']}"}
        lines: list[dict] = []
        opened = requests.get(server.url + "/api/bot/stream", headers=bot, stream=True,
                              timeout=30)
        assert opened.status_code == 200

        def read() -> None:
            try:
                for line in opened.iter_lines():
                    if line:
                        lines.append(json.loads(line))
            except requests.RequestException:  # cut with no last line (as before issue 31)
                lines.append({"type": "cut"})

        reader = threading.Thread(target=read, daemon=True)
        reader.start()

        redis.stop()
        calls = {
            "account": ("GET", "/api/bot/account", bot, None),
            "stream": ("GET", "/api/bot/stream", bot, None),
            "challenge": ("POST", "/api/bot/challenge", bot, {"opponent": "ai:easy"}),
            "act": ("POST", "/api/bot/game/" + "A" * 22 + "/move", bot, {"cell": 4}),
            "bots": ("GET", "/api/bots", {}, None),
            "ladder": ("POST", "/api/ladder/game", {"Authorization": f"Bearer {OPERATOR}"},
                       {"x": "awaybot", "o": "awaybot"}),
        }
        for name, (method, path, headers, body) in calls.items():
            answer = requests.request(method, server.url + path, headers=headers, json=body,
                                      timeout=30)
            assert answer.status_code == 503, (name, answer.status_code, answer.text[:300])
            assert answer.headers["Content-Type"].startswith("application/json"), name
            assert answer.json()["error"]["code"] == "unavailable", (name, answer.json())

        reader.join(30)  # the open stream ends by itself, its last line saying why
        assert not reader.is_alive()
        assert lines[0]["type"] == "hello"
        assert lines[-1]["type"] == "unavailable", lines
        assert lines[-1]["error"]["code"] == "unavailable"
    finally:
        server.stop()
        redis.stop()
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
