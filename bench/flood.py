"""A connection flood against one server process, threaded and gunicorn + gevent.

The attack: many cookies × 8 websockets from one client address, opened as fast
as one thread can, each completing the Socket.IO connect, then held (answering pings). Beside
it, an honest player from another address keeps playing; the numbers are what was opened,
held and refused, the server's threads and open files, and the honest player's move p99.
`--hold` also measures what one process can hold: sockets from many addresses, in steps,
with the honest player's p50 and p99 at each.

Every client says where it comes from in X-Forwarded-For (the server trusts 127.0.0.1 as a
proxy), so one loopback machine plays many addresses. Loopback only; every loop is bounded.

    python -m bench.flood [--cookies 125] [--per-cookie 8] [--only threading|gevent]
                          [--hold 500,1000,2000] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import selectors
import sys
import threading
import time
from typing import Any

import websocket

from bench.common import (
    MODES,
    ServerProcess,
    busy_cores,
    fetch_cookie,
    note,
    percentile,
    quiet_warning,
    raise_nofile,
    threads,
)

HONEST = "10.250.0.1"


class FloodServer(ServerProcess):
    """The game server with the limits on (the bench servers turn the rate limit off)."""

    def __init__(self, mode: str, env: dict[str, str], **kwargs: Any) -> None:
        super().__init__("game", mode, **kwargs)
        self.extra = env

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.pop("TTT_MAX_LIVE_PER_ADDRESS", None)
        env.update({"TTT_RATE_LIMIT": "20", "TTT_TRUSTED_PROXIES": "127.0.0.1", **self.extra})
        return env


class Holder:
    """Raw websockets that completed the Socket.IO connect, kept alive by answering pings."""

    def __init__(self, base: str) -> None:
        self.url = base.replace("http://", "ws://") + "/socket.io/?EIO=4&transport=websocket"
        self.held: list[websocket.WebSocket] = []
        self.refused = 0      # by HTTP status at the handshake (429, 503)
        self.failed = 0       # refused at the Socket.IO connect, or the socket broke
        self._lock = threading.Lock()
        self._chooser = selectors.DefaultSelector()  # registered once: cheap with thousands
        self._stop = threading.Event()
        self._pinger = threading.Thread(target=self._pong, daemon=True)
        self._pinger.start()

    def connect(self, cookie: str, address: str) -> websocket.WebSocket:
        """A websocket as from `address`: here through a trusted X-Forwarded-For."""
        return websocket.create_connection(
            self.url, timeout=10, header=[f"X-Forwarded-For: {address}",
                                          f"Cookie: session={cookie}"])

    def open(self, cookie: str, address: str) -> bool:
        try:
            ws = self.connect(cookie, address)
        except websocket.WebSocketBadStatusException:
            self.refused += 1
            return False
        except (OSError, websocket.WebSocketException):
            self.failed += 1
            return False
        try:
            ws.recv()            # Engine.IO open
            ws.send("40")        # Socket.IO connect
            answer = ws.recv()
        except (OSError, websocket.WebSocketException):
            answer = ""
        if not answer.startswith("40"):
            self.failed += 1
            ws.close()
            return False
        with self._lock:
            self.held.append(ws)
            self._chooser.register(ws.sock, selectors.EVENT_READ, ws)
        return True

    def _pong(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                ready = self._chooser.select(timeout=0) if self.held else []
            if not ready:
                time.sleep(0.05)
                continue
            for key, _ in ready:
                ws = key.data
                try:
                    if ws.recv() == "2":
                        ws.send("3")
                except (OSError, websocket.WebSocketException):
                    with self._lock:
                        if ws in self.held:
                            self.held.remove(ws)
                            self._chooser.unregister(ws.sock)

    def alive(self) -> int:
        with self._lock:
            return len(self.held)

    def close(self) -> None:
        self._stop.set()
        self._pinger.join(5)
        with self._lock:
            for ws in self.held:
                with contextlib.suppress(Exception):  # closing as fast as possible
                    ws.close(timeout=0.2)
            self.held.clear()


class Honest:
    """One player from its own address playing pass-and-play moves; each call's latency."""

    def __init__(self, base: str) -> None:
        self.sio = connect_sync_from(base, fetch_cookie(base), HONEST)
        self.latencies: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._play, daemon=True)

    def _play(self) -> None:
        game = self.sio.call("new_game", {"mode": "local"}, timeout=30)["game"]
        while not self._stop.is_set():
            cells = [i for i, c in enumerate(game["board"]) if c == "."]
            start = time.perf_counter()
            if game["status"] != "playing" or not cells:
                answer = self.sio.call("new_game", {"mode": "local"}, timeout=30)
            else:
                answer = self.sio.call("move", {"game": game["id"], "cell": cells[0]},
                                       timeout=30)
            self.latencies.append(time.perf_counter() - start)
            if answer.get("ok"):
                game = answer["game"]
            self._stop.wait(0.1)

    def start(self) -> Honest:
        self._thread.start()
        return self

    def p99_ms(self, since: int = 0, until: int | None = None) -> float | None:
        found = percentile(self.latencies[since:until], 0.99)
        return None if found is None else round(found * 1000, 1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(35)
        self.sio.disconnect()


def connect_sync_from(base: str, cookie: str, address: str) -> Any:
    """connect_sync, from a given client address."""
    import socketio

    sio = socketio.Client(reconnection=False, handle_sigint=False)
    sio.connect(base, headers={"Cookie": f"session={cookie}", "X-Forwarded-For": address},
                transports=["websocket"], wait_timeout=10)
    return sio


def server_load(server: ServerProcess) -> dict[str, Any]:
    return {"threads": threads(server.pid), "open_files": server.open_fds(),
            "rss_mib": round((server.rss_kib() or 0) / 1024, 1)}


def healthz_ms(base: str) -> float | None:
    import urllib.request

    start = time.perf_counter()
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=30) as answer:
            answer.read()
    except OSError:
        return None
    return round((time.perf_counter() - start) * 1000, 1)


def flood(mode: str, cookies: int, per_cookie: int) -> dict[str, Any]:
    """The attack: cookies × per_cookie websockets from one address."""
    env: dict[str, str] = {}
    with FloodServer(mode, env, worker_connections=4000 if mode == "gevent" else None) as server:
        idle = server_load(server)
        honest = Honest(server.url).start()
        time.sleep(2)
        calm = len(honest.latencies)
        jar = [fetch_cookie(server.url) for _ in range(cookies)]
        holder = Holder(server.url)
        start = time.monotonic()
        opened = sum(holder.open(jar[i % cookies], "10.66.0.1")
                     for i in range(cookies * per_cookie))
        took = time.monotonic() - start
        during = server_load(server)
        health = healthz_ms(server.url)
        flooded = len(honest.latencies)
        time.sleep(12)  # one ping round: the held sockets stay held
        result = {
            "mode": mode, "attempted": cookies * per_cookie, "opened": opened,
            "held_after_12s": holder.alive(), "refused_at_handshake": holder.refused,
            "refused_at_connect": holder.failed, "seconds_to_open": round(took, 1),
            "server_idle": idle, "server_flooded": during, "healthz_ms": health,
            "honest_p99_ms_calm": honest.p99_ms(0, calm) if calm else None,
            "honest_p99_ms_flood": honest.p99_ms(calm),
            "honest_moves_during_flood": flooded - calm,
            "honest_p99_ms_held": honest.p99_ms(flooded),
        }
        holder.close()
        honest.close()
        return result


def hold(mode: str, steps: list[int]) -> list[dict[str, Any]]:
    """Sockets from many addresses (200 each), in steps: what one process holds, the honest
    player's p50 and p99 over 10 s at each step."""
    top = max(steps)
    env = {"TTT_MAX_OPEN_CONNECTIONS": str(top + 100)}
    rows = []
    with FloodServer(mode, env, worker_connections=top + 200 if mode == "gevent" else None) \
            as server:
        honest = Honest(server.url).start()
        holder = Holder(server.url)
        cookies = [fetch_cookie(server.url) for _ in range(top // 8 + 1)]
        opened = 0
        for step in steps:
            while opened < step:
                address = f"10.77.{opened // 200 // 250}.{opened // 200 % 250}"
                if holder.open(cookies[opened // 8], address):
                    opened += 1
                elif holder.failed + holder.refused > top:
                    break
            time.sleep(2)  # the opening's own work settles
            mark = len(honest.latencies)
            time.sleep(10)  # a whole ping round of every held socket
            p50 = percentile(honest.latencies[mark:], 0.5)
            rows.append({"mode": mode, "held": holder.alive(), **server_load(server),
                         "honest_p50_ms": None if p50 is None else round(p50 * 1000, 1),
                         "honest_p99_ms": honest.p99_ms(mark), "healthz_ms": healthz_ms(
                             server.url), "refused": holder.refused + holder.failed})
            note(mode, f"holding {rows[-1]['held']}: p50 {rows[-1]['honest_p50_ms']} ms, "
                       f"p99 {rows[-1]['honest_p99_ms']} ms")
        holder.close()
        honest.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cookies", type=int, default=125)
    parser.add_argument("--per-cookie", type=int, default=8)
    parser.add_argument("--only", choices=MODES)
    parser.add_argument("--hold", default="", help="e.g. 500,1000,2000: hold steps")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    raise_nofile()
    warning = quiet_warning(busy_cores())
    results: dict[str, Any] = {"flood": [], "hold": []}
    for mode in [args.only] if args.only else MODES:
        note(mode, f"flooding: {args.cookies} cookies x {args.per_cookie} websockets")
        results["flood"].append(flood(mode, args.cookies, args.per_cookie))
        if args.hold:
            results["hold"] += hold(mode, sorted(int(s) for s in args.hold.split(",")))
    if warning:
        results["warning"] = warning
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for row in results["flood"]:
        print(f"{row['mode']}: {row['attempted']} from one address in "
              f"{row['seconds_to_open']} s: opened {row['opened']}, held "
              f"{row['held_after_12s']}, refused {row['refused_at_handshake']} at the "
              f"handshake + {row['refused_at_connect']} at connect; threads "
              f"{row['server_idle']['threads']} -> {row['server_flooded']['threads']}, files "
              f"{row['server_idle']['open_files']} -> {row['server_flooded']['open_files']}; "
              f"/healthz {row['healthz_ms']} ms; honest p99 {row['honest_p99_ms_calm']} ms "
              f"calm, {row['honest_p99_ms_flood']} ms while it opened, "
              f"{row['honest_p99_ms_held']} ms while it held")
    for row in results["hold"]:
        print(f"{row['mode']} holds {row['held']}: threads {row['threads']}, files "
              f"{row['open_files']}, {row['rss_mib']} MiB, honest p50 {row['honest_p50_ms']} ms, "
              f"p99 {row['honest_p99_ms']} ms,"
              f" /healthz {row['healthz_ms']} ms")
    if warning:
        print(f"note: {warning}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
