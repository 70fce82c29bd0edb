"""The model of tests/server/inprocess/test_fuzz.py: an independent referee and a plain model
of the game, written from PROTOCOL.md, and the strategies of the payloads sent.

Nothing here drives the server: tests/server/inprocess/test_fuzz.py's state machine does, and
checks every answer and push against this model.
"""

from __future__ import annotations

import string
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hypothesis import strategies as st

from ttt.rules.classic import LINES

AI = "ai"
LEVELS = ("easy", "medium", "hard", "perfect")
MODES = ("ai", "local", "friend")
CLOCKS = (10, 30, 60)
REACTIONS = ("👍", "👏", "😮", "😅", "🤝", "gg")
CAN = ("move", "hint", "analyze", "resign", "abort", "claim", "rematch", "decline", "react")
CAP = 4                      # TTT_MAX_LIVE_PER_PLAYER, small so the cap is reached
CLAIM_AFTER = 60.0           # TTT_CLAIM_AFTER, the default
FIRST_MOVE = 30.0            # PROTOCOL v3: a timed game's window for each side's first move
ABORTS = ("abort", "no_start", "abandoned")  # endings with no result
REACT_EVERY = 1.0            # one reaction a second per player
NAME_LENGTH = 24
RENAME_BATCH = 4  # live games a rename rewrites besides the shown one
URLSAFE = string.ascii_letters + string.digits + "-_"
EVENTS = ("new_game", "join", "move", "analyze", "rematch", "claim", "hint", "resign", "abort",
          "decline", "set_name", "react")
GAME_EVENTS = ("analyze", "rematch", "claim", "hint", "resign", "abort", "decline", "react")
# "connect" and "disconnect" are left out on purpose: see test_abuse.py.
UNKNOWN_EVENTS = ("nope", "message", "game", "record", "rematch ", "MOVE", "reaction", "tick", "")
SECONDS = st.sampled_from([1, 7, 31, 61])  # time passing: 1 s for reactions, 61 for claims


# --- an independent referee -------------------------------------------------------------------

def other(mark: str) -> str:
    return "O" if mark == "X" else "X"


def outcome(moves: list[int]) -> tuple[str | None, bool]:
    """(winner, over) after these moves, computed without ttt.rules.classic."""
    cells = ["."] * 9
    for i, cell in enumerate(moves):
        cells[cell] = "XO"[i % 2]
    for a, b, c in LINES:
        if cells[a] != "." and cells[a] == cells[b] == cells[c]:
            return cells[a], True
    return None, "." not in cells


def board_of(moves: list[int]) -> str:
    cells = ["."] * 9
    for i, cell in enumerate(moves):
        cells[cell] = "XO"[i % 2]
    return "".join(cells)


def playable(moves: Any) -> bool:
    """Whether new_game may start from these moves: legal, and the game not over yet."""
    if not isinstance(moves, list) or len(moves) > 8:
        return False
    if any(type(c) is not int or not 0 <= c <= 8 for c in moves) or len(set(moves)) < len(moves):
        return False
    return not any(outcome(moves[:i])[1] for i in range(1, len(moves) + 1))


@cache
def solve(board: str) -> tuple[int, int]:
    """(result for the side to move: 1 win, 0 draw, -1 loss; plies to the end, perfect play)."""
    turn = "X" if board.count("X") == board.count("O") else "O"
    best: tuple[int, int] | None = None
    for cell in (i for i, ch in enumerate(board) if ch == "."):
        result, plies = judge(board, cell, turn)
        if best is None or (result, -plies if result > 0 else plies) > (
                best[0], -best[1] if best[0] > 0 else best[1]):
            best = (result, plies)
    assert best is not None
    return best


def judge(board: str, cell: int, turn: str) -> tuple[int, int]:
    """The mover's result and the plies to the end after `turn` plays `cell`."""
    after = board[:cell] + turn + board[cell + 1:]
    if any(after[a] == after[b] == after[c] == turn for a, b, c in LINES):
        return 1, 1
    if "." not in after:
        return 0, 1
    result, plies = solve(after)
    return -result, plies + 1


def best_cells(moves: list[int]) -> set[int]:
    """The cells that keep the best result for the side to move."""
    board = board_of(moves)
    turn = "XO"[len(moves) % 2]
    results = {c: judge(board, c, turn)[0] for c in range(9) if board[c] == "."}
    top = max(results.values())
    return {c for c, r in results.items() if r == top}


# Names: PROTOCOL says 1 to 24 characters after trimming, no control characters.
UNCLEAR = ("Zs", "Zl", "Zp", "Co", "Cn", "Cs")  # not "control" by name: see clean_name
BLANKS = "\u115f\u1160\u3164\uffa0\u2800\u180e\u17b4\u17b5\u034f"  # render as nothing


def clean_name(value: Any) -> str | None | bool:
    """The name the server keeps, None when it must refuse it, True when either may happen.

    Control (Cc) and format (Cf: bidi overrides, zero-width space) characters are refused,
    except the zero-width joiner that emoji sequences need. The contract does not say what
    becomes of other separators, private-use or unassigned characters: either answer passes.
    """
    if not isinstance(value, str) or len(value) > 4 * NAME_LENGTH:
        return None
    name = unicodedata.normalize("NFKC", value).strip()  # measured and kept normalised
    if not 1 <= len(name) <= NAME_LENGTH:
        return None
    kinds = {unicodedata.category(c) for c in name if c != "\u200d" and c != " "}
    if kinds & {"Cc", "Cf"}:
        return None
    if kinds & set(UNCLEAR):
        return True
    if not any(unicodedata.category(c)[0] in "LNPS" and c not in BLANKS for c in name):
        return None  # nothing visible (only spaces, joiners or blank fillers)
    return name


# --- the model ----------------------------------------------------------------------------------

def _no_score() -> dict[str, int]:
    return {"X": 0, "O": 0, "draws": 0}


def _nobody() -> dict[str, Any]:
    return {"X": None, "O": None}


@dataclass
class Game:
    id: str
    mode: str
    level: str | None
    seats: dict[str, str | None]             # mark -> player id, AI, or None while open
    created: float
    moves: list[int] = field(default_factory=list)
    movers: list[str] = field(default_factory=list)  # who sent each move: player id or AI
    start: int = 0                           # moves preset by new_game {moves}
    finish: tuple[str, str | None] | None = None  # (reason, winner) of an ending off the board
    rematch_id: str | None = None
    offer: str | None = None                 # the seat that offered a rematch
    hints: dict[str, int] = field(default_factory=lambda: {"X": 0, "O": 0})
    hinted: int | None = None                # the version the last counted hint was given at
    series: dict[str, int] = field(default_factory=_no_score)  # earlier games of the chain
    names: dict[str, str | None] = field(default_factory=_nobody)
    seated: dict[str, float | None] = field(default_factory=_nobody)  # when each seat was taken
    clock: int | None = None
    deadline: float | None = None            # when the side on move runs out of time
    aborted_by: str | None = None            # the side that called a friend game off

    def _repr_pretty_(self, printer, cycle) -> None:  # how Hypothesis prints a draw
        printer.text(f"Game({self.id[:6]}…, {self.mode}, moves={self.moves})")

    @property
    def over(self) -> bool:
        return self.finish is not None or outcome(self.moves)[1]

    @property
    def status(self) -> str:
        if self.finish:
            return "aborted" if self.finish[0] in ABORTS else "won"
        winner, over = outcome(self.moves)
        return "won" if winner else "draw" if over else "playing"

    @property
    def winner(self) -> str | None:
        return self.finish[1] if self.finish else outcome(self.moves)[0]

    @property
    def reason(self) -> str | None:
        if self.status != "won":
            return None
        return self.finish[0] if self.finish else "line"

    @property
    def turn(self) -> str | None:
        return None if self.over else "XO"[len(self.moves) % 2]

    @property
    def abortable(self) -> bool:
        """Whether the game has no result that matters yet: against a friend, X and O have not
        both moved; against the AI, the person has made at most one move since the start."""
        if self.mode == "ai":
            person = next(mark for mark, seat in self.seats.items() if seat != AI)
            mine = sum(1 for ply in range(self.start, len(self.moves)) if "XO"[ply % 2] == person)
            return mine < 2
        return self.played < 2

    @property
    def played(self) -> int:
        """Moves made in this game (not preset)."""
        return len(self.moves) - self.start

    def role(self, pid: str) -> str:
        if self.mode == "local" and self.seats["X"] == pid:
            return "both"
        for mark in ("X", "O"):
            if self.seats[mark] == pid:
                return mark
        return "spectator"

    def marks_of(self, pid: str) -> tuple[str, ...]:
        role = self.role(pid)
        return ("X", "O") if role == "both" else (role,) if role in ("X", "O") else ()

    def score(self) -> dict[str, int] | None:
        """Wins per seat and draws over the rematch chain (PROTOCOL: not against the AI)."""
        if self.mode == "ai":
            return None
        this_one = {"draw": "draws", "won": self.winner}.get(self.status)
        return {key: count + (key == this_one) for key, count in self.series.items()}

    def restart_clock(self, now: float) -> None:
        """Once both seats are taken the side on move gets the first-move window for each
        side's first move (PROTOCOL v3's fair start), the full clock after that."""
        running = (self.clock is not None and not self.over
                   and all(self.seats[m] is not None for m in "XO"))
        window = FIRST_MOVE if self.played < 2 else self.clock
        self.deadline = now + window if running else None


@dataclass
class Player:
    pid: str
    http: Any                 # its Flask test client: the cookie
    sio: Any                  # its Socket.IO test client
    connected: bool = True
    shows: str | None = None  # the game its connection shows (presence)
    held: list[tuple[str, str]] = field(default_factory=list)  # (game, mark or "watch")
    screen: Any = None        # (the last Game it got for the game it shows, when)

    def __repr__(self) -> str:
        return f"Player({self.pid[:6]}…, shows={self.shows})"

    def _repr_pretty_(self, printer, cycle) -> None:  # how Hypothesis prints a draw
        printer.text(repr(self))


class Clock:
    """The master's and the presence tracker's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


# --- payload strategies -------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8,
)
shaped_ids = st.text(URLSAFE, min_size=16, max_size=64)          # no such game, right shape
odd_ids = st.one_of(st.text(max_size=70), st.text(URLSAFE, min_size=65, max_size=80),
                    st.text(URLSAFE, max_size=15))
cells = st.one_of(st.integers(0, 8), st.integers(-3, 12), json_values)
versions = st.one_of(st.integers(0, 9), st.integers(-2, 12), json_values)
names = st.one_of(
    st.sampled_from(["Ana", "  Ben  ", "👩‍💻", "Zoë", "x" * NAME_LENGTH, "x" * (NAME_LENGTH + 1),
                     " " * 3, "", "<b>hi</b>", "a\u202eb", "a\u200bb", "a\tb", "\tCid\n",
                     "a\x00", "\u200d"]),
    st.text(st.characters(categories=["L", "M", "N", "P", "S"], include_characters=" "),
            max_size=NAME_LENGTH + 2),
    st.text(st.sampled_from("ab 👍\u200d\t\n\x07\x1b\x7f\x85\u202e\u2066\u200b\xa0"),
            max_size=6),
    json_values,
)
odd_new_games = st.one_of(
    json_values,
    st.fixed_dictionaries({}, optional={
        "mode": st.sampled_from(MODES) | json_values,
        "you": st.sampled_from(["X", "O", "x", "both"]) | json_values,
        "level": st.sampled_from(LEVELS) | json_values,
        "moves": st.lists(st.integers(-1, 9), max_size=10) | json_values,
        "clock": st.sampled_from([*CLOCKS, None, 0, 15, 10.0, True, "10"]) | json_values,
        "variant": st.sampled_from(["classic", "Classic"]) | json_values,
        "extra": json_values}))
reactions = st.one_of(st.sampled_from(REACTIONS), st.sampled_from(REACTIONS),
                      st.sampled_from(["👎", "GG", " gg", "", "👍👍"]), json_values)
