"""What the load, benchmark and capacity tools share: server processes, players, /proc readings.

Servers listen on 127.0.0.1 only. A `ServerProcess` is either the project's server (`python
app.py`, or gunicorn with the gevent worker) from any source tree (`root`, e.g. a worktree of
an earlier commit), with a throwaway SQLite store and no rate limit, or the bare echo server of
`bench.echo` in the same two set-ups.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import random
import resource
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
HOST = "127.0.0.1"
MODES = ("threading", "gevent")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def raise_nofile() -> tuple[int, int]:
    """Raise this process's soft open-file limit to the hard one (children inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def note(tag: str, text: str) -> None:
    """A progress line on stderr (the results go to stdout)."""
    print(f"  [{tag}] {text}", file=sys.stderr, flush=True)


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def wire_size(obj: Any) -> int:
    """Bytes of an object as python-socketio puts it on the wire (compact JSON)."""
    return len(json.dumps(obj, separators=(",", ":")).encode())


# --- /proc readings ----------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (its threads included), from /proc/PID/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15)


def _status(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_kib(pid: int) -> int | None:
    return _status(pid, "VmRSS")


def peak_rss_kib(pid: int) -> int | None:
    return _status(pid, "VmHWM")


def threads(pid: int) -> int | None:
    return _status(pid, "Threads")


def open_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def wait_healthy(url: str, timeout: float = 30, proc: subprocess.Popen | None = None) -> bool:
    """Poll GET /healthz until it answers 200; False on timeout or when `proc` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.1)
    return False


def busy_cores(seconds: float = 1.0) -> float:
    """How many cores the whole machine kept busy over the next `seconds` (a quietness check)."""
    before = machine_ticks()
    time.sleep(seconds)
    after = machine_ticks()
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total * (os.cpu_count() or 1), 2) if total else 0.0


def quiet_warning(cores: float) -> str | None:
    """A warning when other processes already keep the machine busy before a measurement."""
    if cores < 0.25:
        return None
    return (f"the machine was busy before the run ({cores:g} cores in use by other "
            "processes): these figures are worse than a quiet machine's")


class Skipped(Exception):
    """A set-up this machine cannot run (its message is the report's words)."""


def new_report(args: Any, machine: str, server: str) -> dict:
    """The report of a benchmark run: when, where, what with; its set-ups go in "modes"."""
    return {
        "date": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} "
                   f"{platform.python_version()}{machine}",
        "server": server,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "modes": {},
        "warnings": [w for w in [quiet_warning(busy_cores())] if w],
    }


def show(report: dict, as_json: bool, table: Callable[[dict], None]) -> None:
    """The report as one JSON object, or as the benchmark's table for people."""
    if as_json:
        print(json.dumps(report), flush=True)
    else:
        table(report)


def measure_each(modes: list[str], measure: Callable[[int, str], dict], report: dict) -> int:
    """`measure(index, mode)` for each server set-up, into report["modes"]; the exit status
    (1 when any set-up was skipped or failed: that one is reported, never raised)."""
    status = 0
    for index, mode in enumerate(modes):
        try:
            report["modes"][mode] = measure(index, mode)
        except Skipped as skipped:
            report["modes"][mode] = {"error": f"skipped: {skipped}"}
            status = 1
        except Exception as error:  # noqa: BLE001 - one set-up failing is reported, not raised
            report["modes"][mode] = {"error": f"failed: {type(error).__name__}: {error}"}
            status = 1
    return status


# --- server processes --------------------------------------------------------------------------

class ServerProcess:
    """The project's server or the echo server, threading (Werkzeug) or gunicorn + gevent.

    app: "game" or "echo"; mode: "threading" or "gevent"; root: the source tree of the game
    server (the echo always runs from this tree). echo_answers: the recorded game answers the
    echo server replays (see bench.echo). worker_connections: gunicorn's per-worker cap on
    simultaneous connections (its default is 1000). store: "sqlite" (the default store, in a
    temporary directory), "memory", or a TTT_STORE URL.
    """

    def __init__(self, app: str = "game", mode: str = "threading", root: Path | None = None,
                 secret: str | None = None, echo_answers: dict | None = None,
                 worker_connections: int | None = None, store: str = "sqlite") -> None:
        if app not in ("game", "echo") or mode not in MODES:
            raise ValueError(f"unknown server {app}/{mode}")
        self.app, self.mode = app, mode
        self.root = Path(root or ROOT).resolve() if app == "game" else ROOT
        self.dir = tempfile.TemporaryDirectory(prefix=f"ttt-{app}-{mode}-")
        self.work = Path(self.dir.name)
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.log = self.work / "server.log"
        self.secret = secret or secrets.token_hex(16)
        self.echo_answers = echo_answers
        self.worker_connections = worker_connections
        self.store = (f"sqlite:///{self.work / 'ttt.sqlite3'}" if store == "sqlite"
                      else "memory://" if store == "memory" else store)
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None  # the process that serves (gunicorn's worker, not its master)

    @property
    def label(self) -> str:
        return f"{self.app}/{self.mode}"

    def command(self) -> list[str]:
        if self.mode == "threading":
            if self.app == "game":
                return [PY, str(self.root / "app.py"), "--host", HOST, "--port", str(self.port)]
            return [PY, "-m", "bench.echo", "--host", HOST, "--port", str(self.port)]
        target = "ttt.web.wsgi:app" if self.app == "game" else "bench.echo:create_app()"
        extra = (["--worker-connections", str(self.worker_connections)]
                 if self.worker_connections else [])
        return [PY, "-m", "gunicorn", "-w", "1", "-k", "gevent", *extra,
                "-b", f"{HOST}:{self.port}", "--log-level", "warning", target]

    def environment(self) -> dict[str, str]:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "TTT_RATE_LIMIT": "0",
               "TTT_SECRET_KEY": self.secret, "TTT_ASYNC_MODE": self.mode,
               "TTT_STORE": self.store,
               # Every simulated player comes from 127.0.0.1: the cap on live games per client
               # address (500 by default) would refuse the 501st, which no real crowd shares.
               "TTT_MAX_LIVE_PER_ADDRESS": "1000000",
               "PYTHONPATH": os.pathsep.join([str(self.root), str(ROOT)]
                                             + ([os.environ["PYTHONPATH"]]
                                                if os.environ.get("PYTHONPATH") else []))}
        env.pop("TTT_MESSAGE_QUEUE", None)
        if self.echo_answers is not None:
            path = self.work / "answers.json"
            path.write_text(json.dumps(self.echo_answers))
            env["ECHO_ANSWERS"] = str(path)
        return env

    def start(self, timeout: float = 30) -> ServerProcess:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(self.command(), cwd=self.root, env=self.environment(),
                                         stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        if not wait_healthy(self.url, timeout, self.proc):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with status {self.proc.returncode}:\n"
                                   + self.tail())
            self.stop()
            raise RuntimeError(f"{self.label} did not become healthy:\n{self.tail()}")
        self.pid = self.proc.pid
        if self.mode == "gevent":  # gunicorn: the worker is the master's only child
            workers = children(self.proc.pid)
            if len(workers) != 1:
                self.stop()
                raise RuntimeError(f"{self.label}: expected one gunicorn worker, saw {workers}")
            self.pid = workers[0]
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def tracebacks(self) -> int:
        return self.tail(10**8).count("Traceback")

    def cpu(self) -> float | None:
        return cpu_seconds(self.pid) if self.pid else None

    def rss_kib(self) -> int | None:
        return rss_kib(self.pid) if self.pid else None

    def peak_kib(self) -> int | None:
        return peak_rss_kib(self.pid) if self.pid else None

    def open_fds(self) -> int | None:
        return open_fds(self.pid) if self.pid else None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.pid and self.pid != (self.proc and self.proc.pid):
            with contextlib.suppress(ProcessLookupError):  # an orphaned gunicorn worker
                os.kill(self.pid, signal.SIGKILL)
        self.dir.cleanup()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


# --- players -----------------------------------------------------------------------------------

def fetch_cookie(base: str, timeout: float = 10) -> str:
    """The signed session cookie a page route hands a new visitor."""
    with urllib.request.urlopen(base + "/", timeout=timeout) as answer:
        jar = SimpleCookie()
        for header in answer.headers.get_all("Set-Cookie") or []:
            jar.load(header)
    if "session" not in jar:
        raise ConnectionError(f"GET {base}/ set no session cookie")
    return jar["session"].value


def connect_sync(base: str, cookie: str, timeout: float = 10) -> Any:
    """A python-socketio Client on a websocket, carrying that cookie."""
    import socketio

    sio = socketio.Client(reconnection=False, handle_sigint=False)
    sio.connect(base, headers={"Cookie": f"session={cookie}"}, transports=["websocket"],
                wait_timeout=timeout)
    return sio


NEW_GAME = {"mode": "ai", "you": "X", "level": "perfect"}


def legal_cells(game: dict) -> list[int]:
    board = game.get("board") or ""
    return [i for i, c in enumerate(board) if c == "."]


def over(game: dict) -> bool:
    return game.get("status") != "playing" or not legal_cells(game)


def next_move(rng: random.Random, game: dict) -> dict:
    """A `move` payload: a random legal cell of the board the server last answered."""
    return {"game": game["id"], "cell": rng.choice(legal_cells(game))}


class BadAnswer(Exception):
    """An answer that is not `{"ok": true, "game": {...}}`."""


def checked(event: str, answer: Any) -> dict:
    if not isinstance(answer, dict) or answer.get("ok") is not True \
            or not isinstance(answer.get("game"), dict):
        raise BadAnswer(f"{event}: {str(answer)[:200]}")
    return answer


class SyncPlayer:
    """One player on a python-socketio Client, playing perfect-AI games with random legal moves.

    `step()` sends one event: `new_game` when there is no game in play, else a `move` (timed).
    `record` keeps the answers (for the echo server to replay, and their sizes).
    """

    def __init__(self, base: str, seed: int = 0, timeout: float = 10) -> None:
        self.base, self.timeout = base, timeout
        self.rng = random.Random(seed)
        self.sio = connect_sync(base, fetch_cookie(base, timeout), timeout)
        self.game: dict | None = None
        self.latencies: list[float] = []
        self.events = 0
        self.record: list[tuple[str, dict]] | None = None

    def call(self, event: str, payload: dict) -> dict:
        answer = checked(event, self.sio.call(event, payload, timeout=self.timeout))
        self.events += 1
        if self.record is not None:
            self.record.append((event, answer))
        return answer

    def step(self) -> None:
        if self.game is None or over(self.game):
            self.game = self.call("new_game", NEW_GAME)["game"]
            return
        payload = next_move(self.rng, self.game)
        started = time.perf_counter()
        answer = self.call("move", payload)
        self.latencies.append(time.perf_counter() - started)
        self.game = answer["game"]

    def moves(self, count: int, deadline: float) -> int:
        """Play until `count` more moves are timed or the deadline passes; the moves made."""
        goal = len(self.latencies) + count
        start = len(self.latencies)
        while len(self.latencies) < goal and time.monotonic() < deadline:
            self.step()
        return len(self.latencies) - start

    def close(self) -> None:
        if self.sio.connected:
            with contextlib.suppress(Exception):  # best effort
                self.sio.disconnect()


def close_all(players: list[SyncPlayer], timeout: float = 10) -> None:
    """Disconnect in parallel: each disconnect may wait ~3 s for a close frame (Werkzeug)."""
    closing = [threading.Thread(target=p.close, daemon=True) for p in players]
    for thread in closing:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in closing:
        thread.join(max(0.0, deadline - time.monotonic()))
