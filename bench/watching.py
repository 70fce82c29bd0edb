"""A crowd of spectators coming and going: what it costs the players they watch, and others.

    python -m bench.watching [--spectators 60] [--rate 53] [--seconds 15] [--switch]
                             [--mode threading|gevent] [--root PATH] [--json]

The scenario: two friends in a game (each from their own address) sit idle while
`--spectators` cookies from one address alternate `join {game}` and `join {}` at `--rate`
joins a second in all. Beside them an unrelated honest player (another address) plays classic
moves against the perfect AI, each move timed. Printed, quiet (before the crowd) and during:
the pushes a player received a second (all, and whole `game` views), the honest player's move
p50/p99 and the server's CPU. Target: the players' pushes from watching at most one a second.
`--switch`: each spectator alternates between the game and another one instead (every join
then really changes the number of watchers).
`--root` runs another source tree's server (`git archive <ref> | tar -x -C DIR` for an older
tree's code), so the same numbers can be read before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from bench.ai_crowd import ClassicClient, connect, ms
from bench.common import CLOCK_TICKS, ServerProcess, busy_cores, note

SPECTATORS_AT = "10.77.0.9"  # every spectator cookie comes from this one address


class WatchedServer(ServerProcess):
    """The game server behind a trusted proxy at 127.0.0.1 (addresses from X-Forwarded-For),
    with room for a crowd of cookies at one address."""

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "TTT_TRUSTED_PROXIES": "127.0.0.1",
                "TTT_MAX_CONNECTIONS_PER_ADDRESS": "1000", "TTT_CREATE_RATE": "100000"}


class Player:
    """One of the two friends: connected, idle, counting the pushes it receives."""

    def __init__(self, base: str, address: str) -> None:
        self.sio = connect(base, address)
        self.pushes: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        for event in ("game", "watchers"):
            self.sio.on(event, self._counter(event))

    def _counter(self, event: str):
        def count(_: Any) -> None:
            with self._lock:
                self.pushes.append((time.monotonic(), event))
        return count

    def between(self, start: float, end: float) -> list[tuple[float, str]]:
        with self._lock:
            return [p for p in self.pushes if start <= p[0] < end]


def per_second(pushes: list[tuple[float, str]], start: float, end: float) -> dict[str, float]:
    """Pushes a second over [start, end): the mean and the busiest whole second."""
    seconds = max(1, int(end - start))
    counts = [0] * seconds
    views = 0
    for when, event in pushes:
        counts[min(seconds - 1, int(when - start))] += 1
        views += event == "game"
    return {"mean": round(len(pushes) / (end - start), 2), "max": max(counts),
            "views_mean": round(views / (end - start), 2)}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Crowd:
    """The spectators: each alternates `join {game}` and `join {}`, `rate` joins a second."""

    def __init__(self, base: str, game_id: str, count: int, rate: float,
                 elsewhere: str | None = None) -> None:
        self.game_id, self.rate, self.elsewhere = game_id, rate, elsewhere
        self.clients = [connect(base, SPECTATORS_AT) for _ in range(count)]
        self.joins = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        began, n = time.monotonic(), 0
        while not self.stop.is_set():
            client = self.clients[n % len(self.clients)]
            payload = ({"game": self.game_id} if (n // len(self.clients)) % 2 == 0
                       else {"game": self.elsewhere} if self.elsewhere else {})
            with contextlib.suppress(Exception):
                client.emit("join", payload, callback=lambda *answer: None)
                self.joins += 1
            n += 1
            delay = began + n / self.rate - time.monotonic()
            if delay > 0:
                self.stop.wait(delay)

    def start(self) -> Crowd:
        self.thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(10)
        closers = [threading.Thread(target=c.disconnect, daemon=True) for c in self.clients]
        for closer in closers:
            closer.start()
        for closer in closers:
            closer.join(5)


def run(spectators: int, rate: float, seconds: float, mode: str,
        root: Path | None = None, switch: bool = False) -> dict[str, Any]:
    machine = busy_cores(1.0)
    note(mode, f"starting the server (machine busy: {machine:.1f} cores)")
    with WatchedServer(mode=mode, root=root) as server:
        ana, ben = Player(server.url, "10.77.0.1"), Player(server.url, "10.77.0.2")
        made = ana.sio.call("new_game", {"mode": "friend", "you": "X"}, timeout=30)
        game_id = made["game"]["id"]
        assert ben.sio.call("join", {"game": game_id}, timeout=30)["ok"]
        elsewhere = None
        if switch:  # another friend game, made by a third cookie
            maker = connect(server.url, "10.77.0.4")
            elsewhere = maker.call("new_game", {"mode": "friend", "you": "X"},
                                   timeout=30)["game"]["id"]
        honest = ClassicClient(server.url, "10.77.0.3")
        time.sleep(1.0)
        quiet_from, cpu_from = time.monotonic(), cpu_seconds(server.pid)
        honest.play(quiet_from + seconds)
        quiet_to, cpu_quiet = time.monotonic(), cpu_seconds(server.pid) - cpu_from
        quiet = [s for w, s in honest.latencies if w >= quiet_from]
        note(mode, f"{spectators} spectators arrive, {rate:g} joins a second")
        crowd = Crowd(server.url, game_id, spectators, rate, elsewhere)
        crowd.start()
        time.sleep(1.0)  # the first joins are the crowd arriving: measured from here
        during_from, cpu_from = time.monotonic(), cpu_seconds(server.pid)
        honest.play(during_from + seconds)
        during_to, cpu_during = time.monotonic(), cpu_seconds(server.pid) - cpu_from
        crowd.finish()
        loaded = [s for w, s in honest.latencies if w >= during_from]
        result = {
            "mode": mode, "spectators": spectators, "rate": rate, "seconds": seconds,
            "switch": switch,
            "root": str(root) if root else None, "machine_busy_cores": round(machine, 1),
            "joins": crowd.joins,
            "player_pushes_quiet": per_second(ana.between(quiet_from, quiet_to),
                                              quiet_from, quiet_to),
            "player_pushes_during": per_second(ana.between(during_from, during_to),
                                               during_from, during_to),
            "honest_quiet_p50_ms": ms(quiet, 0.5), "honest_quiet_p99_ms": ms(quiet, 0.99),
            "honest_during_p50_ms": ms(loaded, 0.5), "honest_during_p99_ms": ms(loaded, 0.99),
            "server_cpu_quiet_pct": round(100 * cpu_quiet / (quiet_to - quiet_from)),
            "server_cpu_during_pct": round(100 * cpu_during / (during_to - during_from)),
            "tracebacks": server.tracebacks(),
        }
        # At most one push a second from watching; a boundary may put two in one second.
        result["met"] = (result["player_pushes_during"]["mean"] <= 1.0
                         and result["player_pushes_during"]["views_mean"] == 0)
        for client in (ana, ben, honest):
            with contextlib.suppress(Exception):
                client.sio.disconnect()
        return result


def report(result: dict[str, Any]) -> str:
    q, d = result["player_pushes_quiet"], result["player_pushes_during"]
    rows = [("spectators / joins a second (joins sent)",
             f"{result['spectators']} / {result['rate']:g} ({result['joins']})"),
            ("a player's pushes a second, quiet: mean / busiest second / whole views",
             f"{q['mean']} / {q['max']} / {q['views_mean']}"),
            ("a player's pushes a second, crowd: mean / busiest second / whole views",
             f"{d['mean']} / {d['max']} / {d['views_mean']}"),
            ("honest move p50 / p99 quiet (ms)",
             f"{result['honest_quiet_p50_ms']} / {result['honest_quiet_p99_ms']}"),
            ("honest move p50 / p99 crowd (ms)",
             f"{result['honest_during_p50_ms']} / {result['honest_during_p99_ms']}"),
            ("server CPU quiet / crowd (% of a core)",
             f"{result['server_cpu_quiet_pct']} / {result['server_cpu_during_pct']}"),
            ("target met (<= 1 push a second, no whole view)", "yes" if result["met"] else "no")]
    lines = [f"bench-watching ({result['mode']}, {result['seconds']:g} s a phase, "
             + ("switching between two games, " if result["switch"] else "") + "machine busy "
             f"{result['machine_busy_cores']} cores before the run"
             + (f", server from {result['root']}" if result["root"] else "") + ")", "",
             "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spectators", type=int, default=60)
    parser.add_argument("--rate", type=float, default=53.0)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--switch", action="store_true")
    parser.add_argument("--mode", choices=["gevent", "threading"], default="threading")
    parser.add_argument("--root", type=Path, default=None,
                        help="the source tree of the server (default: this one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.spectators, args.rate, args.seconds, args.mode,
                 args.root.resolve() if args.root else None, args.switch)
    print(json.dumps(result) if args.json else report(result))
    return 0 if not result["tracebacks"] else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
