"""A bot client in the standard library only: `python -m ttt bot run mybot.py ...`.

This one file is also served by every ttt site at `/bots/sdk.py`: without ttt installed,
`python sdk.py mybot.py --server URL --token-file F` runs the same client.

`Api` makes the calls (keep-alive HTTP/1.1, the token only in the Authorization header);
`Runner` reads the event stream in a thread (reconnecting with a growing pause), answers
every game view that lists "move" in `can` with `move(game)`, accepts challenges, and
starts games against an opponent until it has finished the number asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import json
import queue
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Move = Callable[[dict[str, Any]], int]


class Unauthorized(RuntimeError):
    """The server refused the token (wrong, or revoked)."""


class Api:
    """The bot API of one server, for one token."""

    def __init__(self, server: str, token: str, timeout: float = 60.0) -> None:
        url = urllib.parse.urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not a server URL: {server!r}")
        self.scheme, self.host, self.port = url.scheme, url.hostname, url.port
        self.base = url.path.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.timeout = timeout
        self._local = threading.local()

    def _connection(self, timeout: float | None = None) -> http.client.HTTPConnection:
        kind = (http.client.HTTPSConnection if self.scheme == "https"
                else http.client.HTTPConnection)
        return kind(self.host, self.port, timeout=timeout or self.timeout)

    def _call(self, path: str, body: dict[str, Any] | None = None,
              method: str = "POST") -> dict[str, Any]:
        data = json.dumps(body or {}).encode() if method == "POST" else None
        headers = {**self._headers, "Content-Type": "application/json"}
        for attempt in range(2):  # a kept-alive connection the server closed: open another
            conn = getattr(self._local, "conn", None) or self._connection()
            self._local.conn = conn
            try:
                conn.request(method, self.base + path, body=data, headers=headers)
                response = conn.getresponse()
                text = response.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
                continue
            try:
                answer = json.loads(text)
            except ValueError:
                answer = {"ok": False, "error": {"code": "internal",
                                                 "message": f"HTTP {response.status}"}}
            if response.status == 401:
                raise Unauthorized(answer.get("error", {}).get("message", "unauthorized"))
            return answer
        raise AssertionError("unreachable")

    def call(self, path: str, body: dict[str, Any] | None = None,
             method: str = "POST") -> dict[str, Any]:
        """One call; the server's JSON answer (an error answer too, never an exception).
        A `rate_limited` answer is tried again after a growing pause, up to about 6 s."""
        pause = 0.1
        while True:
            answer = self._call(path, body, method)
            if answer.get("ok") is not False or pause > 3 or \
                    answer.get("error", {}).get("code") != "rate_limited":
                return answer
            time.sleep(pause)
            pause *= 2

    def account(self) -> dict[str, Any]:
        """Which bot this token is."""
        return self.call("/api/bot/account", method="GET")

    def move(self, game_id: str, cell: int) -> dict[str, Any]:
        return self.call(f"/api/bot/game/{game_id}/move", {"cell": cell})

    def challenge(self, opponent: str, variant: str = "classic", you: str | None = None,
                  clock: int | None = None) -> dict[str, Any]:
        return self.call("/api/bot/challenge", {"opponent": opponent, "variant": variant,
                                                "you": you, "clock": clock})

    def stream(self) -> Iterator[dict[str, Any]]:
        """The event stream's lines, until the server closes it (pings every 15 s)."""
        conn = self._connection(timeout=40.0)
        try:
            conn.request("GET", self.base + "/api/bot/stream", headers=self._headers)
            response = conn.getresponse()
            if response.status == 401:
                raise Unauthorized("the server refused the token")
            if response.status != 200:
                raise OSError(f"stream answered HTTP {response.status}")
            self.streaming = conn
            while True:
                line = response.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


def load_move(path: str | Path) -> Move:
    """The `move(game) -> int` function of a bot file."""
    spec = importlib.util.spec_from_file_location(f"ttt_bot_{Path(path).stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    move = getattr(module, "move", None)
    if not callable(move):
        raise ValueError(f"{path} defines no move(game) function")
    return move


@dataclass
class Tally:
    """Finished games by result, from the bot's side."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    aborted: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses + self.aborted

    def count(self, game: dict[str, Any]) -> str:
        you, status = game.get("you"), game.get("status")
        result = ("aborted" if status == "aborted" else "draws" if status == "draw"
                  else "wins" if game.get("winner") == you else "losses")
        setattr(self, result, getattr(self, result) + 1)
        reason = game.get("reason") or status
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        return result


class Runner:
    """Plays a bot's games from its stream until `games` are finished (0: forever)."""

    def __init__(self, api: Api, move: Move, games: int = 0, opponent: str | None = None,
                 variant: str = "classic", parallel: int = 1, accept: bool = True,
                 log: Callable[[str], None] | None = None,
                 schedule: list[str] | None = None) -> None:
        self.api, self.move = api, move
        self.games, self.variant = games, variant
        # The opponents of the games this bot starts, one entry a game.
        self.schedule = list(schedule or ([opponent] * games if opponent else []))
        self.parallel, self.accept = max(1, parallel), accept
        self.log = log or (lambda text: None)
        self.tally = Tally()
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.reconnects = 0
        self._done = threading.Event()
        self._acted: dict[str, int] = {}     # game id -> the rev last answered
        self._finished: set[str] = set()
        self._live: set[str] = set()
        self._started = 0
        self._waiting: dict[str, float] = {}  # challenges to bots not yet taken -> when sent
        self.challenge_wait = 30.0            # seconds before an untaken challenge is withdrawn
        self.error: str | None = None
        self._pool = ThreadPoolExecutor(self.parallel) if self.parallel > 1 else None

    # --- the stream, in its own thread --------------------------------------------------------

    def _read(self) -> None:
        pause = 0.2
        while not self._done.is_set():
            try:
                for event in self.api.stream():
                    pause = 0.2
                    self.events.put(event)
                    if self._done.is_set():
                        return
            except Unauthorized as error:
                self.events.put({"type": "unauthorized", "message": str(error)})
                return
            except (OSError, http.client.HTTPException, ValueError):
                pass
            if self._done.is_set():
                return
            self.reconnects += 1
            self.log(f"stream closed; reconnecting in {pause:.1f} s")
            time.sleep(pause)
            pause = min(5.0, pause * 2)

    # --- the games ----------------------------------------------------------------------------

    def _start_more(self) -> None:
        while self.schedule and len(self._live) < self.parallel:
            you = "X" if self._started % 2 == 0 else "O"
            opponent = self.schedule[0]
            answer = self.api.challenge(opponent, self.variant, you)
            if not answer.get("ok"):
                self.log(f"challenge refused: {answer.get('error')}")
                if answer.get("error", {}).get("code") in ("not_found", "bad_request",
                                                           "unauthorized"):
                    self.error = answer["error"]["message"]
                    self._done.set()
                return
            self.schedule.pop(0)
            self._started += 1
            self._live.add(answer["game"]["id"])
            if opponent.startswith("bot:"):  # a link waits for its person as long as it takes
                self._waiting[answer["game"]["id"]] = time.monotonic()
            self._game(answer["game"])

    def _game(self, game: dict[str, Any]) -> None:
        game_id = game["id"]
        if game_id in self._finished:
            return
        if game.get("status") != "playing":
            if game_id in self._acted or game_id in self._live:
                self._finished.add(game_id)
                self._live.discard(game_id)
                result = self.tally.count(game)
                self.log(f"game {game_id[:6]} over: {result} ({game.get('reason')})")
            return
        if "open" in game.get("seats", {}).values() and game_id not in self._live:
            return  # an old challenge nobody took (from an earlier run): not a game on
        if "open" not in game.get("seats", {}).values():
            self._waiting.pop(game_id, None)
        self._live.add(game_id)
        if "move" in game.get("can", ()) and game.get("rev", 0) > self._acted.get(game_id, -1):
            self._acted[game_id] = game.get("rev", 0)
            if self._pool is None:
                self._play(game)
            else:  # several games at once: a slow reply in one does not hold up the others
                self._pool.submit(self._play, game)

    def _play(self, game: dict[str, Any]) -> None:
        """Ask the bot for its move and send it; the answer's game goes back to the queue."""
        try:
            cell = self.move(game)
            answer = self.api.move(game["id"], int(cell))
        except Unauthorized as error:
            self.events.put({"type": "unauthorized", "message": str(error)})
            return
        except Exception as error:  # the bot's own bug, or the network: say so, go on
            self.log(f"move failed: {type(error).__name__}: {error}")
            return
        if not answer.get("ok"):
            self.log(f"move {cell} refused: {answer['error']}")
        elif answer.get("game"):
            self.events.put({"type": "game", "game": answer["game"]})

    def _withdraw_stale(self) -> None:
        """Abort the challenges nobody took in time (their game ends `aborted`)."""
        now = time.monotonic()
        for game_id, sent in list(self._waiting.items()):
            if now - sent > self.challenge_wait:
                del self._waiting[game_id]
                answer = self.api.call(f"/api/bot/game/{game_id}/abort")
                if answer.get("ok"):
                    self.events.put({"type": "game", "game": answer["game"]})

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "hello":
            self.log(f"connected as {event.get('bot')}")
        elif kind == "game":
            self._game(event["game"])
        elif kind == "challenge" and self.accept:
            answer = self.api.call(f"/api/bot/challenge/{event['id']}/accept")
            if answer.get("ok"):
                self._game(answer["game"])
        elif kind == "unauthorized":
            self.error = event.get("message", "unauthorized")
            self._done.set()

    def finished(self) -> bool:
        return bool(self.games) and self.tally.games >= self.games

    def idle(self) -> bool:
        """Whether this runner has nothing left to start and no game on."""
        return not self.schedule and not self._live

    def stop(self) -> None:
        self._done.set()

    def run(self, timeout: float | None = None) -> Tally:
        """Play until `games` are finished (or the token is refused, or `timeout` passes)."""
        reader = threading.Thread(target=self._read, daemon=True, name="bot-stream")
        reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._done.is_set() and not self.finished():
                if deadline is not None and time.monotonic() > deadline:
                    self.error = "timed out"
                    break
                try:
                    event = self.events.get(timeout=0.5)
                except queue.Empty:
                    self._withdraw_stale()
                    self._start_more()  # a refused challenge (a bot busy) is tried again
                    continue
                try:
                    self._handle(event)
                    if event.get("type") in ("hello", "game"):
                        self._start_more()
                except Unauthorized as error:
                    self.error = str(error)
                    break
        finally:
            self._done.set()
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
            conn = getattr(self.api, "streaming", None)
            if conn is not None and conn.sock is not None:
                with contextlib.suppress(OSError):  # unblock the reader's readline
                    conn.sock.shutdown(2)
        return self.tally


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `bot run` (and of this file run on its own)."""
    parser.add_argument("bot", help="the bot's Python file (defines move(game) -> int)")
    parser.add_argument("--server", default="http://127.0.0.1:5000")
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--variant", choices=["classic", "ultimate"], default="classic")
    parser.add_argument("--games", type=int, default=0, help="stop after this many (0: never)")
    parser.add_argument("--opponent", default=None, help="ai:LEVEL, bot:NAME or link")
    parser.add_argument("--parallel", type=int, default=1, help="games at once")
    parser.add_argument("--timeout", type=float, default=None, help="stop after this many s")
    parser.add_argument("--quiet", action="store_true")


def run_bot(args: argparse.Namespace) -> int:
    """Play the bot as `args` say; a JSON line of its results on stdout; 1 after an error."""
    api = Api(args.server, Path(args.token_file).read_text().strip())
    log = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    runner = Runner(api, load_move(args.bot), games=args.games, opponent=args.opponent,
                    variant=args.variant, parallel=args.parallel, log=log)
    tally = runner.run(timeout=args.timeout)
    print(json.dumps({"games": tally.games, "wins": tally.wins, "draws": tally.draws,
                      "losses": tally.losses, "aborted": tally.aborted,
                      "reasons": tally.reasons, "reconnects": runner.reconnects,
                      "error": runner.error}))
    return 1 if runner.error else 0


def main(argv: list[str] | None = None) -> int:
    """`python sdk.py mybot.py --server URL --token-file F`: this file on its own."""
    parser = argparse.ArgumentParser(prog="sdk.py", description="Play a ttt bot program.")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_bot(args)
    except (Unauthorized, OSError, ValueError) as error:
        print(f"sdk.py: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
