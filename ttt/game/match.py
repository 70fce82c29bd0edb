"""One game as the server keeps it: mode, seats, moves, offers, clock, and how it ended.

A match changes only through the functions here; each checks everything and returns a new
match (its `rev` one higher) or raises one precise `MatchError`. The endings off the board are
in `ttt.game.endings`, the wire view in `ttt.game.view`, the stored form in
`ttt.store.codec`. Pure: no Flask, no database, no clock (callers pass the time in).
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ttt.game.variants import VARIANTS, GameBoard, Variant, record_key
from ttt.rules.classic import Mark, Outcome, Termination
from ttt.rules.ultimate import WrongBoard
from ttt.runtime.translation import N_

Mode = Literal["ai", "local", "friend"]
MODES: tuple[str, ...] = ("ai", "local", "friend")
CLOCKS: tuple[int, ...] = (10, 30, 60)       # seconds per move a timed friend game may have
AI = "ai"                                    # the seat value of the computer
SIDES: tuple[Mark, Mark] = ("X", "O")
FIRST_MOVE = 30.0  # seconds a side has for its first move in a timed game, else it is called off
# Endings with no result: called off, no first move in time, a pass-and-play game left.
ABORTS = (Termination.ABORT, Termination.NO_START, Termination.ABANDONED)


class MatchError(ValueError):
    """A refused change, with the wire error code of PROTOCOL.md."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def new_id() -> str:
    """An unguessable game id: 128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


def other(mark: str) -> Mark:
    """The opposite side."""
    return "O" if mark == "X" else "X"


def no_score() -> dict[str, int]:
    """No games won or drawn yet."""
    return {"X": 0, "O": 0, "draws": 0}


def nobody() -> dict[str, Any]:
    """Nothing yet for either seat."""
    return {"X": None, "O": None}


class once:
    """A property worked out on first use and kept on the instance: functools'
    cached_property without its lock. Kept on measure (CPython 3.11.7): Python 3.11
    takes one RLock per cached_property shared by every instance (all threads' matches wait on
    it; 3.12 dropped it), and a first use costs 0.77 µs against 0.22 here, four a match. A
    match never changes, so two threads that work one out at once find the same value."""

    def __init__(self, func: Any) -> None:
        self.func, self.name, self.__doc__ = func, func.__name__, func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, match: Any, owner: type | None = None) -> Any:
        if match is None:
            return self
        value = match.__dict__[self.name] = self.func(match)
        return value


@dataclass(frozen=True)
class Match:
    """A game: who sits where, the moves so far, and how it ended."""

    id: str
    mode: Mode
    level: str | None
    # A seat holds a player id, AI, or None while open. Player ids never leave the server.
    seats: dict[str, str | None]
    moves: tuple[int, ...] = ()
    finish: Outcome | None = None        # an ending off the board: claim, resign, time, abort
    rematch_id: str | None = None        # the game that continued this one
    offer: Mark | None = None            # the side that offered a rematch of this finished game
    hints: dict[str, int] = field(default_factory=lambda: {"X": 0, "O": 0})
    hinted: int | None = None            # the version the last hint was counted at
    start: int = 0                       # moves preset by "try again from here"; not recorded
    series: dict[str, int] = field(default_factory=no_score)  # earlier games of the chain
    names: dict[str, str | None] = field(default_factory=nobody)
    seated: dict[str, float | None] = field(default_factory=nobody)  # when each seat filled
    # When each seat of a friend game was last seen leaving (None while online or never
    # left): stored, so a restarted server still knows how long someone has been away.
    seen: dict[str, float | None] = field(default_factory=nobody)
    clock: int | None = None             # seconds per move in a timed friend game
    deadline: float | None = None        # when the side on move runs out of time
    aborted_by: Mark | None = None       # the side that called the game off, for a player's abort
    variant: str = "classic"
    origin: str | None = None            # a hash of the creator's address, for its live-game cap
    created: float = 0.0
    updated: float = 0.0
    rev: int = 0                         # bumps on every change; stores compare-and-set on it

    @property
    def rules(self) -> Variant:
        """The game being played: classic or ultimate."""
        return VARIANTS[self.variant]

    @once
    def board(self) -> GameBoard:
        """The position after the moves."""
        return self.rules.from_moves(self.moves)

    @once
    def status(self) -> str:
        """'playing', 'won', 'draw' or 'aborted'."""
        if self.finish:
            return "aborted" if self.finish.termination in ABORTS else "won"
        outcome = self.board.outcome()
        if outcome is None:
            return "playing"
        return "won" if outcome.winner else "draw"

    @property
    def winner(self) -> Mark | None:
        """The winning side, if any."""
        if self.finish:
            return self.finish.winner
        outcome = self.board.outcome()
        return outcome.winner if outcome else None

    @property
    def reason(self) -> str | None:
        """How a won game was won: 'line', 'claim', 'resign' or 'time'."""
        if self.status != "won":
            return None
        return self.finish.termination.value if self.finish else Termination.LINE.value

    # Cached like `board` and `status` (an event asks each match these some thirty
    # times). Safe: both follow from `moves` and `finish` alone; a change makes a new Match.
    @once
    def is_over(self) -> bool:
        """Whether the game has ended, on the board or off it."""
        return self.status != "playing"

    @once
    def turn(self) -> Mark | None:
        """The side to move, or None once over."""
        return None if self.is_over else self.board.turn

    @property
    def untouched(self) -> bool:
        """Nobody moved, hinted or joined since the game was made (it may expire soon)."""
        return self.updated == self.created

    def role(self, player_id: str) -> str:
        """'X', 'O', 'both' (pass-and-play) or 'spectator' for this player."""
        if self.mode == "local" and self.seats["X"] == player_id:
            return "both"
        for mark in SIDES:
            if self.seats[mark] == player_id:
                return mark
        return "spectator"

    def humans(self) -> list[str]:
        """The player ids seated, each once."""
        return sorted({s for s in self.seats.values() if s and s != AI})

    def owners(self) -> list[str]:
        """Who a live game counts against: its players, and its creator's address as '@…'."""
        return [*self.humans(), *([f"@{self.origin}"] if self.origin else [])]

    def score(self) -> dict[str, int] | None:
        """Wins per seat and draws over the rematch chain, this game included."""
        if self.mode == "ai":
            return None
        score = dict(self.series)
        if self.status == "draw":
            score["draws"] += 1
        elif self.winner:
            score[self.winner] += 1
        return score

    @property
    def opening(self) -> bool:
        """Whether a side has yet to make its first move (the timed game's clock waits)."""
        return len(self.moves) - self.start < 2

    def seconds_left(self, now: float) -> float | None:
        """What the side on move has left in a timed game that is running."""
        if self.deadline is None or self.is_over:
            return None
        return max(0.0, self.deadline - now)

    def changed(self, now: float, **changes: Any) -> Match:
        """A copy with these fields changed, stamped `now`, one revision on."""
        return self.but(updated=now, rev=self.rev + 1, **changes)

    def but(self, **changes: Any) -> Match:
        """A copy with these fields changed: `dataclasses.replace`, made directly. Kept on
        measure: a frozen dataclass's `__init__` sets its 22 fields one `object.__setattr__`
        at a time; `replace` took 12.7 µs a copy against 3.6 here (CPython 3.11),
        two or three copies a move of ~500 µs server CPU: 4-5 % of an event. What `once`
        worked out is not copied: it belongs to the old fields."""
        if not _FIELD_SET.issuperset(changes):
            raise TypeError(f"Match has no field {sorted(set(changes) - _FIELD_SET)[0]!r}")
        copy = object.__new__(Match)
        mine = self.__dict__
        copy.__dict__.update({name: mine[name] for name in _FIELDS}, **changes)
        return copy

    @staticmethod
    def whole(values: dict[str, Any]) -> Match:
        """The match of every field's value (a stored one read back), made as `but` makes
        a copy: no `__init__`, its defaults or its 22 `object.__setattr__` (1.0 µs against
        5.0 through `Match(**values)`; one or more per event's store read)."""
        if values.keys() != _FIELD_SET:
            odd = sorted(values.keys() ^ _FIELD_SET)
            raise TypeError(f"Match fields missing or unknown: {odd}")
        match = object.__new__(Match)
        match.__dict__.update(values)
        return match


_FIELDS = tuple(f.name for f in fields(Match))
_FIELD_SET = frozenset(_FIELDS)


def ending(termination: Termination, winner: Mark | None = None) -> Outcome:
    """An ending off the board (no line)."""
    return Outcome(winner, None, termination)


# --- the changes -----------------------------------------------------------------------------

def create(mode: str, creator: str, now: float, you: str = "X", level: str | None = None,
           rng: random.Random | None = None, game_id: str | None = None,
           moves: tuple[int, ...] = (), clock: int | None = None,
           name: str | None = None, origin: str | None = None, variant: str = "classic",
           think: bool = True) -> Match:
    """A new game; against the AI as O, the AI's opening move is already played. `moves`
    starts it from that position (to try a position again; not counted in the record). With
    `think` false the AI's opening move is left for the caller (a slow AI thinks outside any
    transaction)."""
    if variant not in VARIANTS:
        raise MatchError("bad_request", f"variant must be one of {', '.join(VARIANTS)}")
    rules = VARIANTS[variant]
    if mode not in MODES:
        raise MatchError("bad_request", f"unknown mode {mode!r}")
    if you not in SIDES:
        raise MatchError("bad_request", "you must be 'X' or 'O'")
    if clock is not None and (mode != "friend" or clock not in CLOCKS):
        raise MatchError("bad_request", "clock must be 10, 30 or 60, in a game against a friend")
    names: dict[str, str | None] = nobody()
    if mode == "ai":
        if level not in rules.levels:
            raise MatchError("bad_request", f"level must be one of {', '.join(rules.levels)}")
        seats: dict[str, str | None] = {you: creator, other(you): AI}
        names[you] = name
    elif mode == "local":
        level, seats = None, {"X": creator, "O": creator}
    else:
        level, seats = None, {you: creator, other(you): None}
        names[you] = name
    try:
        start = rules.from_moves(moves)
    except ValueError as error:
        raise MatchError("bad_request", f"moves: {error}") from None
    if start.is_over:
        raise MatchError("bad_request", "moves: the game would already be over")
    seated = {m: (now if seats[m] else None) for m in SIDES}
    match = Match(id=game_id or new_id(), mode=mode, level=level, seats=seats,  # type: ignore[arg-type]
                  moves=tuple(moves), start=len(moves), names=names, seated=seated,
                  clock=clock, variant=variant, origin=origin, created=now, updated=now)
    return ai_reply(match, rng or random.Random(), now, stamp=False) if think else match


def checked(match: Match, player_id: str) -> str:
    """The role of a seated player in a game still on; refuses spectators and ended games."""
    role = match.role(player_id)
    if role == "spectator":
        raise MatchError("spectator", "you are watching this game, not playing it")
    if match.is_over:
        raise MatchError("game_over", "the game is over")
    return role


def play(match: Match, player_id: str, cell: Any, now: float,
         version: int | None = None) -> Match:
    """The match after this player marks `cell`; MatchError says why not."""
    role = checked(match, player_id)
    if version is not None and version != len(match.moves):
        raise MatchError("stale", f"the game is at version {len(match.moves)}, not {version}")
    if role != "both" and match.turn != role:
        raise MatchError("not_your_turn", "it is not your turn")
    last = match.rules.cells - 1
    if type(cell) is not int or not 0 <= cell <= last:
        raise MatchError("bad_request", f"cell must be a whole number from 0 to {last}")
    if match.board.cell(cell) != ".":
        raise MatchError("occupied", "that square is taken")
    try:
        board = match.board.play(cell)
    except WrongBoard as error:
        raise MatchError("not_allowed", str(error)) from None
    moved = match.changed(now, moves=(*match.moves, cell),
                          deadline=_deadline(match, now, board.is_over, ahead=1))
    # `once`'s cache, filled with what is known: no replay of up to 81 moves (Ultimate).
    moved.__dict__["board"] = board
    return moved


def _deadline(match: Match, now: float, over: bool, ahead: int = 0) -> float | None:
    """When the side on move (`ahead` moves on) runs out: none once over or while a seat is
    open; for a side's first move the first-move window (lichess's fair start), then a full
    clock a move."""
    if match.clock is None or over or not all(match.seats[m] for m in SIDES):
        return None
    opening = len(match.moves) + ahead - match.start < 2
    return now + (FIRST_MOVE if opening else match.clock)


def restart_clock(match: Match, now: float) -> Match:
    """The match with the side on move given a full clock (or no clock)."""
    return match.but(deadline=_deadline(match, now, match.is_over))


def expired(match: Match, now: float) -> bool:
    """Whether the side on move has run out of time."""
    return match.deadline is not None and not match.is_over and now >= match.deadline


def time_out(match: Match, now: float) -> Match:
    """The timed game lost on time by the side on move, or called off when that side's first
    move did not come in time (unchanged if its time is not up)."""
    if not expired(match, now):
        return match
    assert match.turn is not None
    if match.opening and match.clock is not None:  # a fair start (a bot's own deadline: lost)
        return match.changed(now, finish=ending(Termination.NO_START), deadline=None)
    return match.changed(now, finish=ending(Termination.TIME, other(match.turn)), deadline=None)


def credit_outage(match: Match, since: float, downtime: float) -> Match:
    """The match with `downtime` seconds given back to the side on move, if its clock was
    running at `since` (when the server was last seen up); `updated` stays (nobody acted)."""
    if match.deadline is None or match.is_over or match.deadline < since or downtime <= 0:
        return match
    return match.but(deadline=match.deadline + downtime, rev=match.rev + 1)


def ai_to_move(match: Match) -> bool:
    """Whether it is the AI's turn."""
    turn = match.turn
    return match.mode == "ai" and turn is not None and match.seats[turn] == AI


def ai_move(match: Match, rng: random.Random) -> int:
    """The cell the AI picks in this position (it must be the AI's turn)."""
    assert match.level is not None and ai_to_move(match)
    return match.rules.player(match.level).choose(match.board, rng)


def ai_plays(match: Match, cell: int, now: float, stamp: bool = True) -> Match:
    """The match after the AI marks `cell`, picked earlier by `ai_move` on this position."""
    if not ai_to_move(match):
        raise MatchError("not_your_turn", "it is not the AI's turn")
    if not stamp:  # the opening move of a new game: it is still untouched
        return match.but(moves=(*match.moves, cell))
    return match.changed(now, moves=(*match.moves, cell))


def ai_reply(match: Match, rng: random.Random, now: float, stamp: bool = True) -> Match:
    """The match after the AI's move if it is the AI's turn, else the match unchanged."""
    if not ai_to_move(match):
        return match
    return ai_plays(match, ai_move(match, rng), now, stamp)


def take_seat(match: Match, player_id: str, now: float, name: str | None = None) -> Match:
    """The match with this player in the open seat of a friend game (unchanged if none)."""
    if match.mode != "friend" or match.role(player_id) != "spectator" or match.is_over:
        return match
    for mark in SIDES:
        if match.seats[mark] is None:
            seated = match.changed(now, seats={**match.seats, mark: player_id},
                                   names={**match.names, mark: name},
                                   seated={**match.seated, mark: now})
            return restart_clock(seated, now)
    return match


def rename(match: Match, player_id: str, name: str, now: float) -> Match:
    """The match showing this player's new name on their seats (unchanged if none)."""
    names = {m: (name if match.seats[m] == player_id else match.names.get(m)) for m in SIDES}
    if match.mode == "local" or names == match.names:
        return match
    return match.changed(now, names=names)


def sighted(match: Match, online: dict[str, bool], now: float) -> Match:
    """The friend game with each seat's presence as it is now: `seen` None for a seat online,
    the time it left for one offline (kept from its first absence). Unchanged if no seat
    came or went, so only transitions are written."""
    if match.mode != "friend" or match.is_over:
        return match
    seen = {m: None if online.get(m) or match.seats[m] is None
            else match.seen.get(m) or now for m in SIDES}
    if seen == match.seen:
        return match
    # `updated` stays: coming and going is not play (an untouched game still expires soon).
    return match.but(seen=seen, rev=match.rev + 1)


def hint(match: Match, player_id: str, now: float) -> Match:
    """The match with a hint counted against the side on move, once per position."""
    role = checked(match, player_id)
    if match.mode == "friend":
        raise MatchError("not_allowed", N_("no hints in a game against a friend"))
    side = match.turn
    if role != "both" and side != role:
        raise MatchError("not_your_turn", "it is not your turn")
    assert side is not None
    if match.hinted == len(match.moves):
        return match
    return match.changed(now, hints={**match.hints, side: match.hints[side] + 1},
                         hinted=len(match.moves))


def results(before: Match, after: Match) -> list[tuple[str, str, str]]:
    """(player id, level, 'wins'|'draws'|'losses') for a change that ended a game against the AI."""
    if (after.mode != "ai" or after.start or before.is_over or not after.is_over
            or after.status == "aborted"):
        return []
    assert after.level is not None
    level = record_key(after.variant, after.level)
    found = []
    for mark in SIDES:
        seat = after.seats[mark]
        if seat and seat != AI:
            outcome = ("draws" if after.winner is None
                       else "wins" if after.winner == mark else "losses")
            found.append((seat, level, outcome))
    return found
