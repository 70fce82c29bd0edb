"""The bot's games from its event stream: challenges, turns, moves, the tally."""

from __future__ import annotations

import contextlib
import http.client
import queue
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ttt.bots.sdk.api import MARGIN, MOVE_SECONDS, Api, Move, Unauthorized
from ttt.bots.sdk.mover import Mover, Problem, Tally, explain, judge, user_traceback


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
        # A round's bots start together: an opponent not online yet is waited for this long.
        self.online_wait = 30.0 if schedule else 0.0
        self._first_try = time.monotonic()
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
        if code in self.FINAL and not (code == "not_allowed" and "unfinished" in message) \
                and not self._coming(code, message):
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

    def _coming(self, code: str | None, message: str) -> bool:
        """A round's opponent not online yet, within `online_wait` of the first challenge:
        its program is still connecting (the ladder starts every bot at once)."""
        return (code == "not_allowed" and message.endswith(" is not online")
                and time.monotonic() - self._first_try < self.online_wait)

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
