"""A bot client in the standard library only: `python -m ttt bot run mybot.py ...`.

This one file is also served by every ttt site at `/bots/sdk.py`, with that site's address
written in as the default `--server`: without ttt installed, `python3 sdk.py mybot.py
--token-file F` plays there.

`Api` makes the calls (keep-alive HTTP/1.1, the token only in the Authorization header);
`Runner` reads the event stream in a thread (reconnecting with a growing pause, but never
after another program took the token over), answers every game view that lists "move" in
`can` with `move(game)`, accepts challenges, and starts games against an opponent until it
has finished the number asked for. The program's `move` runs in a child process
(`Mover`): a bug in it or a move that takes too long is shown in full and resigns that game
at once, and the bot plays on.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import json
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Move = Callable[[dict[str, Any]], int]

# The site that serves this file writes its own address here (GET /bots/sdk.py).
DEFAULT_SERVER = "http://127.0.0.1:5000"
REPLACED = 3        # the exit code when another program took this bot's token over
REFUSED = 2         # the exit code when every challenge was refused for good
TOKEN_VARIABLE = "TTT_BOT_TOKEN"  # the environment variable a token may come from
MOVE_SECONDS = 10.0  # the server's deadline for a bot's move (a game's clock may be shorter)
MARGIN = 1.5         # seconds kept back from the deadline to resign in time


class Replaced(RuntimeError):
    """Another program opened this bot's stream: this one stops."""


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
                  clock: int | None = None, rated: bool = True) -> dict[str, Any]:
        return self.call("/api/bot/challenge", {"opponent": opponent, "variant": variant,
                                                "you": you, "clock": clock, "rated": rated})

    def say_variants(self, variants: list[str]) -> dict[str, Any]:
        """Tell the site which variants this bot plays (it offers people only those)."""
        return self.call("/api/bot/account", {"variants": variants})

    def site(self) -> str:
        """The server's address, for the links this client prints."""
        port = f":{self.port}" if self.port else ""
        return f"{self.scheme}://{self.host}{port}{self.base}"

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


def load_module(path: str | Path) -> Any:
    """A bot file, run as a module."""
    spec = importlib.util.spec_from_file_location(f"ttt_bot_{Path(path).stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_move(path: str | Path) -> Move:
    """The `move(game) -> int` function of a bot file."""
    move = getattr(load_module(path), "move", None)
    if not callable(move):
        raise ValueError(f"{path} defines no move(game) function")
    return move


def load_variants(path: str | Path) -> list[str]:
    """The variants a bot file says it plays: its `VARIANTS`, classic only without one."""
    variants = getattr(load_module(path), "VARIANTS", ["classic"])
    if isinstance(variants, str):
        variants = [variants]
    if not isinstance(variants, list | tuple) or not variants or \
            any(v not in ("classic", "ultimate") for v in variants):
        raise ValueError(f"{path}: VARIANTS is a list of 'classic' and 'ultimate', "
                         f"not {variants!r}")
    return list(variants)


# --- the program's move, and what to show when it goes wrong ------------------------------

@dataclass
class Problem:
    """What went wrong with one call of the program's `move`: its kind (counted in the
    summary) and the words that show it."""

    kind: str
    text: str


def draw_board(game: dict[str, Any]) -> str:
    """The position as rows of cells: 3x3, or Ultimate's 9x9 in its small boards."""
    board = str(game.get("board") or "")
    if len(board) == 9:
        return "\n".join("  " + " ".join(board[r * 3:r * 3 + 3]) for r in range(3))
    if len(board) != 81:
        return f"  {board!r}"
    rows = []
    for row in range(9):  # cell = small board * 9 + square
        big, small = divmod(row, 3)
        parts = [" ".join(board[(big * 3 + b) * 9 + small * 3:(big * 3 + b) * 9 + small * 3 + 3])
                 for b in range(3)]
        rows.append("  " + " | ".join(parts))
        if small == 2 and big < 2:
            rows.append("  ------+-------+------")
    return "\n".join(rows)


def user_traceback(error: BaseException, program: str | None) -> str:
    """The traceback from the program's own first frame on (not this file's frames)."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = os.path.abspath(__file__)
    start = next((i for i, f in enumerate(frames)
                  if (program and os.path.abspath(f.filename) == os.path.abspath(program))
                  or (not program and os.path.abspath(f.filename) != mine)), 0)
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames[start:]),
             *traceback.format_exception_only(type(error), error)]
    return "".join(lines).rstrip()


def user_stack(frame: Any, program: str | None) -> str:
    """Where the program was (its own frames only, innermost last): a stopped move's line."""
    frames = traceback.extract_stack(frame)
    mine = os.path.abspath(__file__)
    start = next((i for i, f in enumerate(frames)
                  if (program and os.path.abspath(f.filename) == os.path.abspath(program))
                  or (not program and os.path.abspath(f.filename) != mine)), len(frames))
    shown = [f for f in frames[start:] if os.path.abspath(f.filename) != mine]
    return "".join(traceback.format_list(shown)).rstrip()


def judge(game: dict[str, Any], returned: Any) -> tuple[int | None, Problem | None]:
    """The cell `move` returned, or why it is not one of the legal cells."""
    legal = game.get("legal") or []
    if isinstance(returned, bool) or not isinstance(returned, int):
        hint = (" (did you forget `return`? move must end with `return cell`)"
                if returned is None else
                " (a board? move returns the number of the cell to play)"
                if isinstance(returned, str) and len(returned) in (9, 81) else
                f" (return an int: return {int(returned)}, not {returned!r})"
                if isinstance(returned, str) and returned.strip().isascii()
                and returned.strip().isdigit() else
                f" (return an int: return {int(returned)}, not {returned!r})"
                if isinstance(returned, float) and returned.is_integer() else
                " (a (row, column) pair? return row * 3 + column)"
                if isinstance(returned, tuple) and len(returned) == 2 else "")
        return None, Problem(f"returned {type(returned).__name__}",
                             f"move returned {returned!r}, not a cell number{hint}")
    if returned not in legal:
        return None, Problem("not a legal cell", f"move returned {returned}, which is not "
                                                 "one of the legal cells")
    return returned, None


def cells(legal: list[int]) -> str:
    """Cell numbers in runs: '0-8', '45-53', '2, 4-6'."""
    runs: list[list[int]] = []
    for cell in sorted(legal):
        if runs and cell == runs[-1][1] + 1:
            runs[-1][1] = cell
        else:
            runs.append([cell, cell])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "none"


def explain(game: dict[str, Any], problem: Problem) -> str:
    """The whole story of one bad move, for the terminal."""
    forced = (f" (small board {game['next']})" if isinstance(game.get("next"), int) else "")
    return (f"{problem.text}\n"
            f"game {game.get('id')}, you are {game.get('you')}, the position:\n"
            f"{draw_board(game)}\n"
            f"legal cells{forced}: {cells(list(game.get('legal') or []))}")


def _worker(program: str, calls: Any) -> None:
    """A child process: load the program, then answer each game sent with what `move` did."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for stream in (sys.stdout, sys.stderr):  # print() in move shows at once, even in a file
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(line_buffering=True)
    if hasattr(signal, "SIGUSR1"):  # the parent asks where a slow move is, before stopping it
        def where(signum: int, frame: Any) -> None:
            calls.send(("stack", user_stack(frame, program)))

        signal.signal(signal.SIGUSR1, where)
    try:
        move = load_move(program)
    except BaseException as error:  # noqa: BLE001 - shown to the user, whatever it is
        calls.send(("error", type(error).__name__, user_traceback(error, program)))
        return
    calls.send(("ready",))
    while True:
        try:
            game = calls.recv()
        except EOFError:
            return
        try:
            calls.send(("ok", move(game)))
        except BaseException as error:  # noqa: BLE001 - the program's bug, whatever it is
            calls.send(("error", type(error).__name__, user_traceback(error, program)))


class Mover:
    """Runs the program's `move` in a child process it can stop: the answer, or a Problem.

    One child per game played at once, started with 'spawn' (the parent has threads), kept
    for the next move, and killed when a move takes too long (a new one starts after)."""

    def __init__(self, program: str | Path) -> None:
        self.program = str(program)
        self._context = multiprocessing.get_context("spawn")
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def _start(self) -> tuple[Any, Any]:
        parent, child = self._context.Pipe()
        process = self._context.Process(target=_worker, args=(self.program, child),
                                        daemon=True, name="bot-move")
        process.start()
        child.close()
        ready = parent.recv() if parent.poll(60) else ("error", "TimeoutError",
                                                        "the program took over 60 s to load")
        if ready[0] != "ready":
            process.kill()
            raise ValueError(f"{self.program} could not be loaded:\n{ready[2]}")
        with self._lock:
            self._all.append(process)
        return process, parent

    def check(self, children: int = 1) -> None:
        """Load the program in its first children (its errors now, not in a game)."""
        for _ in range(max(1, children)):
            self._idle.put(self._start())

    def _replace(self) -> None:
        """Start a child in the background for the one just stopped: starting takes a
        while, which the next move's deadline should not pay."""
        def start() -> None:
            with contextlib.suppress(Exception):
                self._idle.put(self._start())

        threading.Thread(target=start, daemon=True, name="bot-move-start").start()

    def __call__(self, game: dict[str, Any], seconds: float) -> tuple[Any, Problem | None]:
        try:
            process, pipe = self._idle.get_nowait()
        except queue.Empty:
            process, pipe = self._start()
        try:
            pipe.send(game)
            if not pipe.poll(seconds):
                stuck = self._where(process, pipe)
                process.kill()
                self._replace()
                return None, Problem("too slow", f"your move took longer than {seconds:g} s "
                                                 "(it was stopped)"
                                     + (f"; it was here:\n{stuck}" if stuck else ""))
            answer = pipe.recv()
        except (OSError, EOFError):
            process.kill()
            return None, Problem("crashed", "the program's process ended during move")
        self._idle.put((process, pipe))
        if answer[0] == "error":
            return None, Problem(answer[1], answer[2])
        return answer[1], None

    @staticmethod
    def _where(process: Any, pipe: Any) -> str:
        """The program's lines where a slow move is now (asked of the child with SIGUSR1)."""
        if not hasattr(signal, "SIGUSR1") or not process.pid:
            return ""
        with contextlib.suppress(OSError, EOFError, ValueError):
            os.kill(process.pid, signal.SIGUSR1)
            if pipe.poll(0.5):
                answer = pipe.recv()
                if answer[0] == "stack":
                    return str(answer[1])
        return ""

    def close(self) -> None:
        with self._lock:
            for process in self._all:
                if process.is_alive():
                    process.kill()


@dataclass
class Tally:
    """Finished games by result, from the bot's side."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    aborted: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)  # the program's mistakes, by kind

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

    def __init__(self, api: Api, move: Move | Mover, games: int = 0,
                 opponent: str | None = None, variant: str = "classic", parallel: int = 1,
                 accept: bool = True, log: Callable[[str], None] | None = None,
                 schedule: list[str] | None = None, rated: bool = False,
                 show: Callable[[str], None] | None = None) -> None:
        self.api, self.move = api, move
        self.rated = rated
        self.site = api.site() if hasattr(api, "site") else ""
        self.show = show or self.log_default  # a bad move's whole story (even when quiet)
        self.games, self.variant = games, variant
        # The opponents of the games this bot starts, one entry a game.
        self.schedule = list(schedule or ([opponent] * games if opponent else []))
        self.endless = opponent if opponent and not games and not schedule else None
        self.parallel, self.accept = max(1, parallel), accept
        self.log = log or (lambda text: None)
        self.tally = Tally()
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.reconnects = 0
        self._done = threading.Event()
        self._acted: dict[str, Any] = {}     # game id -> the position last answered
        self._turns: dict[str, tuple[Any, float]] = {}  # game id -> (position, its deadline)
        self._finished: set[str] = set()
        self._live: set[str] = set()
        self._started = 0
        self._waiting: dict[str, float] = {}  # challenges to bots not yet taken -> when sent
        self.challenge_wait = 30.0            # seconds before an untaken challenge is withdrawn
        self.error: str | None = None
        self.replaced = False
        self.move_seconds = MOVE_SECONDS  # the server's, once its account answer says it
        self.name = ""
        self._views: dict[str, dict[str, Any]] = {}  # game id -> its latest view
        self._pool = ThreadPoolExecutor(self.parallel) if self.parallel > 1 else None
        self.refused: str | None = None   # the last challenge refusal that ended a challenge
        self._retry_at = 0.0              # no challenge before then (a busy opponent)
        self._retry_pause = 1.0
        self.program = ""                 # the bot file, for the commands this client prints

    @staticmethod
    def log_default(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def link(self, path: str) -> str:
        """A full address on the server, for a person to open."""
        return self.site + path
    # --- the stream, in its own thread --------------------------------------------------------

    def _read(self) -> None:
        pause = 0.2
        while not self._done.is_set():
            try:
                for event in self.api.stream():
                    pause = 0.2
                    event["_at"] = time.monotonic()  # when it came: a turn's clock runs from it
                    self.events.put(event)
                    if event.get("type") == "replaced":  # never a tug-of-war: stop here
                        return
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
            self.log(f"lost the stream from {self.site or 'the server'}; "
                     f"reconnecting in {pause:.1f} s")
            time.sleep(pause)
            pause = min(5.0, pause * 2)

    # --- the games ----------------------------------------------------------------------------

    def _start_more(self) -> None:
        if self.endless and not self.schedule and not self._done.is_set():
            self.schedule.append(self.endless)  # no --games: one game after another
        if time.monotonic() < self._retry_at:
            return
        while self.schedule and len(self._live) < self.parallel:
            you = "X" if self._started % 2 == 0 else "O"
            opponent = self.schedule[0]
            answer = self.api.challenge(opponent, self.variant, you, rated=self.rated)
            at = time.monotonic()
            if not answer.get("ok"):
                self._refused(opponent, answer.get("error") or {})
                return
            self._retry_pause = 1.0
            self.schedule.pop(0)
            self._started += 1
            game_id = answer["game"]["id"]
            if opponent == "link":
                self.log("send this link to the person who will play (it takes the free "
                         "seat): " + self.link("/g/" + game_id))
                self.log("watch the game here (this link never takes a seat): "
                         + self.link(f"/g/{game_id}?watch=1"))
            self._live.add(game_id)
            if opponent.startswith("bot:"):  # a link waits for its person as long as it takes
                self._waiting[answer["game"]["id"]] = time.monotonic()
            self._game(answer["game"], at)

    FINAL = ("not_allowed", "not_found", "bad_request", "unauthorized")  # waiting changes nothing

    def _refused(self, opponent: str, error: dict[str, Any]) -> None:
        """A refused challenge: given up with a sentence when retrying cannot help (no game
        against that opponent is started any more), else tried again after a growing pause."""
        code, message = error.get("code"), error.get("message") or "refused"
        # A cap on unfinished games is answered not_allowed, but it frees as games end.
        if code in self.FINAL and not (code == "not_allowed" and "unfinished" in message):
            advice = ""
            if code == "not_allowed" and " only" in message:
                plays = message.split(" plays ", 1)[-1].split(" only", 1)[0]
                advice = f": run with --variant {plays}" if plays in ("classic", "ultimate") \
                    else ""
            elif code == "not_found":
                advice = ": check the name (the bots are listed at " + self.link("/bots") + ")"
            self.refused = f"challenge to {opponent} refused: {message}{advice}"
            self.log(self.refused)
            self.schedule = [o for o in self.schedule if o != opponent]
            if self.endless == opponent:
                self.endless = None
            if self.idle():
                self.error = self.refused
                self._done.set()
            return
        pause = self._retry_pause
        self._retry_pause = min(30.0, pause * 2)
        self._retry_at = time.monotonic() + pause
        self.log(f"challenge to {opponent} refused ({code}: {message}); "
                 f"trying again in {pause:g} s")

    def _game(self, game: dict[str, Any], at: float | None = None) -> None:
        game_id = game["id"]
        if game_id in self._finished:
            return
        if game.get("status") != "playing":
            if game_id in self._acted or game_id in self._live:
                self._finished.add(game_id)
                self._live.discard(game_id)
                self._views.pop(game_id, None)
                result = self.tally.count(game)
                words = {"wins": "won", "losses": "lost", "draws": "a draw",
                         "aborted": "aborted"}[result]
                reason = f" ({game['reason']})" if game.get("reason") else ""
                # Every finished game its own link: its replay (with the players' names and
                # the date), or the game's page when no move was made.
                replay = (f"; replay: {self.link(game['replay'])}?g={game_id}"
                          if game.get("replay") else f"; game: {self.link('/g/' + game_id)}")
                self.log(f"game {game_id} over: {words}{reason}{replay}")
            return
        if "open" in game.get("seats", {}).values() and game_id not in self._live:
            return  # an old challenge nobody took (from an earlier run): not a game on
        seated = "open" not in game.get("seats", {}).values()
        if seated:
            self._waiting.pop(game_id, None)
        if game_id not in self._views:
            self.log(f"game {game_id} ({game.get('variant', 'classic')}, you are "
                     f"{game.get('you')}): {self.link('/g/' + game_id)}")
        old = self._views.get(game_id)
        if old is not None and old.get("rev", 0) > game.get("rev", 0):
            return  # an older view overtaken by a newer one
        self._views[game_id] = game
        self._live.add(game_id)
        if "move" not in game.get("can", ()) or not seated:
            return  # not on move, or nobody to play yet: move is never asked before
        position = (game.get("board"), len(game.get("moves") or ()), game.get("turn"))
        at = time.monotonic() if at is None else at
        left = game.get("time_left")
        seconds = float(left) if isinstance(left, int | float) else self.move_seconds
        if self._turns.get(game_id, (None,))[0] != position:  # the turn's clock: from its view
            self._turns[game_id] = (position, at + min(seconds, self.move_seconds))
        if self._acted.get(game_id) == position:
            return  # this position is answered once, whatever later views of it say
        self._acted[game_id] = position
        deadline = self._turns[game_id][1]
        if self._pool is None:
            self._play(game, deadline)
        else:  # several games at once: a slow reply in one does not hold up the others
            self._pool.submit(self._play, game, deadline)

    def seconds_for(self, game: dict[str, Any], deadline: float | None = None) -> float:
        """How long `move` may think: what is left of the turn's own time (its `time_left`
        when its first view came, 10 s at most) less the margin to resign in time."""
        if deadline is None:
            left = game.get("time_left")
            limit = self.move_seconds if not isinstance(left, int | float) \
                else min(self.move_seconds, left)
        else:
            limit = deadline - time.monotonic()
        return max(0.5, round(limit - MARGIN, 1))

    def _ask(self, game: dict[str, Any],
             deadline: float | None = None) -> tuple[int | None, Problem | None]:
        """The program's cell for this game, or what went wrong."""
        if isinstance(self.move, Mover):
            returned, problem = self.move(game, self.seconds_for(game, deadline))
        else:
            try:
                returned, problem = self.move(game), None
            except Exception as error:  # the program's own bug: shown, that game resigned
                returned, problem = None, Problem(type(error).__name__,
                                                  user_traceback(error, None))
        if problem is not None:
            return None, problem
        return judge(game, returned)

    def _play(self, game: dict[str, Any], deadline: float | None = None) -> None:
        """Ask the bot for its move and send it; the answer's game goes back to the queue.
        A move that fails is shown in full, and that game is resigned at once."""
        try:
            cell, problem = self._ask(game, deadline)
            if problem is not None:
                self._give_up(game, problem)
                return
            answer = self.api.move(game["id"], cell)
        except Unauthorized as error:
            self.events.put({"type": "unauthorized", "message": str(error)})
            return
        except (OSError, http.client.HTTPException) as error:  # the network: the stream
            self.log(f"move not sent ({error}); waiting for the stream")  # resends the game
            return
        if not answer.get("ok"):
            self.log(f"game {game['id']}: move {cell} refused: "
                     f"{answer['error'].get('message')}")
        elif answer.get("game"):
            self.events.put({"type": "game", "game": answer["game"], "_at": time.monotonic()})

    def _give_up(self, game: dict[str, Any], problem: Problem) -> None:
        """Show what went wrong, count it, resign that game (the others play on)."""
        self.tally.errors[problem.kind] = self.tally.errors.get(problem.kind, 0) + 1
        self.show(f"\n=== your move failed in game {game.get('id')} ===\n"
                  f"{explain(game, problem)}\nresigning this game: "
                  f"{self.link('/g/' + str(game.get('id')))}\n")
        self._end(game, {"kind": problem.kind, "text": explain(game, problem)})

    def _end(self, game: dict[str, Any], failure: dict[str, str] | None = None) -> None:
        """Resign a game (abort it when it may still be called off without a result); a
        failed move's story goes with it (the bot's history shows it to its owner)."""
        action = "abort" if "abort" in game.get("can", ()) and "resign" not in \
            game.get("can", ()) else "resign"
        answer = self.api.call(f"/api/bot/game/{game['id']}/{action}",
                               {"failure": failure} if failure else None)
        if answer.get("ok") and answer.get("game"):
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
            self.name = str(event.get("bot"))
            self.log(f"connected to {self.site} as {self.name}")
            if not self.schedule and not self.endless:
                program = self.program or "mybot.py"
                self.log(f"waiting for challenges: people can play {self.name} at "
                         f"{self.link('/bot/' + urllib.parse.quote(self.name))}; to start "
                         f"games yourself, run: python3 sdk.py {program} --opponent ai:easy "
                         "--games 4")
        elif kind == "replaced":
            self.replaced = True
            self.error = (f"another program is now playing as {self.name or 'this bot'} "
                          "(this one stops)")
            self._done.set()
        elif kind == "game":
            self._game(event["game"], event.get("_at"))
        elif kind == "challenge" and self.accept:
            answer = self.api.call(f"/api/bot/challenge/{event['id']}/accept")
            if answer.get("ok"):
                self._game(answer["game"], time.monotonic())
        elif kind == "unauthorized":
            self.error = event.get("message", "unauthorized")
            self.unauthorized = True
            self._done.set()

    def finished(self) -> bool:
        return bool(self.games) and self.tally.games >= self.games

    def idle(self) -> bool:
        """Whether this runner has nothing left to start and no game on."""
        return not self.schedule and not self._live and not self.endless

    def stop(self) -> None:
        self._done.set()

    def run(self, timeout: float | None = None) -> Tally:
        """Play until `games` are finished (or the token is refused, or `timeout` passes).
        Ctrl-C ends the games in progress (resigned, or aborted while they may be) first."""
        try:
            tally = self._run(timeout)
            if not self.timed_out:
                return tally
            self.log(f"stopping after --timeout {timeout:g} s: ending the games in progress")
        except KeyboardInterrupt:
            self.interrupted = True
            self.log("stopping: ending the games in progress")
        self._drain()
        for game_id in list(self._live):
            # A game stopped before its first view was kept (Ctrl-C right after it came) is
            # resigned all the same: the server refuses what no longer applies.
            game = self._views.get(game_id) or {"id": game_id, "status": "playing",
                                                "can": ["resign"]}
            if game.get("status") == "playing":
                with contextlib.suppress(OSError, http.client.HTTPException, Unauthorized):
                    self._end(game)
        self._drain()
        return self.tally

    def _drain(self) -> None:
        """Count the games the queue says have ended (after a Ctrl-C)."""
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            if event.get("type") == "game" and event["game"].get("status") != "playing":
                self._game(event["game"])

    interrupted = False
    timed_out = False
    unauthorized = False

    def _run(self, timeout: float | None = None) -> Tally:
        reader = threading.Thread(target=self._read, daemon=True, name="bot-stream")
        reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while not self._done.is_set() and not self.finished():
                if deadline is not None and time.monotonic() > deadline:
                    self.timed_out = True
                    break
                if self.refused and self.idle():
                    self.error = self.refused
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
                    self.unauthorized = True
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


# --- practice with no server (--local) -----------------------------------------------------
# The same `move(game)` input, the same referee (only `legal` cells; a bad move resigns that
# game with the same report) and the same summary, against an opponent played here.

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
LEVELS = ("random", "easy", "medium", "hard")


def three(marks: str) -> tuple[str | None, list[int] | None]:
    """Who has three in a row in these nine marks, and that line."""
    for line in LINES:
        a, b, c = (marks[i] for i in line)
        if a == b == c and a in "XO":
            return a, list(line)
    return None, None


class Position:
    """A game on its own: classic (9 cells) or Ultimate (81, cell = small board * 9 +
    square; the square played sends the opponent to that small board unless it is closed)."""

    def __init__(self, variant: str = "classic") -> None:
        self.variant = variant
        self.cells = ["."] * (81 if variant == "ultimate" else 9)
        self.moves: list[int] = []
        self.next: int | None = None

    def boards(self) -> str:
        """Ultimate's small boards: 'X' or 'O' won, '-' full with no line, '.' open."""
        states = []
        for b in range(9):
            small = "".join(self.cells[b * 9:b * 9 + 9])
            states.append(three(small)[0] or ("." if "." in small else "-"))
        return "".join(states)

    def winner(self) -> tuple[str | None, list[int] | None]:
        return three(self.boards() if self.variant == "ultimate" else "".join(self.cells))

    def targets(self) -> list[int]:
        if self.winner()[0]:
            return []
        boards = self.boards()
        if self.next is not None and boards[self.next] == ".":
            return [self.next]
        return [b for b in range(9) if boards[b] == "."]

    def legal(self) -> list[int]:
        if self.variant != "ultimate":
            return [] if self.winner()[0] else [i for i, m in enumerate(self.cells) if m == "."]
        return [b * 9 + c for b in self.targets() for c in range(9)
                if self.cells[b * 9 + c] == "."]

    def over(self) -> bool:
        return bool(self.winner()[0]) or not self.legal()

    def turn(self) -> str:
        return "X" if len(self.moves) % 2 == 0 else "O"

    def play(self, cell: int) -> None:
        self.cells[cell] = self.turn()
        self.moves.append(cell)
        if self.variant == "ultimate":
            square = cell % 9
            self.next = square if self.boards()[square] == "." else None

    def copy(self) -> Position:
        twin = Position(self.variant)
        twin.cells, twin.moves, twin.next = list(self.cells), list(self.moves), self.next
        return twin

    def replay(self) -> str | None:
        if not self.moves:
            return None
        if self.variant == "ultimate":
            return "/r/u/" + ".".join(map(str, self.moves))
        return "/r/" + "".join(map(str, self.moves))


def wins_for(position: Position, mark: str) -> list[int]:
    """The legal cells where `mark` would win the game (classic) or a small board (Ultimate)."""
    found = []
    for cell in position.legal():
        small = cell // 9 * 9 if position.variant == "ultimate" else 0
        marks = position.cells[small:small + 9]
        marks[cell - small] = mark
        if three("".join(marks))[0]:
            found.append(cell)
    return found


def negamax(position: Position) -> tuple[int, int | None]:
    """Classic's perfect play: the score for the side on move and its best cell."""
    if position.winner()[0]:
        return -1, None
    legal = position.legal()
    if not legal:
        return 0, None
    best, choice = -2, legal[0]
    for cell in legal:
        after = position.copy()
        after.play(cell)
        score = -negamax(after)[0]
        if score > best:
            best, choice = score, cell
    return best, choice


def built_in(level: str, position: Position, rng: Any) -> int:
    """The cell a built-in opponent plays: random; easy (takes a win); medium (and blocks);
    hard (perfect in classic, and in Ultimate never sends you where you win a board)."""
    legal, me = position.legal(), position.turn()
    foe = "O" if me == "X" else "X"
    if level == "random":
        return rng.choice(legal)
    if level in ("easy", "medium", "hard") and wins_for(position, me):
        return rng.choice(wins_for(position, me))
    if level == "hard" and position.variant == "classic":
        return negamax(position)[1] if len(legal) < 9 else 4
    if level in ("medium", "hard") and wins_for(position, foe):
        return rng.choice(wins_for(position, foe))
    if level == "hard":
        safe = []
        for cell in legal:
            after = position.copy()
            after.play(cell)
            if not wins_for(after, foe):
                safe.append(cell)
        legal = safe or legal
    return rng.choice(legal)


def local_view(position: Position, game_id: str, you: str, opponent: str) -> dict[str, Any]:
    """The game as the bot's seat sees it online (the fields of the guide's table)."""
    winner, line = position.winner()
    over = position.over()
    game: dict[str, Any] = {
        "id": game_id, "mode": "ai" if opponent.startswith("ai:") else "friend",
        "variant": position.variant, "level": opponent[3:] if opponent.startswith("ai:")
        else None, "board": "".join(position.cells), "turn": None if over else position.turn(),
        "status": "won" if winner else "draw" if over else "playing", "winner": winner,
        "reason": "line" if winner else None, "line": line, "moves": list(position.moves),
        "seats": {you: "human", ("O" if you == "X" else "X"): "ai"
                  if opponent.startswith("ai:") else "human"},
        "online": {"X": True, "O": True}, "version": len(position.moves), "you": you,
        "can": ["move", "resign"] if not over and position.turn() == you else
        (["resign"] if not over else []), "rev": len(position.moves),
        "names": {you: {"name": "you", "bot": True},
                  ("O" if you == "X" else "X"): None if opponent.startswith("ai:")
                  else {"name": opponent, "bot": True}},
        "clock": None, "replay": position.replay(), "score": None, "start": 0,
        "time_left": MOVE_SECONDS if not over else None,
    }
    game["legal"] = position.legal() if "move" in game["can"] else []
    if position.variant == "ultimate":
        game.update(boards=position.boards(), next=None if over else position.next,
                    targets=position.targets())
    return game


def play_local(args: argparse.Namespace, log: Callable[[str], None]) -> tuple[Tally, bool]:
    """The games of `--local`: the bot's `move` (in its child process, as online) against a
    built-in opponent or another bot file. The tally, and whether Ctrl-C stopped it."""
    import random

    opponent = args.opponent or "ai:easy"
    level = opponent.removeprefix("ai:")
    rival: Mover | None = None
    if not (opponent.startswith("ai:") and level in LEVELS):
        if opponent.startswith(("ai:", "bot:")) or opponent == "link" or \
                not Path(opponent).is_file():
            raise ValueError(f"--local plays ai:{'|ai:'.join(LEVELS)} or another bot's file, "
                             f"not {opponent!r}")
        if args.variant not in load_variants(opponent):
            raise ValueError(f"{opponent} does not play {args.variant} (its VARIANTS)")
        rival = Mover(opponent)
        rival.check()
    mover = Mover(args.bot)
    tally, rng = Tally(), random.Random()
    games = args.games or 4
    mover.check()
    log(f"practice with no server: {games} {args.variant} games against {opponent}")
    try:
        for number in range(1, games + 1):
            you, position = ("X" if number % 2 else "O"), Position(args.variant)
            game_id = f"local-{number}"
            log(f"game {game_id} ({args.variant}, you are {you}) against {opponent}")
            resigned = None
            while not position.over():
                view = local_view(position, game_id, you, opponent)
                if position.turn() == you:
                    returned, problem = mover(view, max(0.5, MOVE_SECONDS - MARGIN))
                    cell, problem = (None, problem) if problem else judge(view, returned)
                    if problem is not None:
                        tally.errors[problem.kind] = tally.errors.get(problem.kind, 0) + 1
                        log(f"\n=== your move failed in game {game_id} ===\n"
                            f"{explain(view, problem)}\nresigning this game (practice)\n")
                        resigned = you
                        break
                elif rival is not None:
                    theirs = {**view, "you": position.turn(), "can": ["move", "resign"],
                              "legal": position.legal()}
                    returned, problem = rival(theirs, max(0.5, MOVE_SECONDS - MARGIN))
                    cell, problem = (None, problem) if problem else judge(theirs, returned)
                    if problem is not None:
                        log(f"the opponent's move failed in game {game_id}: "
                            f"{problem.text.splitlines()[-1]}; it resigns")
                        resigned = position.turn()
                        break
                else:
                    cell = built_in(level, position, rng)
                position.play(cell)
            final = local_view(position, game_id, you, opponent)
            if resigned:
                final.update(status="won", winner="O" if resigned == "X" else "X",
                             reason="resign", line=None, can=[], legal=[])
            result = tally.count(final)
            words = {"wins": "won", "losses": "lost", "draws": "a draw"}[result]
            reason = f" ({final['reason']})" if final.get("reason") else ""
            replay = (f"; replay: {DEFAULT_SERVER}{final['replay']}" if final["replay"] else "")
            log(f"game {game_id} over: {words}{reason}{replay}")
    except KeyboardInterrupt:
        log("stopping")
        return tally, True
    finally:
        mover.close()
        if rival is not None:
            rival.close()
    return tally, False


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `bot run` (and of this file run on its own)."""
    parser.add_argument("bot", help="the bot's Python file (defines move(game) -> int)")
    parser.add_argument("--server", default=DEFAULT_SERVER,
                        help="the site to play on (default: %(default)s)")
    parser.add_argument("--token", default=None,
                        help="the bot's token (shown once when it was made); or --token-file, "
                             f"or the {TOKEN_VARIABLE} environment variable")
    parser.add_argument("--token-file", default=None,
                        help="a file holding the bot's token")
    parser.add_argument("--variant", choices=["classic", "ultimate"], default="classic")
    parser.add_argument("--games", type=int, default=0, help="stop after this many (0: never)")
    parser.add_argument("--opponent", default=None,
                        help="start games against ai:LEVEL, bot:NAME, or link (prints the "
                             "link to send a person, and one to watch); without it the bot "
                             "waits for challenges")
    parser.add_argument("--rated", action="store_true",
                        help="count the games this bot starts in its record and rating "
                             "(default: casual)")
    parser.add_argument("--parallel", type=int, default=1, help="games at once")
    parser.add_argument("--timeout", type=float, default=None,
                        help="stop after this many s (the games on are ended, as by Ctrl-C)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--local", action="store_true",
                        help="practice with no server and no token: --opponent ai:random, "
                             "ai:easy, ai:medium, ai:hard or another bot's file (4 games "
                             "unless --games says)")


def summary(tally: Tally) -> str:
    """The results in words, for the terminal (stdout has them as JSON)."""
    line = (f"{tally.games} games: {tally.wins} won, {tally.draws} drawn, "
            f"{tally.losses} lost, {tally.aborted} aborted")
    if tally.errors:
        line += "; your move failed: " + ", ".join(f"{kind} x{n}"
                                                   for kind, n in tally.errors.items())
    return line


class TokenError(ValueError):
    """No token, or one that cannot be read: said with where it came from, never its value."""


def read_token(args: argparse.Namespace) -> tuple[str, str]:
    """The bot's token and where it came from (--token, --token-file, the environment)."""
    if getattr(args, "token", None):
        return args.token.strip(), "--token"
    if getattr(args, "token_file", None):
        source = f"--token-file {args.token_file}"
        try:
            token = Path(args.token_file).read_text().strip()
        except OSError as error:
            raise TokenError(f"cannot read the token file given by {source} "
                             f"({error.strerror or type(error).__name__}); if you have the "
                             "token itself, pass it with --token") from None
        if not token:
            raise TokenError(f"the token file given by {source} is empty")
        return token, source
    if os.environ.get(TOKEN_VARIABLE, "").strip():
        return os.environ[TOKEN_VARIABLE].strip(), f"the {TOKEN_VARIABLE} environment variable"
    raise TokenError(f"no token: pass --token TOKEN (or --token-file FILE, or set "
                     f"{TOKEN_VARIABLE}); a bot's token is shown when it is made at "
                     f"{args.server.rstrip('/')}/bots/new")


def refused_token(server: str, source: str) -> str:
    """What to do when the server refused the token (the token itself is never shown)."""
    return (f"{server.rstrip('/')} refused the token from {source} (wrong, or revoked): "
            f"make a new token on your bot's page ({server.rstrip('/')}/bots) and run again")


def run_bot(args: argparse.Namespace) -> int:
    """Play the bot as `args` say; a JSON line of its results on stdout. Exit 0 (also after
    Ctrl-C, SIGTERM or --timeout), 3 when another program took the token over, 2 when every
    challenge was refused for good, 1 after another error."""
    if getattr(args, "local", False):
        return run_local(args)
    token, source = read_token(args)
    try:
        return _run_bot(args, token, source)
    except Unauthorized:
        raise Unauthorized(refused_token(args.server, source)) from None


def run_local(args: argparse.Namespace) -> int:
    """`--local`: the games here, the same summary (a JSON line on stdout, words on stderr)."""
    log = (lambda text: None) if args.quiet else Runner.log_default
    variants = load_variants(args.bot)
    if args.variant not in variants:
        raise ValueError(f"{args.bot} plays {' and '.join(variants)} (its VARIANTS), "
                         f"not {args.variant}")
    tally, _ = play_local(args, Runner.log_default)
    print(json.dumps({"games": tally.games, "wins": tally.wins, "draws": tally.draws,
                      "losses": tally.losses, "aborted": tally.aborted,
                      "reasons": tally.reasons, "errors": tally.errors, "reconnects": 0,
                      "error": None}), flush=True)
    log(summary(tally))
    return 0


def _run_bot(args: argparse.Namespace, token: str, source: str) -> int:
    api = Api(args.server, token)
    log = (lambda text: None) if args.quiet else Runner.log_default
    variants = load_variants(args.bot)
    if args.variant not in variants:
        raise ValueError(f"{args.bot} plays {' and '.join(variants)} (its VARIANTS), "
                         f"not {args.variant}")
    mover = Mover(args.bot)
    try:
        mover.check(min(args.parallel, 4))
        try:
            said = api.say_variants(variants)
        except OSError as error:
            raise OSError(f"cannot reach {args.server}: {error}") from None
        if not said.get("ok"):
            raise ValueError(f"{args.server} refused: {said.get('error', {}).get('message')}")
        runner = Runner(api, mover, games=args.games, opponent=args.opponent,
                        variant=args.variant, parallel=args.parallel, log=log,
                        rated=args.rated)
        runner.program = args.bot
        if isinstance(said.get("move_seconds"), int | float):
            runner.move_seconds = float(said["move_seconds"])
        runner.log(f"{said['bot']['name']} plays {' and '.join(variants)} on {args.server}"
                   + ("" if args.rated else "; the games it starts are casual (--rated to "
                                            "count them)"))
        tally = runner.run(timeout=args.timeout)
        if runner.unauthorized:
            runner.error = refused_token(args.server, source)
    finally:
        mover.close()
    print(json.dumps({"games": tally.games, "wins": tally.wins, "draws": tally.draws,
                      "losses": tally.losses, "aborted": tally.aborted,
                      "reasons": tally.reasons, "errors": tally.errors,
                      "reconnects": runner.reconnects, "error": runner.error}), flush=True)
    log(summary(tally))
    if runner.error:
        print(f"{Path(sys.argv[0]).name}: {runner.error}", file=sys.stderr, flush=True)
    if runner.interrupted:
        return 0
    if runner.refused and runner.error == runner.refused:
        return REFUSED
    return REPLACED if runner.replaced else 1 if runner.error else 0


def main(argv: list[str] | None = None) -> int:
    """`python sdk.py mybot.py --token-file F`: this file on its own."""
    parser = argparse.ArgumentParser(prog="sdk.py", description="Play a ttt bot program.")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    # Ctrl-C ends the games cleanly, even when started from a shell that ignores it; SIGTERM
    # (a service stopped, `kill`) the same way.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return run_bot(args)
    except KeyboardInterrupt:
        return 0
    except (Unauthorized, OSError, ValueError) as error:
        print(f"sdk.py: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
