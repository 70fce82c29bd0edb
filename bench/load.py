"""A load benchmark: many python-socketio players against one server, and a consistency audit.

    python -m bench.load [--clients 200] [--seconds 30] [--drop 0.1] [--url URL]
                         [--server-root PATH] [--json]

Without --url it starts its own server (`python app.py` on a free loopback port, a temporary
SQLite store, no rate limit; from --server-root, default this tree) and reports that process's
peak memory. Each client is one player
(its own cookie from GET /) on a websocket, playing whole games against the AI (random level,
random side, random legal moves, each sent with its `version`) until the time is up. A fraction
of the clients (--drop) disconnects once in the middle of a game, half of them with a move still
in flight, reconnects, calls `join {}` and carries on from the snapshot.

At the end every client fetches each of its games with `join {game: id}` and checks it against
what it saw: every move the server accepted is there exactly once at the version it was played,
no human move appears that the client did not send, versions and move lists only ever grow, and
the perfect AI never lost. The exit status is 1 on any failed call (timeout, exception, an
unexpected refusal), lost or duplicated move or inconsistency; timing never fails the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from bench.common import ROOT, ServerProcess, connect_sync, fetch_cookie, percentile
from ttt.rules.classic import Board

LEVELS = ("easy", "medium", "hard", "perfect")
CALL_TIMEOUT = 10.0     # one event's answer; longer counts as a failed call
CONNECT_TIMEOUT = 30.0  # for all clients to connect before the clock starts
GRACE = 30.0            # after the time is up: finishing calls, auditing, closing


# --- one player --------------------------------------------------------------------------------

def outcome(moves: list[int]) -> tuple[str | None, bool]:
    """(winner, over) after these moves (ValueError for an impossible sequence)."""
    result = Board.from_moves(moves).outcome()
    return (result.winner, True) if result else (None, False)


@dataclass
class Played:
    """One game as this client saw it."""

    id: str
    side: str
    level: str
    moves: list[int]                                            # the last snapshot seen
    accepted: dict[int, int] = field(default_factory=dict)      # index -> cell, acknowledged
    unsure: dict[int, int] = field(default_factory=dict)        # sent, answer never seen
    finished: bool = False


@dataclass
class Totals:
    """Everything the clients count, merged at the end."""

    moves: int = 0
    latencies: list[float] = field(default_factory=list)
    refused: Counter = field(default_factory=Counter)
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    inconsistent: int = 0
    problems: list[str] = field(default_factory=list)
    games: int = 0
    completed: int = 0
    drops: int = 0
    outcomes: Counter = field(default_factory=Counter)

    def merge(self, other: Totals) -> None:
        self.moves += other.moves
        self.latencies += other.latencies
        self.refused += other.refused
        self.failed += other.failed
        self.failures += other.failures[: max(0, 10 - len(self.failures))]
        self.lost += other.lost
        self.duplicated += other.duplicated
        self.inconsistent += other.inconsistent
        self.problems += other.problems[: max(0, 10 - len(self.problems))]
        self.games += other.games
        self.completed += other.completed
        self.drops += other.drops
        self.outcomes += other.outcomes


class Failed(Exception):
    """A call that did not get an answer: a timeout, an exception, a dropped connection."""


class Refused(Exception):
    """A call the server refused."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code = code


class Client:
    """One player: a cookie, a websocket, and the games it played."""

    def __init__(self, base: str, rng: random.Random, drop: bool) -> None:
        self.base = base
        self.rng = rng
        self.drop_once = drop
        self.totals = Totals()
        self.games: list[Played] = []
        self.sio: Any = None
        self.cookie = ""

    # --- the wire ---

    def fetch_cookie(self) -> None:
        try:
            self.cookie = fetch_cookie(self.base, timeout=CALL_TIMEOUT)
        except ConnectionError as error:
            raise Failed(str(error)) from error

    def connect(self) -> None:
        self.sio = connect_sync(self.base, self.cookie, timeout=CALL_TIMEOUT)

    def close(self) -> None:
        if self.sio is not None and self.sio.connected:
            with contextlib.suppress(Exception):  # closing is best effort
                self.sio.disconnect()

    def call(self, event: str, payload: dict) -> dict:
        """The ok answer; Refused or Failed otherwise. A rate-limited call is tried again."""
        give_up = time.monotonic() + CALL_TIMEOUT
        while True:
            try:
                answer = self.sio.call(event, payload, timeout=CALL_TIMEOUT)
            except Exception as error:  # noqa: BLE001 - timeouts and a dropped connection alike
                raise Failed(f"{event}: {type(error).__name__} {error}".strip()) from error
            if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
                raise Failed(f"{event}: malformed answer {answer!r}")
            if answer["ok"]:
                return answer
            code = str((answer.get("error") or {}).get("code"))
            self.totals.refused[code] += 1
            if code != "rate_limited" or time.monotonic() > give_up:
                raise Refused(code, f"{event} {payload} refused: {code}")
            time.sleep(0.25)  # a server with a limit (--url): slow down, then again

    def problem(self, kind: str, text: str) -> None:
        setattr(self.totals, kind, getattr(self.totals, kind) + 1)
        if len(self.totals.problems) < 10:
            self.totals.problems.append(f"{kind}: {text}")

    # --- playing ---

    def check_snapshot(self, game: Played, snap: dict) -> None:
        """A Game object the server sent for this game: it may only have grown."""
        moves = snap.get("moves")
        if snap.get("id") != game.id or not isinstance(moves, list):
            self.problem("inconsistent", f"{game.id}: answer for another game {snap.get('id')}")
            return
        if snap.get("version") != len(moves):
            self.problem("inconsistent", f"{game.id}: version {snap.get('version')} with "
                                         f"{len(moves)} moves")
        if moves[: len(game.moves)] != game.moves:
            self.problem("inconsistent", f"{game.id}: moves {moves} rewrite {game.moves}")
        if len(set(moves)) != len(moves):
            self.problem("duplicated", f"{game.id}: a cell twice in {moves}")
            return
        try:
            winner, over = outcome(moves)
        except ValueError as error:  # not a game the rules allow
            self.problem("inconsistent", f"{game.id}: impossible moves {moves}: {error}")
            return
        if (snap.get("status") != "playing") != over or snap.get("winner") != winner:
            self.problem("inconsistent", f"{game.id}: status {snap.get('status')} / winner "
                                         f"{snap.get('winner')} for {moves}")
        game.moves = list(moves)
        if over and not game.finished:
            game.finished = True
            self.totals.completed += 1

    def new_game(self) -> Played:
        side, level = self.rng.choice("XO"), self.rng.choice(LEVELS)
        answer = self.call("new_game", {"mode": "ai", "you": side, "level": level})
        snap = answer["game"]
        game = Played(snap["id"], side, level, [])
        self.games.append(game)
        self.totals.games += 1
        self.check_snapshot(game, snap)
        if answer.get("you") != side or len(game.moves) != (1 if side == "O" else 0):
            self.problem("inconsistent", f"{game.id}: new game as {side} answered "
                                         f"{answer.get('you')} with moves {game.moves}")
        return game

    def move(self, game: Played) -> None:
        index = len(game.moves)
        cell = self.rng.choice([c for c in range(9) if c not in game.moves])
        payload = {"game": game.id, "cell": cell, "version": index}
        if self.drop_once and index >= 2 and self.rng.random() < 0.5:
            self.reconnect(game, in_flight=payload)
            return
        started = time.perf_counter()
        try:
            answer = self.call("move", payload)
        except Failed:
            game.unsure[index] = cell  # applied or not: the snapshot will tell
            raise
        self.totals.latencies.append(time.perf_counter() - started)
        self.totals.moves += 1
        game.accepted[index] = cell
        snap = answer["game"]
        self.check_snapshot(game, snap)
        if len(game.moves) <= index or game.moves[index] != cell:
            self.problem("lost", f"{game.id}: accepted {cell} at {index}, answer {game.moves}")
        _, over = outcome(game.moves[: index + 1])
        if len(game.moves) != index + (1 if over else 2):
            self.problem("inconsistent", f"{game.id}: after move {index} the game has "
                                         f"{len(game.moves)} moves (AI reply missing/extra)")

    def resync(self, game: Played | None) -> None:
        """After a failed call: reconnect if need be, and take the game's snapshot."""
        if self.sio is None or not self.sio.connected:
            self.connect()
        if game is not None:
            self.check_snapshot(game, self.call("join", {"game": game.id})["game"])

    def reconnect(self, game: Played, in_flight: dict | None) -> None:
        """Drop the connection mid-game (maybe with a move unanswered), come back, re-join."""
        self.drop_once = False
        self.totals.drops += 1
        if in_flight is not None:
            game.unsure[in_flight["version"]] = in_flight["cell"]
            self.sio.emit("move", in_flight)  # no acknowledgement asked: the answer is lost
        self.sio.disconnect()
        self.connect()
        snap = self.call("join", {}).get("game")
        if in_flight is not None and snap and snap.get("version") == in_flight["version"]:
            time.sleep(0.5)  # the unanswered move may still be on its way through the server
            snap = self.call("join", {}).get("game")
        if not snap or snap.get("id") != game.id:
            self.problem("inconsistent", f"{game.id}: join {{}} after reconnect gave "
                                         f"{snap and snap.get('id')}")
            return
        self.check_snapshot(game, snap)

    def play(self, deadline: float) -> None:
        game: Played | None = None
        while time.monotonic() < deadline:
            try:
                if game is None or outcome(game.moves)[1]:
                    game = self.new_game()
                    if self.drop_once and self.rng.random() < 0.5:
                        self.reconnect(game, in_flight=None)
                else:
                    self.move(game)
            except Refused as refusal:  # alone in its game, always on version: never refused
                self.problem("inconsistent", str(refusal))
                self.recover(game)
            except Failed as error:
                self.fail(str(error))
                if not self.recover(game):
                    return

    def recover(self, game: Played | None) -> bool:
        """Back to a known state after a refusal or a failure; False when that fails too."""
        try:
            self.resync(game)
            return True
        except (Failed, Refused) as error:
            self.fail(f"resync: {error}")
        except Exception as error:  # noqa: BLE001 - connecting again failed
            self.fail(f"reconnect: {type(error).__name__} {error}")
        return False

    def fail(self, text: str) -> None:
        self.totals.failed += 1
        if len(self.totals.failures) < 10:
            self.totals.failures.append(text)

    # --- the audit ---

    def audit(self) -> None:
        """Fetch every game this client played and hold it to what the client saw."""
        for game in self.games:
            try:
                answer = self.call("join", {"game": game.id})
            except Failed as error:
                self.fail(f"audit {error}")
                continue
            except Refused as refusal:
                self.problem("inconsistent", f"audit {refusal}")
                continue
            if answer.get("you") != game.side:
                self.problem("inconsistent", f"{game.id}: seat {answer.get('you')}, "
                                             f"not {game.side}")
            snap = answer["game"]
            self.check_snapshot(game, snap)
            final = game.moves
            human = 0 if game.side == "X" else 1
            for index, cell in game.accepted.items():
                if index >= len(final) or final[index] != cell:
                    self.problem("lost", f"{game.id}: accepted {cell} at {index} but the game "
                                         f"is {final}")
                elif final.count(cell) != 1:
                    self.problem("duplicated", f"{game.id}: {cell} more than once in {final}")
            for index in range(human, len(final), 2):
                if index not in game.accepted and game.unsure.get(index) != final[index]:
                    self.problem("duplicated", f"{game.id}: human move {final[index]} at "
                                               f"{index} that this client never sent")
            winner, over = outcome(final)
            if over:
                result = "draw" if winner is None else "win" if winner == game.side else "loss"
                self.totals.outcomes[f"{game.level}:{result}"] += 1
                if game.level == "perfect" and result == "win":
                    self.problem("inconsistent", f"{game.id}: the perfect AI lost {final}")

    def run(self, ready: threading.Event, go: threading.Event, deadline: list[float],
            done: threading.Event) -> None:
        try:
            self.fetch_cookie()
            self.connect()
        except Exception as error:  # noqa: BLE001
            self.fail(f"connect: {type(error).__name__} {error}")
            ready.set()
            done.set()
            return
        ready.set()
        go.wait()
        try:
            self.play(deadline[0])
            self.audit()
        except Exception as error:  # noqa: BLE001 - a bug here must show, not hang the run
            self.fail(f"client crashed: {type(error).__name__} {error}")
        finally:
            done.set()
            self.close()


# --- the run -----------------------------------------------------------------------------------

def run(clients: int, seconds: float, drop: float, url: str | None, seed: int | None,
        server_root: Path = ROOT) -> dict:
    server = None if url else ServerProcess("game", "threading", root=server_root).start()
    # Several comma-separated URLs: processes sharing one store, as behind a sticky front;
    # each client stays on one of them (round robin), as ip_hash would keep it.
    bases = [u.rstrip("/") for u in (url or server.url).split(",")]
    base = ",".join(bases)
    master = random.Random(seed)
    dropping = set(master.sample(range(clients), round(clients * drop)))
    players = [Client(bases[i % len(bases)], random.Random(master.random()), i in dropping)
               for i in range(clients)]
    ready = [threading.Event() for _ in players]
    done = [threading.Event() for _ in players]
    go, deadline = threading.Event(), [0.0]
    threads = [threading.Thread(target=p.run, args=(r, go, deadline, d), daemon=True)
               for p, r, d in zip(players, ready, done, strict=True)]
    try:
        for thread in threads:
            thread.start()
            time.sleep(0.002)  # a short ramp: no thundering herd on the listen queue
        connect_deadline = time.monotonic() + CONNECT_TIMEOUT
        for event in ready:
            event.wait(max(0.0, connect_deadline - time.monotonic()))
        started = time.monotonic()
        deadline[0] = started + seconds
        go.set()
        hard_stop = deadline[0] + GRACE
        for event in done:
            event.wait(max(0.0, hard_stop - time.monotonic()))
        elapsed = time.monotonic() - started
        for thread in threads:  # closing: each disconnect waits ~3 s, all in parallel
            thread.join(max(0.0, hard_stop + 10 - time.monotonic()))
        hung = sum(1 for e in done if not e.is_set())
        peak_kib = server.peak_kib() if server else None
        open_files = server.open_fds() if server else None
        server_alive = server.alive() if server else None
        tracebacks = server.tracebacks() if server else None
    finally:
        if server:
            server.stop()

    totals = Totals()
    for player in players:
        totals.merge(player.totals)
    if hung:
        totals.failed += hung
        totals.failures.append(f"{hung} clients did not finish within the grace period")
    active = min(elapsed, seconds) if elapsed else seconds
    p50, p99 = percentile(totals.latencies, 0.50), percentile(totals.latencies, 0.99)
    report = {
        "url": base if url else "own server (sqlite, rate limit off)",
        "clients": clients,
        "seconds": seconds,
        "drop": drop,
        "dropped_and_reconnected": totals.drops,
        "moves": totals.moves,
        "moves_per_s": round(totals.moves / active, 1) if active else None,
        "move_latency_ms": {
            "p50": round(p50 * 1000, 1) if p50 is not None else None,
            "p99": round(p99 * 1000, 1) if p99 is not None else None,
            "mean": round(statistics.fmean(totals.latencies) * 1000, 1)
            if totals.latencies else None,
            "max": round(max(totals.latencies) * 1000, 1) if totals.latencies else None,
        },
        "refused": dict(sorted(totals.refused.items())),
        "failed_calls": totals.failed,
        "failures": totals.failures[:10],
        "lost_moves": totals.lost,
        "duplicated_moves": totals.duplicated,
        "inconsistencies": totals.inconsistent,
        "problems": totals.problems[:10],
        "games_started": totals.games,
        "games_completed": totals.completed,
        "outcomes": dict(sorted(totals.outcomes.items())),
        "server_peak_rss_mib": round(peak_kib / 1024, 1) if peak_kib else None,
        "server_open_files_at_end": open_files,
        "server_alive_at_end": server_alive,
        "server_tracebacks": tracebacks,
    }
    report["ok"] = not (totals.failed or totals.lost or totals.duplicated or totals.inconsistent
                        or tracebacks or server_alive is False)
    return report


def print_report(report: dict) -> None:
    latency = report["move_latency_ms"]
    lines = [
        f"ttt load: {report['clients']} clients for {report['seconds']:g} s against "
        f"{report['url']}",
        f"  moves             {report['moves']} ({report['moves_per_s']} moves/s)",
        f"  move latency      p50 {latency['p50']} ms, p99 {latency['p99']} ms, "
        f"max {latency['max']} ms",
        f"  games             {report['games_started']} started, "
        f"{report['games_completed']} completed",
        f"  drops             {report['dropped_and_reconnected']} disconnected and came back",
        f"  refused calls     {sum(report['refused'].values())} {report['refused'] or ''}",
        f"  failed calls      {report['failed_calls']}",
        f"  lost moves        {report['lost_moves']}",
        f"  duplicated moves  {report['duplicated_moves']}",
        f"  inconsistencies   {report['inconsistencies']}",
        "  server peak RSS   " + (f"{report['server_peak_rss_mib']} MiB"
                                 if report["server_peak_rss_mib"] else "n/a (--url)"),
        f"  server open files {report['server_open_files_at_end']} (after the run)",
        f"  server tracebacks {report['server_tracebacks']}",
    ]
    lines += [f"  ! {text}" for text in report["failures"] + report["problems"]]
    lines.append("  OK" if report["ok"] else "  FAILED")
    print("\n".join(lines), flush=True)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"bench.load: error: {message}\n")


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("must be more than 0 and at most 3600")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m bench.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=_count, default=200, help="players (default 200)")
    parser.add_argument("--seconds", type=_seconds, default=30.0, help="play time (default 30)")
    parser.add_argument("--drop", type=_fraction, default=0.1,
                        help="fraction of clients that drop and reconnect once (default 0.1)")
    parser.add_argument("--url", help="an already running server, or several comma-separated "
                        "processes sharing one store; default: start one")
    parser.add_argument("--seed", type=int, help="the clients' random seed")
    parser.add_argument("--server-root", type=Path, default=ROOT,
                        help="the source tree of the server to start (e.g. a git worktree)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        report = run(args.clients, args.seconds, args.drop, args.url, args.seed,
                     args.server_root)
    except (RuntimeError, OSError) as error:
        print(f"bench.load: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        print_report(report)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
