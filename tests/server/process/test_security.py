"""The attacks of the security issue (issue 11), each replayed against the server.

Real server processes for the transport (items 1, 2, 5 and 6): an Engine.IO session
held open by an oversized POST, JSONP and stolen sids, websockets that never join,
junk frames. In process for pages, cookies and the SQLite file (items 6, 7 and 8).
Every test here fails on the code before the fix.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
import websocket
from flask.sessions import SecureCookieSessionInterface

from tests.support.servers import ROOT, Log, Remotes, Server, free_port, in_ci
from tests.support.waiting import eventually
from ttt.web import create_app, get_socketio
from ttt.web.realtime import housekeeping

SECRET = "security-test-secret"
HELLO_SECONDS = 3          # the test server closes sessions that do not join by then
CAP = 4096                 # TTT_MAX_MESSAGE_BYTES's default
EIO = "/socket.io/?EIO=4&transport=polling"


# --- servers, logs, raw HTTP ---------------------------------------------------------------------

def server_env(**extra: str) -> dict[str, str]:
    return {"TTT_STORE": "memory://", "TTT_SECRET_KEY": SECRET, "TTT_RATE_LIMIT": "0",
            "TTT_HELLO_SECONDS": str(HELLO_SECONDS), **extra}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("security") / "server.log"
    srv = Server(server_env(), log=log).start(timeout=120)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def log(server) -> Log:
    return Log(server.log)


@pytest.fixture(scope="module")
def make(server):
    remotes = Remotes(server.url)
    yield remotes
    remotes.close()


class Gunicorn:
    """`gunicorn -w 1 -k gevent ttt.web.wsgi:app` on a free loopback port (the deployment)."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "gunicorn", "-w", "1", "-k", "gevent",
               "-b", f"127.0.0.1:{self.port}", "ttt.web.wsgi:app"]
        import gunicorn.config

        if hasattr(gunicorn.config, "ControlSocketDisable"):  # gunicorn 25.1+
            cmd.insert(3, "--no-control-socket")
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, env={**os.environ, **env, "TTT_ASYNC_MODE": "gevent"},
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        eventually(lambda: self._healthy(), 120, "gunicorn did not become healthy")
        self.pid = self._worker()

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {self.proc.returncode}")
        with contextlib.suppress(requests.RequestException):
            return requests.get(self.url + "/healthz", timeout=1).status_code == 200
        return False

    def _worker(self) -> int:
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        return int(children.split()[0])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def need_module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        if in_ci():
            pytest.fail(f"{name} is required in CI (the prod extra installs it)")
        pytest.skip(f"{name} is not installed (the prod extra); CI fails instead")

def cookie_of(base: str) -> str:
    """A fresh player's session cookie, as the page hands it out."""
    http = requests.Session()
    http.get(base + "/", timeout=10).raise_for_status()
    return http.cookies["session"]


def handshake(base: str, cookie: str | None = None) -> str:
    """Open an Engine.IO polling session; its sid."""
    headers = {"Cookie": f"session={cookie}"} if cookie else {}
    answer = requests.get(base + EIO, headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    return json.loads(answer.text[1:].split("\x1e")[0])["sid"]


def poll_until(url: str, headers: dict, *needles: str, timeout: float = 30) -> str:
    """Long-poll a session until its answers hold every needle; what it answered."""
    answers: list[str] = []

    def holding() -> str:
        answer = requests.get(url, headers=headers, timeout=timeout)
        assert answer.status_code == 200, answer.text
        answers.append(answer.text)
        text = "".join(answers)
        return text if all(needle in text for needle in needles) else ""

    return eventually(holding, timeout, lambda: f"no {needles} in {''.join(answers)[-300:]!r}",
                      interval=0)


def raw_request(port: int, head: str, body: bytes = b"", timeout: float = 10) -> int:
    """Send bytes as they are (no client library to tidy them); the answer's status code."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        while b"\r\n" not in answer:
            part = s.recv(4096)
            if not part:
                break
            answer += part
    match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    assert match, f"no HTTP answer: {answer[:80]!r}"
    return int(match.group(1))


def oversized_post(port: int, sid: str, kind: str) -> int:
    """A POST to a session nobody polls: over the cap (by far, by one byte, chunked), or a PING."""
    path = f"{EIO}&sid={sid}"
    if kind in ("content-length", "just-over"):
        body = b"4" + b"x" * (CAP + (1000 if kind == "content-length" else 0))
        return raw_request(port, f"POST {path} HTTP/1.1\nHost: x\nContent-Type: text/plain\n"
                                 f"Content-Length: {len(body)}\n", body)
    if kind == "chunked":
        chunk = b"4" + b"x" * 1023
        body = b"".join(b"400\r\n" + chunk + b"\r\n" for _ in range(6)) + b"0\r\n\r\n"
        return raw_request(port, f"POST {path} HTTP/1.1\nHost: x\nContent-Type: text/plain\n"
                                 "Transfer-Encoding: chunked\n", body)
    # A client PING: python-engineio disconnects on it and waits for a poll, as on a big body.
    return raw_request(port, f"POST {path} HTTP/1.1\nHost: x\nContent-Type: text/plain\n"
                             "Content-Length: 1\n", b"2")


def resources(pid: int) -> tuple[int, int]:
    """A process's open files and threads."""
    return len(os.listdir(f"/proc/{pid}/fd")), len(os.listdir(f"/proc/{pid}/task"))


def open_files(pid: int) -> list[str]:
    """What a process's file descriptors point at (sockets with their TCP state)."""
    states = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                states[fields[9]] = f"{fields[1]}->{fields[2]} state {fields[3]}"
    found = []
    for fd in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            inode = target[8:-1] if target.startswith("socket:[") else None
            found.append(f"{fd}: {target} {states.get(inode, '') if inode else ''}".strip())
    return found


def stacks(pid: int, log: Path | None) -> str:
    """What the server's threads are doing, by where they stand (app.py dumps them on SIGUSR1)."""
    if log is None or not log.exists():
        return "(no server log to read stacks from)"
    start = log.stat().st_size
    sizes: list[int] = []

    def dumped() -> bool:  # begun, and no longer growing
        sizes.append(log.stat().st_size)
        return len(sizes) > 1 and sizes[-1] == sizes[-2] > start

    os.kill(pid, signal.SIGUSR1)
    # The server's own signal handler (faulthandler, in C: no Python runs until it is done)
    # writes every thread's stack at once: wait until it has, or take what came after 10 s
    # (this only explains a failure).
    with contextlib.suppress(AssertionError):
        eventually(dumped, 10, "the stack dump", interval=0.2)
    dump = log.read_bytes()[start:].decode("utf-8", "replace")
    places = collections.Counter(
        " <- ".join(line.strip() for line in block.splitlines()[1:4])
        for block in dump.split("\n\n") if block.strip())
    tasks: collections.Counter = collections.Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():  # what the kernel says of each thread
        with contextlib.suppress(OSError):
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
            tasks[f"{state} in {(task / 'wchan').read_text() or '-'}"] += 1
    return ("threads by their top frames:\n" + "\n".join(
        f"{count:5d} x {place}" for place, count in places.most_common(12))
        + f"\nthreads by kernel state: {dict(tasks)}")


# --- item 1: a body Engine.IO would choke on never reaches it ---------------------------------

ATTACKS = 400
KINDS = ("content-length", "just-over", "chunked", "ping-packet")


def attack_and_recover(base: str, port: int, pid: int, threads_matter: bool,
                       log: Path | None = None) -> dict:
    """Open sessions and hit each with a POST that used to leak; wait for the server to settle."""
    fds0, threads0 = resources(pid)
    statuses: dict[str, set[int]] = {kind: set() for kind in KINDS}
    for i in range(ATTACKS):
        kind = KINDS[i % len(KINDS)]
        statuses[kind].add(oversized_post(port, handshake(base), kind))
    fds1, threads1 = resources(pid)
    assert statuses == {"content-length": {413}, "just-over": {413}, "chunked": {413},
                        "ping-packet": {400}}

    # The leak kept one thread and one socket per attack, for good. A handful more than
    # before is not that: the last connections' sockets, closed by the server's own garbage
    # collection, may stay open a while in an otherwise idle process (seen: up to 4).
    slack = ATTACKS // 25

    def settled() -> bool:
        fds, threads = resources(pid)
        return fds <= fds0 + slack and (not threads_matter or threads <= threads0 + slack)

    # Each handshake's ping task sleeps one ping interval (10 s): wait for the state, not a time.
    try:
        eventually(settled, 150, "the server kept what the attack opened")
    except AssertionError as error:
        raise AssertionError(f"{error}: before {fds0} files, {threads0} threads; now "
                             f"{resources(pid)}; files {open_files(pid)}\n{stacks(pid, log)}"
                             ) from None
    fds2, threads2 = resources(pid)
    assert requests.get(base + "/healthz", timeout=10).status_code == 200
    assert requests.get(base + "/", timeout=10).status_code == 200
    numbers = {"before": (fds0, threads0), "right after": (fds1, threads1),
               "settled": (fds2, threads2)}
    print(f"\n{ATTACKS} bad POSTs, (open files, threads): {numbers}")
    return numbers


@pytest.mark.server
def test_oversized_or_unexpected_posts_leak_no_thread_or_socket(tmp_path):
    srv = Server(server_env(), log=tmp_path / "server.log").start(timeout=120)
    try:
        attack_and_recover(srv.url, srv.port, srv.proc.pid, threads_matter=True,
                           log=tmp_path / "server.log")
    finally:
        srv.stop()


@pytest.mark.server
def test_oversized_or_unexpected_posts_leak_nothing_under_gunicorn_gevent(tmp_path):
    need_module("gunicorn")
    need_module("gevent")
    srv = Gunicorn(server_env(), tmp_path / "gunicorn.log")
    try:  # greenlets are not threads: the open files tell
        attack_and_recover(srv.url, srv.port, srv.pid, threads_matter=False)
    finally:
        srv.stop()


@pytest.mark.server
def test_a_body_within_the_cap_still_goes_through(server, make):
    player = make()
    sid = handshake(server.url, player.cookie)
    headers = {"Cookie": f"session={player.cookie}", "Content-Type": "text/plain"}
    url = f"{server.url}{EIO}&sid={sid}"
    assert requests.post(url, data="40", headers=headers, timeout=10).status_code == 200
    assert requests.get(url, headers=headers, timeout=10).text.startswith("40{")
    call = '421["join",{"pad":"' + "x" * (CAP - 40) + '"}]'
    assert len(call) <= CAP
    assert requests.post(url, data=call, headers=headers, timeout=10).status_code == 200

    def chunks():
        yield b'422["join",'
        yield b"{}]"

    assert requests.post(url, data=chunks(), headers=headers, timeout=10).status_code == 200
    poll_until(url, headers, '431[{"ok":true', '432[{"ok":true')


def test_engineio_disconnect_does_not_wait_for_a_poll():
    """The hook under the guard: python-engineio's disconnect waits until a GET drains it."""
    app = create_app({"TESTING": True, "SECRET_KEY": SECRET, "TTT_STORE": "memory://",
                      "TTT_HELLO_SECONDS": 0})
    try:
        answer = app.test_client().get(EIO)
        sid = json.loads(answer.get_data(as_text=True)[1:])["sid"]
        eio = get_socketio(app).server.eio
        done = threading.Event()
        threading.Thread(target=lambda: (eio.disconnect(sid), done.set()), daemon=True).start()
        assert done.wait(10), "Engine.IO's disconnect waits for a poll that never comes"
        assert sid not in eio.sockets
    finally:
        app.extensions["ttt_store"].close()


# --- item 2: JSONP, and sids that travel without their cookie ------------------------------------

@pytest.mark.server
@pytest.mark.parametrize("query", ["&j=1", "&j=0", "&j=", "&j=x"])
def test_jsonp_polling_is_refused(server, make, query):
    player = make()
    answer = requests.get(server.url + EIO + query, timeout=10,
                          headers={"Cookie": f"session={player.cookie}"})
    assert answer.status_code == 400
    assert "___eio" not in answer.text and '"sid"' not in answer.text
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


def same_player_other_cookie(cookie: str) -> str:
    """The same player's id in a cookie of other bytes (as Flask signs it again each visit)."""
    from flask import Flask

    signer = Flask("same-key")
    signer.secret_key = SECRET
    serializer = SecureCookieSessionInterface().get_signing_serializer(signer)
    data = serializer.loads(cookie)
    other = serializer.dumps({**data, "tab": 2})
    assert other != cookie
    return other


@pytest.mark.server
def test_a_polling_session_answers_only_to_the_cookie_that_opened_it(server, make, log):
    victim, mallory = make(), make()
    sid = handshake(server.url, victim.cookie)
    url = f"{server.url}{EIO}&sid={sid}"
    mine = {"Cookie": f"session={victim.cookie}"}
    assert requests.post(url, data="40", headers=mine, timeout=10).status_code == 200
    assert requests.get(url, headers=mine, timeout=10).text.startswith("40{")
    strangers = {"no cookie": {}, "another player": {"Cookie": f"session={mallory.cookie}"},
                 "garbage": {"Cookie": "session=garbage"},
                 "two cookies": {"Cookie": f"session={mallory.cookie}; session={victim.cookie}"}}
    for who, headers in strangers.items():
        assert requests.get(url, headers=headers, timeout=10).status_code == 400, who
        assert requests.post(url, data='421["join",{}]', headers=headers,
                             timeout=10).status_code == 400, who
        # An sid a second time in the query, or blank, does not get around it either.
        tricky = f"{server.url}{EIO}&sid=&sid={sid}"
        assert requests.get(tricky, headers=headers, timeout=10).status_code == 400, who
    # The websocket upgrade of that session needs the cookie as well.
    ws_url = url.replace("http://", "ws://").replace("polling", "websocket")
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(ws_url, timeout=10)
    assert refused.value.status_code == 400
    # The owner goes on, with the very cookie or with the same player's cookie signed again.
    again = {"Cookie": f"session={same_player_other_cookie(victim.cookie)}"}
    assert requests.post(url, data='422["join",{}]', headers=again, timeout=10).status_code == 200
    poll_until(url, mine, '432[{"ok":true')
    ws = websocket.create_connection(ws_url, header=[f"Cookie: session={victim.cookie}"],
                                     timeout=10)
    try:
        ws.send("2probe")
        assert ws.recv() == "3probe"
    finally:
        ws.close()
    assert "Traceback" not in log.since(0)


@pytest.mark.server
def test_unknown_sids_are_refused_without_a_trace(server, make):
    player = make()
    url = f"{server.url}{EIO}&sid=AAAAAAAAAAAAAAAAAAAA"
    answer = requests.get(url, headers={"Cookie": f"session={player.cookie}"}, timeout=10)
    assert answer.status_code == 400
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.server
def test_socketio_answers_say_nosniff(server, make):
    player = make()
    answer = requests.get(server.url + EIO, headers={"Cookie": f"session={player.cookie}"},
                          timeout=10)
    assert answer.status_code == 200
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


# --- item 5 (the transport's part): sessions that never join are closed -------------------------

@pytest.mark.server
def test_a_websocket_that_never_joins_is_closed(server, make):
    player = make()  # a bystander who joined long ago stays
    url = server.url.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
    ws = websocket.create_connection(url, header=[f"Cookie: session={player.cookie}"],
                                     timeout=30)
    started = time.monotonic()
    closed = False
    try:
        assert ws.recv().startswith("0{")
        while time.monotonic() - started < 60:  # answer pings: only the missing join counts
            try:
                message = ws.recv()
            except (websocket.WebSocketException, OSError):
                closed = True
                break
            if message == "2":
                ws.send("3")
            elif message in ("", "1"):  # a close frame, or Engine.IO's close packet
                closed = True
                break
    finally:
        with contextlib.suppress(Exception):
            ws.close(timeout=1)
        ws.shutdown()
    assert closed, "a websocket that never sent a Socket.IO connect is still open after 60 s"
    assert player.call("join", {})["ok"]


@pytest.mark.server
def test_a_polling_session_that_never_joins_is_closed(server, make):
    player = make()
    sid = handshake(server.url, player.cookie)
    url = f"{server.url}{EIO}&sid={sid}"
    headers = {"Cookie": f"session={player.cookie}"}
    started = time.monotonic()
    got = ""
    while "1" not in got.split("\x1e") and time.monotonic() - started < 60:
        answer = requests.get(url, headers=headers, timeout=40)
        if answer.status_code != 200:
            break
        got = answer.text
        if got == "2":
            requests.post(url, data="3", headers=headers, timeout=10)
    assert time.monotonic() - started < 60, "a session that never joined stayed open"


# --- item 6: junk websocket frames --------------------------------------------------------------

JUNK = ["", "x", "-1", "-1[]", "xyz", "²", " 4", "bA"]  # each crashed Engine.IO's loop


class Raw:
    """A Socket.IO connection spoken by hand over a websocket."""

    def __init__(self, base: str, cookie: str) -> None:
        url = base.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
        self.ws = websocket.create_connection(url, header=[f"Cookie: session={cookie}"],
                                              timeout=10)
        assert self.ws.recv().startswith("0{")
        self.ws.send("40")
        assert self.ws.recv().startswith("40{")
        self.next_id = 100

    def call(self, event: str, payload_json: str, timeout: float = 10) -> dict:
        self.next_id += 1
        ack = f"43{self.next_id}["
        self.ws.send(f'42{self.next_id}["{event}",{payload_json}]')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            message = self.ws.recv()
            if message == "2":
                self.ws.send("3")
            elif message.startswith(ack):
                return json.loads(message[len(ack) - 1:])[0]
        raise TimeoutError(f"no answer to {event}")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close(timeout=1)
        self.ws.shutdown()


def server_lines(text: str) -> list[str]:
    """The log lines that are not an access log (Werkzeug's, or ours of each event)."""
    return [line for line in text.splitlines()
            if line.strip() and not re.search(r'\] "[A-Z]+ /| ttt\.access ', line)]


@pytest.mark.server
@pytest.mark.parametrize("frame", JUNK, ids=[repr(f) for f in JUNK])
def test_junk_websocket_frames_are_dropped_quietly(server, make, log, frame):
    bystander = make()
    game = bystander.call("new_game", {"mode": "local"})["game"]
    mallory = make()
    mark = log.size()
    raw = Raw(server.url, mallory.cookie)
    try:
        raw.ws.send(frame)
        raw.ws.send(frame)
        assert raw.call("join", "{}")["ok"]  # after the junk, in order: it was read and dropped
    finally:
        raw.close()
    answer = bystander.call("move", {"game": game["id"], "cell": 4})
    assert answer["ok"], answer
    text = log.since(mark)
    assert "Traceback" not in text and '" 500 ' not in text, text[-2000:]
    assert len(server_lines(text)) <= 1, text  # one line for the connection, at most


@pytest.mark.server
@pytest.mark.parametrize("frame", ["", "x", "-1"], ids=["empty", "x", "-1"])
def test_junk_during_a_websocket_upgrade_is_dropped_quietly(server, make, log, frame):
    player = make()
    mark = log.size()
    sid = handshake(server.url, player.cookie)
    url = f"{server.url}{EIO}&sid={sid}"
    headers = {"Cookie": f"session={player.cookie}"}
    assert requests.post(url, data="40", headers=headers, timeout=10).status_code == 200
    assert requests.get(url, headers=headers, timeout=10).text.startswith("40{")
    ws = websocket.create_connection(url.replace("http://", "ws://").replace("polling",
                                                                           "websocket"),
                                     header=[f"Cookie: session={player.cookie}"], timeout=10)
    try:
        ws.send(frame)
        ws.send("2probe")
        assert ws.recv() == "3probe"
        ws.send("5")
        ws.send('421["join",{}]')
        message = ws.recv()
        while message in ("2", "6"):
            message = ws.recv()
        assert message.startswith('431[{"ok":true'), message
    finally:
        with contextlib.suppress(Exception):
            ws.close(timeout=1)
        ws.shutdown()
    text = log.since(mark)
    assert "Traceback" not in text and '" 500 ' not in text, text[-2000:]


# --- ids (the rest is in test_hardening.py) -----------------------------------------------------

def test_a_player_id_with_a_trailing_newline_is_replaced(client):
    with client.session_transaction() as session:
        session["pid"] = "A" * 22 + "\n"
    client.get("/")
    with client.session_transaction() as session:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", session["pid"], re.ASCII)


# --- the cookie over HTTPS ------------------------------------------------------------------------

def set_cookie_of(app, path: str = "/") -> str:
    answer = app.test_client().get(path, base_url="https://localhost")
    (cookie,) = answer.headers.getlist("Set-Cookie")
    return cookie


@pytest.mark.parametrize("source", ["config", "environment"])
def test_a_secure_cookie_is_a_host_cookie(monkeypatch, source):
    config = {"TESTING": True, "SECRET_KEY": SECRET, "TTT_STORE": "memory://"}
    if source == "config":
        config["SESSION_COOKIE_SECURE"] = True
    else:
        monkeypatch.setenv("TTT_COOKIE_SECURE", "1")
    app = create_app(config)
    try:
        cookie = set_cookie_of(app)
        assert cookie.startswith("__Host-ttt=")
        attributes = [a.strip().lower() for a in cookie.split(";")[1:]]
        assert "secure" in attributes and "path=/" in attributes
        assert not any(a.startswith("domain") for a in attributes)
    finally:
        app.extensions["ttt_store"].close()


def test_a_plain_or_named_cookie_keeps_its_name():
    plain = create_app({"TESTING": True, "SECRET_KEY": SECRET, "TTT_STORE": "memory://"})
    named = create_app({"TESTING": True, "SECRET_KEY": SECRET, "TTT_STORE": "memory://",
                        "SESSION_COOKIE_SECURE": True, "SESSION_COOKIE_NAME": "mine"})
    try:
        assert set_cookie_of(plain).startswith("session=")
        assert set_cookie_of(named).startswith("mine=")
    finally:
        plain.extensions["ttt_store"].close()
        named.extensions["ttt_store"].close()


# --- item 8: the purge loop truncates the WAL (the file itself: test_hardening.py) ------------

def test_the_purge_loop_checkpoints_the_store():
    app = create_app({"TESTING": True, "SECRET_KEY": SECRET, "TTT_STORE": "memory://",
                      "TTT_PURGE_EVERY": 0})
    store = app.extensions["ttt_store"]
    calls: list[str] = []

    class Stop(BaseException):
        pass

    class Recorder:
        def __getattr__(self, name):
            return getattr(store, name)

        def purge(self, *args):
            calls.append("purge")
            return 0

        def checkpoint(self):
            calls.append("checkpoint")

    class OneRound:
        rounds = 0

        def sleep(self, seconds):
            self.rounds += 1
            if self.rounds > 1:
                raise Stop

        def start_background_task(self, target, *args):
            self.rounds = 0  # each loop gets one round
            with contextlib.suppress(Stop):
                target(*args)

    socketio = app.extensions["ttt_socketio"]
    app.extensions["ttt_store"] = Recorder()
    app.extensions["ttt_socketio"] = OneRound()
    try:
        housekeeping.start(app)
    finally:
        app.extensions["ttt_store"] = store
        app.extensions["ttt_socketio"] = socketio
        store.close()
    assert calls == ["purge", "checkpoint"]


# --- the guard's own memory -----------------------------------------------------------------------

def test_the_guard_forgets_sessions_that_end():
    from ttt.web.transport.guard import Guard

    app = create_app({"TESTING": True, "SECRET_KEY": SECRET, "TTT_STORE": "memory://",
                      "TTT_HELLO_SECONDS": 0})
    try:
        guard = app.extensions["ttt_guard"]
        assert isinstance(guard, Guard)
        client = app.test_client()
        client.get("/")
        sids = [json.loads(client.get(EIO).get_data(as_text=True)[1:])["sid"]
                for _ in range(20)]
        assert guard.sessions() == 20
        for sid in sids:  # the client's goodbye: an Engine.IO CLOSE packet
            assert client.post(f"{EIO}&sid={sid}", data="1").status_code == 200
        assert guard.sessions() == 0
    finally:
        app.extensions["ttt_store"].close()
