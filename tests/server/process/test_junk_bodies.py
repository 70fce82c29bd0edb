"""Issue 31: junk bodies to every JSON endpoint are `bad_request` (400 JSON), never a traceback.

4,000 `[` to POST /api/bots (a session cookie is enough) or to a bot endpoint used to raise
RecursionError inside the JSON parser: 500 and an ERROR traceback in the log per request.
"""

from __future__ import annotations

import pytest
import requests

from tests.support.servers import Log, Server
from tests.support.waiting import eventually

pytestmark = pytest.mark.server

OPERATOR = "operator-token-for-the-junk-test-0123456789"
NESTED = b"[" * 4000
BODIES: dict[str, tuple[bytes, str]] = {
    "nested arrays": (NESTED, "application/json"),
    "nested objects": (b'{"a":' * 4000, "application/json"),
    "nested and closed": (b"[" * 40 + b"]" * 40, "application/json"),
    "nested in an object": (b'{"opponent":' + b"[" * 30 + b"]" * 30 + b"}", "application/json"),
    "huge": (b'{"opponent":"' + b"a" * 5000 + b'"}', "application/json"),
    "invalid": (b'{"opponent":', "application/json"),
    "not utf-8": (b'{"opponent":"\xff\xfe"}', "application/json"),
    "not an object": (b"[1, 2]", "application/json"),
    "a string": (b'"x"', "application/json"),
    "not json typed": (b'{"opponent": "ai:easy"}', "text/plain"),
    "a form": (b"opponent=ai%3Aeasy", "application/x-www-form-urlencoded"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    home = tmp_path_factory.mktemp("junk")
    log = home / "server.log"
    server = Server({"TTT_STORE": f"sqlite:///{home / 'ttt.sqlite3'}",
                     "TTT_SECRET_KEY": "junk-test", "TTT_OPERATOR_TOKEN": OPERATOR,
                     "TTT_BOT_CREATE_RATE": "100000", "TTT_CREATE_RATE": "100000"},
                    log=log).start()
    person = requests.Session()
    person.get(server.url + "/", timeout=10).raise_for_status()
    made = person.post(server.url + "/api/bots", json={"name": "junkbot", "about": "x"},
                       timeout=10)
    assert made.status_code == 200, made.text
    yield server, Log(log), person, made.json()["token"]
    server.stop()


def endpoints(token: str) -> dict[str, tuple[str, dict]]:
    """Every endpoint that reads a JSON body: (path, headers besides the person's cookie)."""
    bot = {"Authorization": f"Bearer {token}"}
    game = "A" * 22
    return {
        "make a bot": ("/api/bots", {}),
        "challenge": ("/api/bot/challenge", bot),
        "act": (f"/api/bot/game/{game}/move", bot),
        "ladder": ("/api/ladder/game", {"Authorization": f"Bearer {OPERATOR}"}),
        "give a seat": (f"/api/game/{game}/opponent", {}),
    }


def wait_for_marker(log: Log, mark: int, marker: str) -> str:
    """The log since `mark`, once the server has logged the request carrying `marker` (its
    access line comes after anything the request itself logged)."""
    def holding() -> str:
        text = log.since(mark)
        return text if marker in text else ""

    return eventually(holding, 30, lambda: f"no {marker} in the log: {log.since(mark)[-2000:]}")


@pytest.mark.parametrize("kind", list(BODIES))
def test_junk_is_a_bad_request_on_every_json_endpoint(site, kind):
    server, log, person, token = site
    body, content_type = BODIES[kind]
    mark = log.size()
    for name, (path, headers) in endpoints(token).items():
        answer = person.post(f"{server.url}{path}?junk={kind.replace(' ', '-')}", data=body,
                             headers={**headers, "Content-Type": content_type}, timeout=30)
        assert answer.status_code == 400, (name, answer.status_code, answer.text[:300])
        assert answer.headers["Content-Type"].startswith("application/json"), name
        refused = answer.json()
        assert refused["ok"] is False and refused["error"]["code"] == "bad_request", refused
        if "typed" in kind or kind == "a form":
            assert "application/json" in refused["error"]["message"], refused
    marker = f"after-{kind.replace(' ', '-')}"
    requests.get(f"{server.url}/healthz?{marker}", timeout=10)
    text = wait_for_marker(log, mark, marker)
    assert "Traceback" not in text and "RecursionError" not in text, text[-3000:]
    assert " ERROR " not in text, text[-3000:]


def test_a_chunked_body_past_the_cap_is_refused(site):
    server, log, person, token = site
    chunks = iter([b'{"opponent":"', b"a" * 3000, b"a" * 3000, b'"}'])
    answer = person.post(f"{server.url}/api/bot/challenge", data=chunks,
                         headers={"Authorization": f"Bearer {token}",
                                  "Content-Type": "application/json"}, timeout=30)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "bad_request"


def test_a_good_body_still_plays(site):
    server, _, person, token = site
    answer = person.post(f"{server.url}/api/bot/challenge", json={"opponent": "ai:easy"},
                         headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 200 and answer.json()["ok"] is True, answer.text
