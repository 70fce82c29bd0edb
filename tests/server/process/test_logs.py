"""Logs for on-call (issue 32): with TTT_LOG_FORMAT=json every line a real process writes is
one JSON object: gunicorn's own, the app's, the libraries'; event lines carry the game, seat,
cell, rev, process and connection; AI replies and endings have lines of their own."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import ROOT, Remote, Server, close_all
from tests.support.stack import Gunicorn

pytestmark = pytest.mark.server
X_WINS = (0, 3, 1, 4, 2)


def parsed(log: Path) -> list[dict]:
    """Every line of the log as JSON (fails on the first that is not)."""
    records = []
    for number, line in enumerate(log.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"line {number} of {log.name} is not JSON: {line!r}")
    return records


def play(url: str) -> tuple[dict, dict, Remote]:
    """A friend game won by X, and one Ultimate AI move (searched in a worker)."""
    alice, bob = Remote(url), Remote(url)
    game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
    assert bob.call("join", {"game": game["id"]})["you"] == "O"
    for i, cell in enumerate(X_WINS):
        assert (alice if i % 2 == 0 else bob).call("move", {"game": game["id"],
                                                            "cell": cell})["ok"]
    ultimate = alice.call("new_game", {"mode": "ai", "you": "X", "variant": "ultimate",
                                       "level": "easy"})["game"]
    assert alice.call("move", {"game": ultimate["id"], "cell": 40})["ok"]
    alice.wait_for("game", lambda g: g["id"] == ultimate["id"] and len(g["moves"]) == 2,
                   timeout=60)
    close_all([bob])
    return game, ultimate, alice


def check_event_lines(records: list[dict], game: dict, ultimate: dict) -> None:
    moves = [r for r in records if r.get("event") == "move" and r.get("game") == game["id"]]
    assert [r["cell"] for r in moves] == list(X_WINS)
    assert [r["seat"] for r in moves] == ["X", "O", "X", "O", "X"]
    revs = [r["rev"] for r in moves]
    assert revs == sorted(set(revs)) and all(isinstance(rev, int) for rev in revs)
    assert all(isinstance(r["process"], int) and len(r["conn"]) == 12 for r in moves)
    assert len({r["conn"] for r in moves}) == 2  # two players, two connections
    over = [r for r in records if r["logger"] == "ttt.games" and r.get("game") == game["id"]]
    assert len(over) == 1 and over[0]["status"] == "won" and over[0]["winner"] == "X"
    ai = [r for r in records if r["message"].startswith("ai move") and r.get("game")
          == ultimate["id"]]
    assert len(ai) == 1 and isinstance(ai[0]["cell"], int) and isinstance(ai[0]["rev"], int)


def test_every_line_of_a_gunicorn_process_is_json(tmp_path):
    log = tmp_path / "gunicorn.log"
    server = Gunicorn({"TTT_STORE": f"sqlite:///{tmp_path / 'ttt.sqlite3'}",
                       "TTT_SECRET_KEY": "json-logs", "TTT_LOG_FORMAT": "json",
                       "TTT_AI_WORKERS": "1", "TTT_DRAIN_SECONDS": "2"}, log).start()
    try:
        game, ultimate, alice = play(server.url)
        close_all([alice])
    finally:
        server.stop()
    records = parsed(log)
    gunicorn = [r["message"] for r in records if r["logger"] == "gunicorn.error"]
    assert any(m.startswith("Starting gunicorn") for m in gunicorn), gunicorn
    assert any("Booting worker" in m for m in gunicorn), gunicorn
    assert any("Shutting down" in m for m in gunicorn), gunicorn
    check_event_lines(records, game, ultimate)
    assert alice.cookie not in log.read_text()


def test_every_line_of_python_app_py_is_json(tmp_path):
    log = tmp_path / "server.log"
    server = Server({"TTT_STORE": f"sqlite:///{tmp_path / 'ttt.sqlite3'}",
                     "TTT_SECRET_KEY": "json-logs", "TTT_LOG_FORMAT": "json",
                     "TTT_AI_WORKERS": "1"}, log=log).start()
    try:
        game, ultimate, alice = play(server.url)
        close_all([alice])
    finally:
        server.stop()
    records = parsed(log)
    assert any(r["logger"] == "ttt.app" and r["message"].startswith("ttt: serving on")
               for r in records)
    check_event_lines(records, game, ultimate)


def test_library_warnings_come_out_as_json():
    """python-socketio, python-engineio and `warnings.warn`, in a process set up for JSON."""
    code = """
import logging, warnings
from ttt.web.ops import logs
logs.configure("json")
import engineio, socketio
socketio.Server()  # would add a bare handler to a logger with no level
logging.getLogger("engineio.server").warning("engineio says %s", "hello")
logging.getLogger("socketio.server").error("socketio says hello")
warnings.warn("a library warning")
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert [r["logger"] for r in lines] == ["engineio.server", "socketio.server", "py.warnings"]
    assert lines[0]["message"] == "engineio says hello"


def test_a_bug_in_a_handler_is_not_called_a_malformed_packet(caplog):
    """Only a packet that fails to decode is the client's fault; a KeyError is ours."""
    from ttt.web.realtime import sockets

    engine = logging.getLogger("engineio.server")
    engine.addFilter(sockets._NoClientTracebacks())

    def decode():
        raise ValueError("bad packet")

    def drain():
        return {}["sid"]

    with caplog.at_level(logging.INFO, logger="engineio.server"):
        for fails in (decode, drain):
            try:
                fails()
            except Exception:
                engine.exception("message handler error")
    first, second = caplog.records[-2:]
    assert first.getMessage() == "refused a malformed packet: ValueError: bad packet"
    assert first.levelname == "WARNING" and first.exc_info is None
    assert second.getMessage().startswith("unexpected error handling a client's packet: "
                                          "KeyError")
    assert second.levelname == "ERROR" and second.exc_info is not None


def test_a_connection_closed_while_it_connects_is_one_line_not_a_bug(caplog):
    """python-socketio's connect handling reads a session a drain has just closed (seen in the
    rolling-restart test): a KeyError there is the client gone, not our bug."""
    from ttt.web.realtime import sockets

    engine = logging.getLogger("engineio.server")
    engine.addFilter(sockets._NoClientTracebacks())
    library: dict = {}  # the library's own frame: its function name and file
    exec(compile("def _handle_connect(environ):\n    return environ['gone-sid']\n",
                 "/site-packages/socketio/server.py", "exec"), library)
    with caplog.at_level(logging.INFO, logger="engineio.server"):
        try:
            library["_handle_connect"]({})
        except KeyError:
            engine.exception("message handler error")
    record = caplog.records[-1]
    assert record.getMessage() == ("a connection closed while its connect packet was handled "
                                   "(KeyError)")
    assert record.levelname == "INFO" and record.exc_info is None


@pytest.mark.redis
def test_every_line_of_a_queue_worker_is_json(redis_url):
    """`python -m ttt worker` (the searches on other machines) logs as the servers do."""
    import os

    done = subprocess.run([sys.executable, "-m", "ttt", "worker", "--redis", redis_url,
                           "--burst"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TTT_LOG_FORMAT": "json"})
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in (done.stdout + done.stderr).splitlines()
             if line.strip()]
    assert lines and lines[0]["message"].startswith("searching for the queue")


def test_a_line_logged_while_a_request_is_served_carries_the_fronts_request_id(app):
    """Issue 45: nginx's `$request_id` (X-Request-Id) in the JSON lines of that request, only
    while it is served, and only when it is a plain id (never a client's bytes)."""
    from ttt.runtime.jsonlog import JsonFormatter
    from ttt.web.ops import logs

    def line() -> dict:
        record = logging.getLogger("ttt.test").makeRecord("ttt.test", logging.WARNING, "x", 1,
                                                          "store slow", (), None)
        return json.loads(JsonFormatter().format(record))

    rid = "0123456789abcdef0123456789abcdef"
    with app.test_request_context("/", headers={"X-Request-Id": rid}):
        app.preprocess_request()
        assert line()["request"] == rid
        logs.forget_request()
    assert "request" not in line()
    for junk in ("x" * 65, "a b", "id{\"level\":\"INFO\"}", "٣"):
        with app.test_request_context("/", headers={"X-Request-Id": junk}):
            app.preprocess_request()
            assert "request" not in line(), junk
            logs.forget_request()
    # A Socket.IO connection's: its handshake's environ, read once.
    environ = {"HTTP_X_REQUEST_ID": rid}
    assert logs.connection_request(environ) == rid and environ["ttt.request_id"] == rid
    assert logs.connection_request(None) is None
    assert logs.connection_request({"HTTP_X_REQUEST_ID": "a\r\nb"}) is None
