"""Real server processes and python-socketio clients for the tests (loopback only)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import requests
import socketio

from tests.support.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    """Whether this is CI, where nothing may skip."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need_binary(name: str) -> str:
    """The binary's path; skip (or in CI fail) when it is missing."""
    import pytest

    path = shutil.which(name) or (name if os.path.exists(name) else None)
    if path:
        return path
    if in_ci():
        pytest.fail(f"{name} is required in CI (make test installs it)")
    pytest.skip(f"{name} is not installed (make test installs it as root); CI fails instead")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python app.py` on a free loopback port, with its own environment."""

    def __init__(self, env: dict[str, str] | None = None, port: int | None = None,
                 log: Path | None = None, script: Path | None = None) -> None:
        self.script = script or ROOT / "app.py"  # another server script takes --port too
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Log lines written as they come (a served process batches INFO lines up to 0.1 s,
        # ttt.runtime.loglines): tests read a server's log by marks. The batching has its own tests.
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", "TTT_LOG_FLUSH_SECONDS": "0",
                    **(env or {})}
        self.log = log
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 90) -> Server:
        # Generous: on a loaded 2-core machine creating the app alone took 8.7 s once.
        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, str(self.script), "--port", str(self.port)],
            cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        if self.log:
            out.close()  # the child holds its own copy
        eventually(self._healthy, timeout, "the server did not become healthy", interval=0.1)
        return self

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"server exited with {self.proc.returncode}")
        try:
            health = requests.get(self.url + "/healthz", timeout=1)
        except requests.RequestException:
            return False
        # Up, or up but for remote AI workers not started yet (a test starts them).
        return health.status_code == 200 or health.json().get("down") == ["ai"]

    def kill(self) -> None:
        """SIGKILL: no clean-up, as a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class Remote:
    """One player (its own cookie) on a real server, through python-socketio."""

    def __init__(self, base: str, cookie: str | None = None, connect: bool = True,
                 address: str | None = None) -> None:
        self.base = base
        # Sent as X-Forwarded-For: the client address a server trusting 127.0.0.1 sees.
        self.address = address
        self.http = requests.Session()
        if cookie is None:
            self.http.get(base + "/", timeout=5).raise_for_status()
            cookie = self.http.cookies.get("session")
        self.cookie = cookie
        self.pushes: list[tuple[str, object]] = []
        self._lock = threading.Lock()
        self.sio = socketio.Client(reconnection=False)
        for name in ("game", "rematch", "record", "reaction", "watchers"):
            self.sio.on(name, self._collector(name))
        if connect:
            self.connect()

    def _collector(self, name: str):
        def collect(payload):
            with self._lock:
                self.pushes.append((name, payload))
        return collect

    def connect(self, url: str | None = None) -> None:
        headers = {"Cookie": f"session={self.cookie}"}
        if self.address:
            headers["X-Forwarded-For"] = self.address
        self.sio.connect(url or self.base, headers=headers, transports=["websocket"],
                         wait_timeout=5)

    def call(self, event: str, payload: object = None, timeout: float = 5) -> dict:
        return self.sio.call(event, payload, timeout=timeout)

    def pushed(self, name: str) -> list:
        with self._lock:
            return [p for n, p in self.pushes if n == name]

    def wait_for(self, name: str, predicate, timeout: float = 5.0):
        """The first push of that name matching predicate, waiting for it."""
        # (p,): a push matched is found even when it is falsy (an empty payload).
        return eventually(lambda: next(((p,) for p in self.pushed(name) if predicate(p)), None),
                          timeout, lambda: f"no {name} push matched: {self.pushed(name)[-3:]}",
                          interval=0.02)[0]

    def wait_until(self, event: str, payload: dict, predicate, timeout: float = 10.0,
                   call_timeout: float = 5) -> dict:
        """Call until the answer matches predicate (a state the server reaches by itself)."""
        answers: list[dict] = []

        def matched() -> tuple[dict] | None:
            answers.append(self.call(event, payload, timeout=call_timeout))
            return (answers[-1],) if predicate(answers[-1]) else None

        return eventually(matched, timeout, lambda: f"{event} never matched: {answers[-1]}",
                          interval=0.1)[0]

    def when_writable(self, event: str, payload: dict, timeout: float = 10.0) -> dict:
        """The first answer that is not `unavailable`: after a store or queue outage, the event
        as soon as this player's process can write again."""
        return self.wait_until(event, payload, lambda answer: answer["ok"]
                               or answer["error"]["code"] != "unavailable", timeout,
                               call_timeout=10)

    def close(self) -> None:
        if self.sio.connected:
            self.sio.disconnect()


class Log:
    """A server's log file, read from a mark."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def since(self, mark: int) -> str:
        with open(self.path, "rb") as f:
            f.seek(mark)
            return f.read().decode("utf-8", "replace")


class Remotes:
    """Players made on one server (`remotes()` is a new one), all closed together."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.made: list = []

    def __call__(self, **kwargs) -> Remote:
        remote = Remote(self.url, **kwargs)
        self.made.append(remote)
        return remote

    def append(self, closable) -> None:
        """Anything else with a `close()` to close with them."""
        self.made.append(closable)

    def close(self) -> None:
        close_all(self.made)


def close_all(remotes: list) -> None:
    """Disconnect in parallel (each disconnect may wait ~3 s for a close frame)."""
    threads = [threading.Thread(target=r.close) for r in remotes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)


class RedisServer:
    """A throwaway `redis-server` on a free loopback port, started at once. Nothing is saved
    to disk, or, `saved`, every write goes to an append-only file so that a `stop()` and a
    `start()` on the same port bring the data back (an outage, not a loss)."""

    def __init__(self, binary: str, workdir: Path, port: int | None = None,
                 saved: bool = False) -> None:
        self.binary, self.workdir, self.saved = binary, workdir, saved
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> RedisServer:
        import redis

        persistence = (["--appendonly", "yes", "--appendfsync", "always"] if self.saved
                       else ["--appendonly", "no"])
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             *persistence, "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.BusyLoadingError:  # reading its append-only file back
                time.sleep(0.02)
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
