"""A crowd against the Ultimate AI: does the honest player already in a game keep a short wait?

    python -m bench.ai_crowd [--attackers 40] [--seconds 60] [--mode gevent|threading]
                             [--crowd games|analyses] [--root PATH] [--json]

K attacking clients, each from its own address (127.0.0.x through X-Forwarded-For, the
server trusting 127.0.0.1 as its proxy, as behind nginx), play Ultimate `hard` and move the
instant the AI replies; an attacker told `busy` tries a new game again two seconds later.
Before they come, an honest player starts an Ultimate `hard` game (from another address) and
plays on, thinking a second between moves; a classic player plays the perfect AI throughout.

Printed: the honest player's AI reply (move sent to the AI's reply seen) p50/p95/max and the
budgets its searches got, the classic player's move p99 before and during the crowd, the
attackers let in and the `busy` answers, and anything lost (a reply that never came).
Targets: with 40 attacking addresses the honest p95 <= 2 s; the classic p99 within
the AI pool's bound (1.5x its quiet p99 + 20 ms); nothing lost. On 2 cores the clients take CPU
too: the bench prints, the simulated test (tests/unit/test_ai_crowd.py) gates.

`--crowd analyses`: the K addresses ask Ultimate analyses instead, each playing a
pass-and-play Ultimate game and asking `analyze` after every move (a new position each time,
so nothing comes from the cache), at once again after each answer, two seconds after a
`busy`. The honest `hard` reply is printed quiet (before the crowd) and during, p50/p90/max,
against the documented bound (`REPLY_BOUND`, 1.5 s). `--root` serves another source tree
(`git archive <ref> | tar -x -C DIR`: the code before a change) for the same numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import ServerProcess, busy_cores, fetch_cookie, next_move, note, over, percentile

HARD = {"mode": "ai", "you": "X", "level": "hard", "variant": "ultimate"}
CLASSIC = {"mode": "ai", "you": "X", "level": "perfect"}
LOCAL_ULTIMATE = {"mode": "local", "variant": "ultimate"}
REPLY_TIMEOUT = 60.0
RETRY_BUSY = 2.0
REPLY_BOUND_MS = 1500.0  # ttt.pool.thinker.REPLY_BOUND: a `hard` reply's documented bound


class CrowdServer(ServerProcess):
    """The game server behind a trusted proxy at 127.0.0.1 (addresses from X-Forwarded-For)."""

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "TTT_TRUSTED_PROXIES": "127.0.0.1"}


def connect(base: str, address: str) -> Any:
    """A python-socketio client on a websocket, seen by the server as `address`."""
    import socketio

    sio = socketio.Client(reconnection=False, handle_sigint=False)
    sio.connect(base, headers={"Cookie": f"session={fetch_cookie(base)}",
                               "X-Forwarded-For": address},
                transports=["websocket"], wait_timeout=10)
    return sio


class UltimateClient:
    """Plays Ultimate `hard`, `think` seconds between the AI's reply and its next move."""

    def __init__(self, base: str, address: str, think: float, seed: int) -> None:
        self.rng = random.Random(seed)
        self.think = think
        self.sio = connect(base, address)
        self.seen = threading.Condition()
        self.latest: dict[str, dict] = {}
        self.sio.on("game", self._pushed)
        self.replies: list[float] = []
        self.budgets: list[float] = []
        self.lost = self.busy = self.games = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._play, daemon=True)

    def _pushed(self, game: dict) -> None:
        with self.seen:
            old = self.latest.get(game["id"])
            if old is None or game.get("rev", 0) >= old.get("rev", 0):
                self.latest[game["id"]] = game
            self.seen.notify_all()

    def _reply(self, game_id: str, version: int) -> dict | None:
        deadline = time.monotonic() + REPLY_TIMEOUT
        with self.seen:
            while time.monotonic() < deadline and not self.stop.is_set():
                game = self.latest.get(game_id)
                if game and (game["version"] > version or game["status"] != "playing"):
                    return game
                self.seen.wait(0.5)
        return None

    def new_game(self) -> dict | None:
        """A new game, or None when told `busy` (counted)."""
        answer = self.sio.call("new_game", HARD, timeout=30)
        if answer.get("ok"):
            self.games += 1
            return answer["game"]
        if answer.get("error", {}).get("code") == "busy":
            self.busy += 1
            return None
        raise RuntimeError(f"new_game refused: {answer}")

    def _play(self, game: dict | None = None) -> None:
        while not self.stop.is_set():
            if game is None or game["status"] != "playing":
                game = self.new_game()
                if game is None:
                    self.stop.wait(RETRY_BUSY)
                    continue
            cell = self.rng.choice(game["legal"])
            started = time.perf_counter()
            answer = self.sio.call("move", {"game": game["id"], "cell": cell}, timeout=30)
            if not answer.get("ok"):
                game = None
                continue
            game = answer["game"]
            if game["status"] == "playing" and game["turn"] != "X":
                replied = self._reply(game["id"], game["version"])
                if replied is None:
                    self.lost += not self.stop.is_set()
                    game = None
                    continue
                game = replied
                self.replies.append(time.perf_counter() - started)
                if game.get("budget"):
                    self.budgets.append(game["budget"])
            self.stop.wait(self.think)

    def start(self, game: dict | None = None) -> UltimateClient:
        self.thread = threading.Thread(target=self._play, args=(game,), daemon=True)
        self.thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        with self.seen:
            self.seen.notify_all()
        self.thread.join(40)
        with contextlib.suppress(Exception):
            self.sio.disconnect()


class AnalysingClient:
    """Plays both sides of a pass-and-play Ultimate game and asks `analyze` after each move."""

    def __init__(self, base: str, address: str, seed: int) -> None:
        self.rng = random.Random(seed)
        self.sio = connect(base, address)
        self.answered = self.busy = self.games = self.lost = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._ask, daemon=True)

    def _ask(self) -> None:
        game: dict | None = None
        while not self.stop.is_set():
            try:
                if game is None or over(game):
                    game = self.sio.call("new_game", LOCAL_ULTIMATE, timeout=30).get("game")
                    self.games += game is not None
                    continue
                game = self.sio.call("move", next_move(self.rng, game), timeout=30).get("game")
                if game is None or over(game):
                    continue
                answer = self.sio.call("analyze", {"game": game["id"]}, timeout=30)
            except Exception:  # a timeout under the crowd: counted, and on
                self.lost += not self.stop.is_set()
                game = None
                continue
            if answer.get("ok"):
                self.answered += 1
            elif answer.get("error", {}).get("code") == "busy":
                self.busy += 1
                self.stop.wait(RETRY_BUSY)

    def start(self) -> AnalysingClient:
        self.thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(40)
        with contextlib.suppress(Exception):
            self.sio.disconnect()


class ClassicClient:
    """Plays classic moves against the perfect AI, each move's round trip timed."""

    def __init__(self, base: str, address: str) -> None:
        self.rng = random.Random(7)
        self.sio = connect(base, address)
        self.game: dict | None = None
        self.latencies: list[tuple[float, float]] = []  # (when, seconds)
        self.lost = 0

    def play(self, until: float, pace: float = 0.05) -> None:
        while time.monotonic() < until:
            if self.game is None or over(self.game):
                self.game = self.sio.call("new_game", CLASSIC, timeout=30).get("game")
                continue
            started = time.perf_counter()
            answer = self.sio.call("move", next_move(self.rng, self.game), timeout=30)
            self.latencies.append((time.monotonic(), time.perf_counter() - started))
            if not answer.get("ok"):
                self.lost += 1
                self.game = None
                continue
            self.game = answer["game"]
            time.sleep(pace)


def ms(values: list[float], fraction: float) -> float:
    return round((percentile(values, fraction) or 0) * 1000, 1)


def run_analyses(attackers: int, seconds: float, mode: str, root: Path | None = None) -> dict:
    """The honest `hard` player's AI reply quiet, then beside `attackers` analysing addresses."""
    machine = busy_cores(1.0)
    note(mode, f"starting the server (machine busy: {machine:.1f} cores)")
    with CrowdServer(mode=mode, root=root) as server:
        honest = UltimateClient(server.url, "10.99.0.1", think=1.0, seed=1)
        honest.start(honest.new_game())
        time.sleep(min(20.0, seconds / 2))
        quiet = list(honest.replies)
        note(mode, f"{attackers} analysing addresses arrive")
        crowd = [AnalysingClient(server.url, f"127.0.0.{n + 2}", seed=100 + n).start()
                 for n in range(attackers)]
        time.sleep(2.0)  # the crowd arriving: measured from here
        settled = len(honest.replies)
        time.sleep(seconds)
        during = honest.replies[settled:]
        for client in crowd:
            client.finish()
        honest.finish()
        result = {
            "crowd": "analyses", "mode": mode, "attackers": attackers, "seconds": seconds,
            "root": str(root) if root else None, "machine_busy_cores": round(machine, 1),
            "analyses_answered": sum(c.answered for c in crowd),
            "busy_answers": sum(c.busy for c in crowd),
            "honest_quiet_replies": len(quiet),
            "honest_quiet_p50_ms": ms(quiet, 0.5), "honest_quiet_p90_ms": ms(quiet, 0.9),
            "honest_quiet_max_ms": round(max(quiet, default=0) * 1000, 1),
            "honest_replies": len(during),
            "honest_p50_ms": ms(during, 0.5), "honest_p90_ms": ms(during, 0.9),
            "honest_max_ms": round(max(during, default=0) * 1000, 1),
            "honest_budget_min_s": min(honest.budgets[len(quiet):], default=None),
            "bound_ms": REPLY_BOUND_MS,
            "lost": honest.lost + sum(c.lost for c in crowd),
            "tracebacks": server.tracebacks(),
        }
        result["met"] = result["honest_p90_ms"] <= REPLY_BOUND_MS and result["lost"] == 0
        return result


def report_analyses(result: dict) -> str:
    rows = [("analysing addresses", result["attackers"]),
            ("analyses answered / busy answers",
             f"{result['analyses_answered']} / {result['busy_answers']}"),
            ("honest hard reply quiet p50 / p90 / max (ms)",
             f"{result['honest_quiet_p50_ms']} / {result['honest_quiet_p90_ms']} / "
             f"{result['honest_quiet_max_ms']} ({result['honest_quiet_replies']} replies)"),
            ("honest hard reply crowd p50 / p90 / max (ms)",
             f"{result['honest_p50_ms']} / {result['honest_p90_ms']} / "
             f"{result['honest_max_ms']} ({result['honest_replies']} replies)"),
            ("least budget in the crowd (s)", result["honest_budget_min_s"]),
            ("lost", result["lost"]),
            (f"p90 within the bound ({result['bound_ms']:g} ms)", "yes" if result["met"] else "no")]
    lines = [f"bench-ai-crowd --crowd analyses ({result['mode']}, {result['seconds']} s, machine "
             f"busy {result['machine_busy_cores']} cores before the run"
             + (f", server from {result['root']}" if result["root"] else "") + ")", "",
             "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
    return "\n".join(lines)


def run(attackers: int, seconds: float, mode: str) -> dict:
    machine = busy_cores(1.0)
    note(mode, f"starting the server (machine busy: {machine:.1f} cores)")
    with CrowdServer(mode=mode) as server:
        classic = ClassicClient(server.url, "10.99.0.2")
        classic.play(time.monotonic() + min(10.0, seconds / 3))  # quiet: the baseline
        quiet = [s for _, s in classic.latencies]
        honest = UltimateClient(server.url, "10.99.0.1", think=1.0, seed=1)
        first = honest.new_game()  # in a game before the crowd comes
        honest.start(first)
        time.sleep(3.0)
        settled = len(honest.replies)
        note(mode, f"{attackers} attackers arrive")
        crowd = []
        for n in range(attackers):
            crowd.append(UltimateClient(server.url, f"127.0.0.{n + 2}", think=0.0,
                                        seed=100 + n).start())
        began = time.monotonic()
        classic_from = len(classic.latencies)
        classic.play(began + seconds)
        for client in crowd:
            client.finish()
        honest.finish()
        loaded = [s for _, s in classic.latencies[classic_from:]]
        during = honest.replies[settled:]
        admitted = sum(1 for c in crowd if c.games)
        result = {
            "mode": mode, "attackers": attackers, "seconds": seconds,
            "machine_busy_cores": round(machine, 1),
            "attackers_admitted": admitted,
            "busy_answers": sum(c.busy for c in crowd),
            "attacker_replies": sum(len(c.replies) for c in crowd),
            "honest_replies": len(during),
            "honest_p50_ms": ms(during, 0.5), "honest_p95_ms": ms(during, 0.95),
            "honest_max_ms": round(max(during, default=0) * 1000, 1),
            "honest_budget_min_s": min(honest.budgets, default=None),
            "classic_quiet_p99_ms": ms(quiet, 0.99), "classic_crowd_p99_ms": ms(loaded, 0.99),
            "classic_target_ms": round(1.5 * ms(quiet, 0.99) + 20, 1),
            "lost": honest.lost + classic.lost + sum(c.lost for c in crowd),
            "tracebacks": server.tracebacks(),
        }
        result["met"] = (result["honest_p95_ms"] <= 2000 and result["lost"] == 0
                         and result["classic_crowd_p99_ms"] <= result["classic_target_ms"])
        with contextlib.suppress(Exception):
            classic.sio.disconnect()
        return result


def report(result: dict) -> str:
    rows = [("attacking addresses", result["attackers"]),
            ("attackers let in / busy answers",
             f"{result['attackers_admitted']} / {result['busy_answers']}"),
            ("honest AI reply p50 / p95 / max (ms)",
             f"{result['honest_p50_ms']} / {result['honest_p95_ms']} / {result['honest_max_ms']}"),
            ("honest replies; least budget (s)",
             f"{result['honest_replies']}; {result['honest_budget_min_s']}"),
            ("classic move p99 quiet / crowd (ms)",
             f"{result['classic_quiet_p99_ms']} / {result['classic_crowd_p99_ms']} "
             f"(target {result['classic_target_ms']})"),
            ("lost replies", result["lost"]),
            ("targets met", "yes" if result["met"] else "no")]
    lines = [f"bench-ai-crowd ({result['mode']}, {result['seconds']} s, machine busy "
             f"{result['machine_busy_cores']} cores before the run)", "",
             "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attackers", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--mode", choices=["gevent", "threading"], default="gevent")
    parser.add_argument("--crowd", choices=["games", "analyses"], default="games")
    parser.add_argument("--root", type=Path, default=None,
                        help="the source tree of the server (--crowd analyses)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.crowd == "analyses":
        result = run_analyses(args.attackers, args.seconds, args.mode,
                              args.root.resolve() if args.root else None)
        print(json.dumps(result) if args.json else report_analyses(result))
    else:
        result = run(args.attackers, args.seconds, args.mode)
        print(json.dumps(result) if args.json else report(result))
    return 0 if result["lost"] == 0 and not result["tracebacks"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
