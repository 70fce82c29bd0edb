"""Does the room wait for the AI? A classic player's round trips, quiet and beside AI searches.

    python -m bench.ai_load [--moves 240] [--seconds 24] [--only threading|gevent]
                            [--no-throughput] [--root OTHER_TREE] [--json]

1. Latency: a victim plays classic moves against the perfect AI, timed, while the server is
   quiet and while four other players keep ultimate `hard` games and `analyze` requests
   going (four turns of each, so both meet the same background on a shared machine), for
   `python app.py` (threading) and for `gunicorn -k gevent -w 1`. Target: the loaded p99
   within 1.5x the quiet p99 plus 20 ms; no AI reply lost or timed out.
2. Throughput: ultimate `hard` AI moves served per second with 1, 2 and 4 worker processes,
   and through the Redis queue (TTT_AI_QUEUE) with one, then two `python -m ttt worker`s
   (needs redis-server; skipped without it).
Prints a Markdown report (or JSON). The machine may be shared: the report says how busy it was.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.common import (
    PY,
    ROOT,
    ServerProcess,
    SyncPlayer,
    busy_cores,
    close_all,
    connect_sync,
    fetch_cookie,
    note,
    percentile,
)

HARD = {"mode": "ai", "you": "X", "level": "hard", "variant": "ultimate"}
REPLY_TIMEOUT = 60.0  # an AI reply later than this counts as timed out


class AIServer(ServerProcess):
    """The game server with extra environment (the AI's workers, its queue)."""

    def __init__(self, mode: str, extra: dict[str, str], root: Path | None = None) -> None:
        super().__init__(mode=mode, root=root)
        self.extra = extra

    def environment(self) -> dict[str, str]:
        return {**super().environment(), **self.extra}


class UltimatePlayer:
    """Plays ultimate `hard` games as fast as the AI answers; asks `analyze` after each reply."""

    def __init__(self, base: str, seed: int, analyze: bool = True) -> None:
        self.rng = random.Random(seed)
        self.analyze = analyze
        self.sio = connect_sync(base, fetch_cookie(base))
        self.seen = threading.Condition()
        self.latest: dict[str, dict] = {}
        self.sio.on("game", self._pushed)
        self.replies, self.lost, self.busy, self.analyses = 0, 0, 0, 0
        self.reply_times: list[float] = []
        self.budgets: list[float] = []  # the seconds each reply's search was given
        self.stop = threading.Event()
        self.playing = threading.Event()  # cleared: finish the move under way, then wait
        self.playing.set()
        self.idle = threading.Event()     # set while paused with nothing in flight
        self.thread = threading.Thread(target=self._play, daemon=True)

    def _pushed(self, game: dict) -> None:
        with self.seen:
            old = self.latest.get(game["id"])
            if old is None or game.get("rev", 0) >= old.get("rev", 0):
                self.latest[game["id"]] = game
            self.seen.notify_all()

    def _reply(self, game_id: str, version: int) -> dict | None:
        """The game once the AI has answered the move that made `version`."""
        deadline = time.monotonic() + REPLY_TIMEOUT
        with self.seen:
            while time.monotonic() < deadline:
                game = self.latest.get(game_id)
                if game and (game["version"] > version or game["status"] != "playing"):
                    return game
                self.seen.wait(0.5)
        return None

    def pause(self) -> None:
        self.playing.clear()

    def _play(self) -> None:
        game = None
        while not self.stop.is_set():
            if not self.playing.is_set():
                self.idle.set()
                self.playing.wait()
                self.idle.clear()
            if game is None or game["status"] != "playing":
                game = self.sio.call("new_game", HARD, timeout=30)["game"]
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
                    self.lost += 1
                    game = None
                    continue
                game = replied
            self.replies += 1
            self.reply_times.append(time.perf_counter() - started)
            if game.get("budget"):
                self.budgets.append(game["budget"])
            if self.analyze and game["status"] == "playing":
                judged = self.sio.call("analyze", {"game": game["id"]}, timeout=30)
                if judged.get("ok"):
                    self.analyses += 1
                elif judged.get("error", {}).get("code") == "busy":
                    self.busy += 1

    def start(self) -> UltimatePlayer:
        self.thread.start()
        return self

    def finish(self) -> None:
        self.stop.set()
        self.playing.set()
        self.thread.join(REPLY_TIMEOUT + 30)
        with contextlib.suppress(Exception):
            self.sio.disconnect()


def summary(latencies: list[float]) -> dict:
    ms = [x * 1000 for x in latencies]
    return {"moves": len(ms), "p50": round(percentile(ms, 0.5) or 0, 1),
            "p99": round(percentile(ms, 0.99) or 0, 1), "max": round(max(ms, default=0), 1)}


def victim_moves(victim: SyncPlayer, moves: int, seconds: float,
                 pace: float = 0.0) -> list[float]:
    """The round trips of `moves` timed moves (or as many as `seconds` allow), `pace` apart:
    spread over the window, so they meet the searches at every stage."""
    start = len(victim.latencies)
    deadline = time.monotonic() + seconds
    while len(victim.latencies) - start < moves and time.monotonic() < deadline:
        victim.moves(1, deadline)
        time.sleep(pace)
    return victim.latencies[start:]


def latency(mode: str, moves: int, seconds: float, pace: float,
            root: Path | None = None, cycles: int = 4) -> dict:
    """The victim's round trips quiet, then beside four ultimate players."""
    note(mode, f"starting the server{f' from {root}' if root else ''}")
    with AIServer(mode, {"TTT_AI_NICE": os.environ.get("TTT_AI_NICE", "19")}, root) as server:
        victim = SyncPlayer(server.url, seed=1)
        victim_moves(victim, 20, 30)  # warm-up
        loaders = [UltimatePlayer(server.url, seed=n) for n in range(4)]
        for player in loaders:
            player.pause()
            player.start()
        # Quiet and loaded windows take turns, so both meet the same background on a shared
        # machine (other people's work comes and goes within a minute).
        quiet: list[float] = []
        loaded: list[float] = []
        window = 0.0
        for _ in range(cycles):
            for player in loaders:
                player.pause()
            for player in loaders:  # the searches asked for have all been answered
                player.idle.wait(REPLY_TIMEOUT)
            quiet += victim_moves(victim, moves // cycles, seconds / cycles, pace)
            replies = sum(p.replies for p in loaders)
            for player in loaders:
                player.playing.set()
            deadline = time.monotonic() + 30
            while sum(p.replies for p in loaders) < replies + 2 and time.monotonic() < deadline:
                time.sleep(0.05)  # the searches are under way before the victim is timed
            began = time.monotonic()
            loaded += victim_moves(victim, moves // cycles, seconds / cycles, pace)
            window += time.monotonic() - began
        note(mode, f"quiet: {summary(quiet)}; loaded: {summary(loaded)}")
        for player in loaders:
            player.finish()
        close_all([victim])
        q, lo = summary(quiet), summary(loaded)
        return {
            "mode": mode, "quiet": q, "loaded": lo, "loaded_s": round(window, 1),
            "ratio_p99": round(lo["p99"] / q["p99"], 2) if q["p99"] else None,
            "target_ms": round(1.5 * q["p99"] + 20, 1),
            "met": lo["p99"] <= 1.5 * q["p99"] + 20,
            "ai_replies": sum(p.replies for p in loaders),
            "ai_lost": sum(p.lost for p in loaders),
            "ai_reply_p50_s": round(percentile([t for p in loaders for t in p.reply_times],
                                               0.5) or 0, 2),
            "ai_reply_max_s": round(max((t for p in loaders for t in p.reply_times),
                                        default=0), 2),
            "analyses": sum(p.analyses for p in loaders),
            "busy": sum(p.busy for p in loaders),
            "tracebacks": server.tracebacks(),
        }


def throughput(label: str, extra: dict[str, str], seconds: float, players: int = 8,
               queue_workers: tuple[str, int] | None = None) -> dict:
    """Ultimate hard AI moves served a second by one server with these AI settings."""
    note("throughput", f"{label}: starting")
    workers: list[subprocess.Popen] = []
    with AIServer("threading", extra) as server:
        if queue_workers:
            url, count = queue_workers
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            workers = [subprocess.Popen([PY, "-m", "ttt", "worker", "--redis", url], cwd=ROOT,
                                        env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
                       for _ in range(count)]
        try:
            loaders = [UltimatePlayer(server.url, seed=100 + n, analyze=False).start()
                       for n in range(players)]
            time.sleep(3)  # warm-up: worker processes start, first searches run
            before = sum(p.replies for p in loaders)
            time.sleep(seconds)
            served = sum(p.replies for p in loaders) - before
            for player in loaders:
                player.finish()
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    worker.wait(30)
        budgets = [b for p in loaders for b in p.budgets]
        result = {"setup": label, "moves_per_s": round(served / seconds, 2),
                  "budget_s": round(sum(budgets) / len(budgets), 2) if budgets else None,
                  "lost": sum(p.lost for p in loaders)}
        note("throughput", str(result))
        return result


def redis_server(workdir: Path) -> tuple[subprocess.Popen, str] | None:
    binary = shutil.which("redis-server")
    if not binary:
        return None
    from bench.common import free_port
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis
    client = redis.Redis(port=port)
    for _ in range(200):
        with contextlib.suppress(redis.ConnectionError):
            client.ping()
            return proc, f"redis://127.0.0.1:{port}/0"
        time.sleep(0.05)
    proc.kill()
    return None


def report(machine: float, lat: list[dict], tput: list[dict]) -> str:
    lines = [f"Machine: {os.cpu_count()} cores; {machine:g} cores already busy with other "
             "work before the run (shared machine).", "",
             "| server | quiet p50 / p99 / max ms | loaded p50 / p99 / max ms | p99 ratio "
             "| target p99 ≤ | met | loaded for | AI replies (lost) | analyses (busy) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in lat:
        q, lo = r["quiet"], r["loaded"]
        lines.append(f"| {r['mode']} | {q['p50']} / {q['p99']} / {q['max']} | {lo['p50']} / "
                     f"{lo['p99']} / {lo['max']} | {r['ratio_p99']} | {r['target_ms']} | "
                     f"{'yes' if r['met'] else 'no'} | {r['loaded_s']} s | "
                     f"{r['ai_replies']} ({r['ai_lost']}) | "
                     f"{r['analyses']} ({r['busy']}) |")
    if tput:
        # Budgets shrink as the queue grows: more workers show as more time a move (a
        # stronger AI) as much as more moves a second.
        lines += ["", "| AI search set-up | ultimate hard moves/s | mean budget s a move "
                  "| lost |", "|---|---|---|---|"]
        lines += [f"| {t['setup']} | {t['moves_per_s']} | {t['budget_s']} | {t['lost']} |"
                  for t in tput]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=240,
                        help="victim moves timed quiet, and as many loaded")
    parser.add_argument("--pace", type=float, default=0.05,
                        help="seconds between the victim's moves (spreads them over the load)")
    parser.add_argument("--seconds", type=float, default=24,
                        help="quiet (and loaded) time at most, over four turns each")
    parser.add_argument("--only", choices=["threading", "gevent"], action="append")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--root", type=Path, help="the server from another source tree (e.g. "
                        "a checkout of an older commit), for a before/after")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    machine = busy_cores()
    modes = [] if args.no_latency else args.only or ["threading", "gevent"]
    lat = [latency(mode, args.moves, args.seconds, args.pace, args.root) for mode in modes]
    tput: list[dict] = []
    if not args.no_throughput:
        for count in (1, 2, 4):
            tput.append(throughput(f"{count} worker process{'es' if count > 1 else ''}",
                                   {"TTT_AI_WORKERS": str(count)}, args.seconds))
        with tempfile.TemporaryDirectory() as work:
            started = redis_server(Path(work))
            if started is None:
                note("throughput", "no redis-server: the queue is not measured")
            else:
                proc, url = started
                try:
                    for count in (1, 2):
                        tput.append(throughput(
                            f"queue (RQ), {count} `python -m ttt worker`",
                            {"TTT_AI_QUEUE": url, "TTT_AI_WORKERS": "4"}, args.seconds,
                            queue_workers=(url, count)))
                finally:
                    proc.terminate()
                    proc.wait(10)
    if args.json:
        print(json.dumps({"busy_cores_before": machine, "latency": lat, "throughput": tput}))
    else:
        print(report(machine, lat, tput))
    lost = sum(r["ai_lost"] for r in lat) + sum(t["lost"] for t in tput)
    return 1 if lost or not all(r["met"] for r in lat) else 0


if __name__ == "__main__":
    sys.exit(main())
