"""The front-door attacks against `python app.py`, each with an honest player from
another address measured in the same run, before and during (`make bench-abuse`).

- slow bodies: 1,000 connections from one address, each `POST /api/bots` with
  `Content-Length: 4000` and one byte of body, against the server under the stock 1,024
  descriptors; `/healthz` from another address, 40 tries.
- event flood: 150 cookies from one address sending `join {}`, 900 a second in all (as
  measured; `--rate 0`: as fast as one thread sends); the honest player's move p50/p99.
- page flood: one cookie fetching `GET /` 56 times a second (16 threads); the same.
- front flood (`--only front`): 3,000 slow bodies from one address through deploy/'s nginx in
  front of two gunicorn processes and Redis; /healthz from another address, and the 429s.

The honest player plays pass-and-play moves every 0.1 s from 10.250.0.1 (bench.flood.Honest);
the floods come from 10.66.0.x through X-Forwarded-For (the server trusts 127.0.0.1), the slow
bodies from 127.0.0.2 on their own sockets. `--root DIR` runs another tree's server (a
`git worktree` of an older commit: the "before"). Loopback only; every loop is bounded.

    python -m bench.abuse [--only slow,events,pages,front] [--root DIR] [--seconds 10]
                          [--rate 900] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import selectors
import socket
import sys
import threading
import time
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import websocket

from bench.common import busy_cores, note, percentile, quiet_warning, raise_nofile
from bench.flood import FloodServer, Honest

FLOODER = "10.66.0.1"


def cookie_from(base: str, address: str) -> str:
    """A session cookie, fetched as from `address` (each flood cookie its own: the page
    budget for visitors with no cookie yet is not what these scenarios measure)."""
    port = int(base.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/", headers={"X-Forwarded-For": address})
        answer = conn.getresponse()
        answer.read()
        jar = SimpleCookie()
        for header in answer.headers.get_all("Set-Cookie") or []:
            jar.load(header)
    finally:
        conn.close()
    if "session" not in jar:
        raise ConnectionError(f"GET / from {address}: {answer.status}, no cookie")
    return jar["session"].value


def window(honest: Honest, seconds: float) -> dict[str, float | None]:
    """The honest player's p50 and p99 (ms) over the next `seconds`."""
    mark = len(honest.latencies)
    time.sleep(seconds)
    got = honest.latencies[mark:]
    p50, p99 = percentile(got, 0.5), percentile(got, 0.99)
    return {"p50_ms": None if p50 is None else round(p50 * 1000, 1),
            "p99_ms": None if p99 is None else round(p99 * 1000, 1), "moves": len(got)}


def healthz_from(port: int, source: str, tries: int = 40) -> int:
    """How many of `tries` GET /healthz from `source` answered 200 within 10 s."""
    served = 0
    for _ in range(tries):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                          source_address=(source, 0))
        try:
            conn.request("GET", "/healthz")
            served += conn.getresponse().status == 200
        except OSError:
            pass
        finally:
            conn.close()
    return served


def slow_bodies(server: FloodServer, count: int = 1000) -> dict[str, Any]:
    port = server.port
    before = healthz_from(port, "127.0.0.3")
    slow: list[socket.socket] = []
    try:
        for _ in range(count):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=10,
                                             source_address=("127.0.0.2", 0))
                s.sendall(b"POST /api/bots HTTP/1.1\r\nHost: ttt\r\nContent-Type: "
                          b"application/json\r\nContent-Length: 4000\r\n\r\n{")
                slow.append(s)
            except OSError:
                break
        during = healthz_from(port, "127.0.0.3")
    finally:
        for s in slow:
            s.close()
    return {"scenario": "slow bodies", "connections": len(slow),
            "healthz_before": f"{before}/40", "healthz_during": f"{during}/40"}


def front_flood(count: int = 3000) -> dict[str, Any]:
    """deploy/'s stack (redis, two gunicorn gevent processes, nginx from deploy/'s files, its
    workers cut to 4,096 connections for this machine's descriptors): `count` connections
    from 127.0.0.2 with whole headers and a body that never comes; /healthz through the front
    from 127.0.0.3 before and during, and what nginx answered the flood within 1 s."""
    import tempfile

    from bench.front import stack
    from tests.support.stack import DEPLOY, UNIT, shipped

    work = Path(tempfile.mkdtemp(prefix="ttt-abuse-front-"))
    main = work / "nginx-main.conf"
    main.write_text((DEPLOY / "nginx-main.conf").read_text()
                    .replace("worker_connections 10240;", "worker_connections 4096;")
                    .replace("worker_rlimit_nofile 20480;", "worker_rlimit_nofile 8192;"))
    redis, backends, nginx = stack(work, int(shipped(UNIT, "LimitNOFILE")), main)
    flood: list[socket.socket] = []
    try:
        before = healthz_from(nginx.port, "127.0.0.3")
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", nginx.port), timeout=10,
                                         source_address=("127.0.0.2", 0))
            s.sendall(b"POST /api/bots HTTP/1.1\r\nHost: ttt\r\nContent-Type: "
                      b"application/json\r\nContent-Length: 4000\r\n\r\n{")
            flood.append(s)
        during = healthz_from(nginx.port, "127.0.0.3")
        refused = 0
        for s in flood:
            s.settimeout(0.001 if refused else 1.0)
            with contextlib.suppress(OSError):
                refused += s.recv(16).startswith(b"HTTP/1.1 429")
    finally:
        for s in flood:
            s.close()
        nginx.stop()
        for backend in backends:
            backend.stop()
        redis.stop()
    return {"scenario": "front flood", "connections": len(flood), "refused_429": refused,
            "healthz_before": f"{before}/40", "healthz_during": f"{during}/40"}


class JoinFlood:
    """Raw websockets of many cookies from one address, sending `join {}` in turn as fast as
    one thread can; the same thread answers their pings and drops their answers."""

    def __init__(self, base: str, cookies: list[str], address: str, rate: float) -> None:
        self.rate = rate  # events a second in all; 0: as fast as one thread sends
        url = base.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
        self.sockets: list[websocket.WebSocket] = []
        for cookie in cookies:
            ws = websocket.create_connection(url, timeout=10, header=[
                f"X-Forwarded-For: {address}", f"Cookie: session={cookie}"])
            ws.recv()
            ws.send("40")
            if ws.recv().startswith("40"):
                self.sockets.append(ws)
            else:
                ws.close()
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        chooser = selectors.DefaultSelector()
        for ws in self.sockets:
            chooser.register(ws.sock, selectors.EVENT_READ, ws)
        started = time.monotonic()
        while not self._stop.is_set():
            if self.rate:  # paced: never ahead of rate x elapsed
                ahead = self.sent / self.rate - (time.monotonic() - started)
                if ahead > 0:
                    self._stop.wait(ahead)
            for ws in self.sockets:
                try:
                    ws.send(f'42{self.sent % 1000}["join",{{}}]')
                    self.sent += 1
                except (OSError, websocket.WebSocketException):
                    continue
            for key, _ in chooser.select(timeout=0):
                try:
                    if key.data.recv() == "2":
                        key.data.send("3")
                except (OSError, websocket.WebSocketException):
                    chooser.unregister(key.fileobj)

    def start(self) -> JoinFlood:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(10)
        rate = self.sent / max(0.001, time.monotonic() - self.started)
        for ws in self.sockets:
            with contextlib.suppress(Exception):  # closing as fast as possible
                ws.close(timeout=0.2)
        return rate


def event_flood(server: FloodServer, honest: Honest, seconds: float, rate: float,
                cookies: int = 150) -> dict[str, Any]:
    quiet = window(honest, seconds)
    jar = [cookie_from(server.url, f"10.66.{1 + i // 250}.{i % 250}") for i in range(cookies)]
    flood = JoinFlood(server.url, jar, FLOODER, rate).start()
    during = window(honest, seconds)
    rate = flood.stop()
    return {"scenario": "event flood", "cookies": len(flood.sockets),
            "events_per_s": round(rate), "quiet": quiet, "during": during}


def page_flood(server: FloodServer, honest: Honest, seconds: float, rate: float = 56,
               threads: int = 16) -> dict[str, Any]:
    quiet = window(honest, seconds)
    cookie = cookie_from(server.url, "10.66.9.9")
    stop = threading.Event()
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def fetch() -> None:
        every = threads / rate
        while not stop.is_set():
            started = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            try:
                conn.request("GET", "/", headers={"X-Forwarded-For": "10.66.0.2",
                                                  "Cookie": f"session={cookie}",
                                                  "Accept-Encoding": "gzip"})
                answer = conn.getresponse()
                answer.read()
                with lock:
                    statuses[answer.status] = statuses.get(answer.status, 0) + 1
            except OSError:
                pass
            finally:
                conn.close()
            stop.wait(max(0.0, every - (time.monotonic() - started)))

    workers = [threading.Thread(target=fetch, daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    during = window(honest, seconds)
    stop.set()
    for worker in workers:
        worker.join(35)
    return {"scenario": "page flood", "pages": dict(sorted(statuses.items())),
            "pages_per_s": round(sum(statuses.values()) / seconds), "quiet": quiet,
            "during": during}


class StockServer(FloodServer):
    """The server under the stock 1,024 descriptors (systemd's and a shell's default), as the
    slow-body attack finds it."""

    def command(self) -> list[str]:
        return ["prlimit", "--nofile=1024:1024", *super().command()]


def run(only: list[str], root: Path | None, seconds: float,
        rate: float) -> list[dict[str, Any]]:
    rows = []
    if "slow" in only:
        note("abuse", "slow bodies (under 1,024 descriptors)")
        with StockServer("threading", {}, root=root) as server:
            rows.append(slow_bodies(server))
    if "front" in only:
        note("abuse", "a connection flood through deploy/'s nginx")
        rows.append(front_flood())
    if not {"events", "pages"} & set(only):
        return rows
    with FloodServer("threading", {"TTT_CREATE_RATE": "100000"}, root=root) as server:
        honest = Honest(server.url).start()
        try:
            time.sleep(2)
            if "events" in only:
                note("abuse", "event flood")
                rows.append(event_flood(server, honest, seconds, rate))
            if "pages" in only:
                note("abuse", "page flood")
                rows.append(page_flood(server, honest, seconds))
        finally:
            honest.close()
    for row in rows:
        if "quiet" in row and row["quiet"]["p99_ms"] is not None and row["during"]["p99_ms"]:
            row["within_2x_plus_20ms"] = row["during"]["p99_ms"] <= 2 * row["quiet"]["p99_ms"] + 20
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="slow,events,pages",
                        help="any of slow,events,pages,front (front: needs redis and nginx)")
    parser.add_argument("--root", type=Path, help="another tree's server (the before)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=900.0,
                        help="the event flood's events a second (as one flooder sent); 0: flat out")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    raise_nofile()
    warning = quiet_warning(busy_cores())
    rows = run(args.only.split(","), args.root, args.seconds, args.rate)
    if args.json:
        print(json.dumps({"rows": rows, "warning": warning}, indent=2))
        return 0
    for row in rows:
        if row["scenario"] == "slow bodies":
            print(f"slow bodies: {row['connections']} from one address; /healthz from another "
                  f"{row['healthz_before']} before, {row['healthz_during']} during")
            continue
        if row["scenario"] == "front flood":
            print(f"front flood: {row['connections']} slow bodies from one address through "
                  f"nginx, {row['refused_429']} refused 429 at once; /healthz from another "
                  f"{row['healthz_before']} before, {row['healthz_during']} during")
            continue
        quiet, during = row["quiet"], row["during"]
        what = (f"{row['cookies']} cookies, {row['events_per_s']} events/s"
                if row["scenario"] == "event flood" else
                f"one cookie, {row['pages_per_s']} pages/s {row['pages']}")
        print(f"{row['scenario']} ({what}): honest move p50 {quiet['p50_ms']} -> "
              f"{during['p50_ms']} ms, p99 {quiet['p99_ms']} -> {during['p99_ms']} ms "
              f"({quiet['moves']} / {during['moves']} moves); within 2x + 20 ms: "
              f"{row.get('within_2x_plus_20ms')}")
    if warning:
        print(f"note: {warning}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
