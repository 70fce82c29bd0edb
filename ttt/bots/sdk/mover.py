"""The program's move in a child process, and what to show when it goes wrong."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ttt.bots.sdk.api import load_move


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


# This client's own frames, never shown as the program's: the one served file, or (installed)
# every part of the package it is built from.
HERE = os.path.abspath(__file__)
OURS = os.path.dirname(HERE) if __package__ else HERE


def ours(filename: str) -> bool:
    """Whether a frame's file is this client's, not the program's."""
    path = os.path.abspath(filename)
    return path == OURS or os.path.dirname(path) == OURS


def user_traceback(error: BaseException, program: str | None) -> str:
    """The traceback from the program's own first frame on (not this file's frames)."""
    frames = traceback.extract_tb(error.__traceback__)
    start = next((i for i, f in enumerate(frames)
                  if (program and os.path.abspath(f.filename) == os.path.abspath(program))
                  or (not program and not ours(f.filename))), 0)
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames[start:]),
             *traceback.format_exception_only(type(error), error)]
    return "".join(lines).rstrip()


def user_stack(frame: Any, program: str | None) -> str:
    """Where the program was (its own frames only, innermost last): a stopped move's line."""
    frames = traceback.extract_stack(frame)
    start = next((i for i, f in enumerate(frames)
                  if (program and os.path.abspath(f.filename) == os.path.abspath(program))
                  or (not program and not ours(f.filename))), len(frames))
    shown = [f for f in frames[start:] if not ours(f.filename)]
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
