"""Many players on python-socketio's AsyncClient (aiohttp), spread over worker processes.

A `Swarm` starts W worker processes; each runs one asyncio loop holding its share of the
players, and answers the controller's commands over a pipe:

    connect(base, n)      n more players on that server (each its own cookie from GET /)
    burst(base, seconds)  every idle player there plays as fast as answers come (closed loop)
    pace(base, lo, hi)    players there play at human pace: think lo..hi s before each event
    drop(base, n)         disconnect n of them
    stats()               what happened since the last call, and the workers' own CPU use
    close()

A player plays perfect-AI games with random legal moves (`new_game`, then `move`s until the
game ends); only `move` round trips are timed. Each worker also measures its event loop's
lag (a 50 ms ticker: how late it wakes up), which shows whether the client itself was busy
enough to inflate the times it measures.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import random
import resource
import time
from collections import Counter
from typing import Any

from bench.common import NEW_GAME, checked, next_move, over, raise_nofile

CALL_TIMEOUT = 10.0
TICK = 0.05


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Window:
    """What the players of one worker did since the last stats() (or during one burst)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.cpu = _cpu_self()
        self.latencies: list[float] = []
        self.events = 0
        self.errors: Counter = Counter()
        self.lags: list[float] = []

    def report(self, **extra: Any) -> dict:
        return {"seconds": time.monotonic() - self.started, "cpu": _cpu_self() - self.cpu,
                "latencies": self.latencies, "events": self.events,
                "errors": dict(self.errors), "lags": self.lags, **extra}


class Player:
    def __init__(self, worker: Worker, base: str, rng: random.Random) -> None:
        self.worker, self.base, self.rng = worker, base, rng
        self.sio: Any = None
        self.http: Any = None
        self.game: dict | None = None
        self.busy = False   # in a burst or pacing
        self.dead = False
        self.task: asyncio.Task | None = None

    async def connect(self) -> None:
        import aiohttp
        import socketio

        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        async with self.http.get(self.base + "/", timeout=aiohttp.ClientTimeout(total=30)) as r:
            await r.read()
            morsel = r.cookies.get("session")
        if morsel is None:
            raise ConnectionError("GET / set no session cookie")
        self.sio = socketio.AsyncClient(reconnection=False, handle_sigint=False,
                                        http_session=self.http)
        await self.sio.connect(self.base, headers={"Cookie": f"session={morsel.value}"},
                               transports=["websocket"], wait_timeout=30)

    async def step(self) -> None:
        window = self.worker.window
        if self.game is None or over(self.game):
            answer = await self.sio.call("new_game", NEW_GAME, timeout=CALL_TIMEOUT)
            self.game = checked("new_game", answer)["game"]
            self.worker.window.events += 1
            return
        payload = next_move(self.rng, self.game)
        started = time.perf_counter()
        answer = await self.sio.call("move", payload, timeout=CALL_TIMEOUT)
        elapsed = time.perf_counter() - started
        self.game = checked("move", answer)["game"]
        if self.worker.window is window:  # a move that began in an earlier window is not timed
            window.latencies.append(elapsed)
        self.worker.window.events += 1

    async def guarded_step(self) -> bool:
        try:
            await self.step()
            return True
        except Exception as error:  # noqa: BLE001 - timeouts, refusals, drops: counted
            self.worker.window.errors[type(error).__name__] += 1
            self.game = None
            if self.sio is None or not self.sio.connected:
                self.dead = True
            return False

    async def burst(self, deadline: float) -> None:
        self.busy = True
        try:
            while time.monotonic() < deadline and not self.dead:
                await self.guarded_step()
        finally:
            self.busy = False

    async def pace(self, lo: float, hi: float) -> None:
        self.busy = True
        while not self.dead:
            await asyncio.sleep(self.rng.uniform(lo, hi))
            await self.guarded_step()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.sio is not None and self.sio.connected:
                await self.sio.disconnect()
        with contextlib.suppress(Exception):
            if self.http is not None:
                await self.http.close()


class Worker:
    def __init__(self, conn: Any, seed: int) -> None:
        self.conn = conn
        self.rng = random.Random(seed)
        self.players: list[Player] = []
        self.window = Window()
        self.tasks: set[asyncio.Task] = set()
        self.commands: asyncio.Queue = asyncio.Queue()

    async def ticker(self) -> None:
        expected = time.monotonic() + TICK
        while True:
            await asyncio.sleep(max(0.0, expected - time.monotonic()))
            now = time.monotonic()
            self.window.lags.append(now - expected)
            expected = now + TICK

    def spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def connect(self, base: str, n: int, concurrency: int) -> dict:
        gate = asyncio.Semaphore(concurrency)
        failures: Counter = Counter()

        async def one() -> None:
            player = Player(self, base, random.Random(self.rng.random()))
            async with gate:
                try:
                    await player.connect()
                except Exception as error:  # noqa: BLE001 - counted, reported
                    failures[f"{type(error).__name__}: {str(error)[:80]}"] += 1
                    await player.close()
                    return
            self.players.append(player)

        started = time.monotonic()
        await asyncio.gather(*(one() for _ in range(n)))
        return {"connected": n - sum(failures.values()), "failed": dict(failures),
                "seconds": time.monotonic() - started, "players": self.live()}

    def live(self) -> int:
        return sum(1 for p in self.players if not p.dead)

    async def burst(self, base: str, seconds: float) -> dict:
        self.window = Window()
        deadline = time.monotonic() + seconds
        players = [p for p in self.players if p.base == base and not p.busy and not p.dead]
        await asyncio.gather(*(p.burst(deadline) for p in players))
        report = self.window.report(players=len(players))
        self.window = Window()
        return report

    def pace(self, base: str, lo: float, hi: float) -> dict:
        started = 0
        for player in self.players:
            if player.base == base and not player.busy and not player.dead:
                player.busy = True
                player.task = self.spawn(player.pace(lo, hi))
                started += 1
        return {"pacing": started}

    async def drop(self, base: str, n: int) -> dict:
        """Disconnect the n players last connected to base (a ramp stepping back down)."""
        victims = [p for p in reversed(self.players) if p.base == base and not p.dead][:n]
        for player in victims:
            player.dead = True
            if player.task is not None:
                player.task.cancel()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(p.close() for p in victims),
                                                  return_exceptions=True), 8)
        gone = set(map(id, victims))
        self.players = [p for p in self.players if id(p) not in gone]
        return {"dropped": len(victims), "players": self.live()}

    def stats(self) -> dict:
        report = self.window.report(players=self.live(),
                                    open_files=len(os.listdir("/proc/self/fd")))
        self.window = Window()
        return report

    async def close(self) -> dict:
        for task in list(self.tasks):
            task.cancel()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(p.close() for p in self.players),
                                                  return_exceptions=True), 8)
        return {"closed": len(self.players)}

    async def handle(self, command: tuple) -> Any:
        name, *args = command
        if name == "connect":
            return await self.connect(*args)
        if name == "burst":
            return await self.burst(*args)
        if name == "pace":
            return self.pace(*args)
        if name == "drop":
            return await self.drop(*args)
        if name == "stats":
            return self.stats()
        if name == "close":
            return await self.close()
        raise ValueError(f"unknown command {name}")

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_reader(self.conn.fileno(), lambda: self.commands.put_nowait(self.conn.recv()))
        self.spawn(self.ticker())
        while True:
            command = await self.commands.get()
            try:
                reply: Any = {"ok": True, **(await self.handle(command))}
            except Exception as error:  # noqa: BLE001 - the controller reports it
                reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            self.conn.send(reply)
            if command[0] == "close":
                return


def worker_main(conn: Any, seed: int) -> None:
    raise_nofile()
    try:
        asyncio.run(Worker(conn, seed).serve())
    finally:
        conn.close()
        os._exit(0)  # sockets still closing are the kernel's business now


class SwarmError(RuntimeError):
    pass


class Swarm:
    """The controller: W worker processes and their pipes."""

    def __init__(self, workers: int = 2, seed: int = 0) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.pipes = []
        self.procs = []
        for i in range(max(1, workers)):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(child, seed * 1000 + i), daemon=True,
                               name=f"swarm-{i}")
            proc.start()
            child.close()
            self.pipes.append(parent)
            self.procs.append(proc)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def _all(self, commands: list[tuple], timeout: float) -> list[dict]:
        for pipe, command in zip(self.pipes, commands, strict=True):
            pipe.send(command)
        replies = []
        deadline = time.monotonic() + timeout
        for pipe, proc in zip(self.pipes, self.procs, strict=True):
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise SwarmError(f"{proc.name} did not answer {commands[0][0]} in {timeout:g} s")
            reply = pipe.recv()
            if not reply.get("ok"):
                raise SwarmError(f"{proc.name}: {reply.get('error')}")
            replies.append(reply)
        return replies

    def _split(self, n: int) -> list[int]:
        w = len(self.pipes)
        return [n // w + (1 if i < n % w else 0) for i in range(w)]

    def connect(self, base: str, n: int, concurrency: int = 25, timeout: float = 120) -> dict:
        replies = self._all([("connect", base, k, concurrency) for k in self._split(n)], timeout)
        failed: Counter = Counter()
        for r in replies:
            failed.update(r["failed"])
        return {"connected": sum(r["connected"] for r in replies), "failed": dict(failed),
                "seconds": max(r["seconds"] for r in replies),
                "players": sum(r["players"] for r in replies)}

    def burst(self, base: str, seconds: float) -> dict:
        return merge(self._all([("burst", base, seconds)] * len(self.pipes), seconds + 30))

    def pace(self, base: str, lo: float, hi: float) -> int:
        return sum(r["pacing"] for r in self._all([("pace", base, lo, hi)] * len(self.pipes),
                                                  30))

    def drop(self, base: str, n: int) -> int:
        """Disconnect n players from base; the players left there."""
        replies = self._all([("drop", base, k) for k in self._split(n)], 30)
        return sum(r["players"] for r in replies)

    def stats(self) -> dict:
        return merge(self._all([("stats",)] * len(self.pipes), 30))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._all([("close",)] * len(self.pipes), 20)
        for proc in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)

    def __enter__(self) -> Swarm:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def merge(replies: list[dict]) -> dict:
    """One report from the workers': their latencies and counts together, CPU per worker."""
    errors: Counter = Counter()
    for r in replies:
        errors.update(r["errors"])
    seconds = max(r["seconds"] for r in replies)
    return {
        "seconds": seconds,
        "events": sum(r["events"] for r in replies),
        "latencies": [x for r in replies for x in r["latencies"]],
        "errors": dict(errors),
        "players": sum(r.get("players", 0) for r in replies),
        # each worker's CPU as a share of one core over the window
        "worker_cpu": [r["cpu"] / r["seconds"] if r["seconds"] else 0.0 for r in replies],
        "lags": [x for r in replies for x in r["lags"]],
        "open_files": [r.get("open_files") for r in replies],
    }
