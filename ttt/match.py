"""One game as the server sees it: mode, seats, moves, and every change it may undergo.

A match changes only through the functions here; each checks everything and
returns a new match or raises one precise `MatchError`. Pure: no Flask, no
database, no clock (callers pass the time in).
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from ttt.players import AI_LEVELS, player
from ttt.rules import Board, Mark

Mode = Literal["ai", "local", "friend"]
MODES: tuple[str, ...] = ("ai", "local", "friend")
AI = "ai"                      # the seat value of the computer
CLAIM_AFTER_SECONDS = 60.0     # how long an opponent must be away before a claim


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


@dataclass(frozen=True)
class Match:
    """A game: who sits where, the moves so far, and how it ended."""

    id: str
    mode: Mode
    level: str | None
    # A seat holds a player id, AI, or None while open. Player ids never leave the server.
    seats: dict[str, str | None]
    moves: tuple[int, ...] = ()
    claimed_by: Mark | None = None       # set when a game is won by claim
    rematch_id: str | None = None        # the game that continued this one
    hints: dict[str, int] = field(default_factory=lambda: {"X": 0, "O": 0})
    start: int = 0                       # moves preset by "try again from here"; not recorded
    created: float = 0.0
    updated: float = 0.0
    rev: int = 0                         # bumps on every change; stores compare-and-set on it

    @cached_property
    def board(self) -> Board:
        """The position after the moves."""
        return Board.from_moves(self.moves)

    @property
    def status(self) -> str:
        """'playing', 'won' or 'draw'."""
        if self.claimed_by:
            return "won"
        outcome = self.board.outcome()
        if outcome is None:
            return "playing"
        return "won" if outcome.winner else "draw"

    @property
    def winner(self) -> Mark | None:
        """The winning side, if any."""
        if self.claimed_by:
            return self.claimed_by
        outcome = self.board.outcome()
        return outcome.winner if outcome else None

    @property
    def is_over(self) -> bool:
        """Whether the game has ended, on the board or by claim."""
        return self.status != "playing"

    @property
    def turn(self) -> Mark | None:
        """The side to move, or None once over."""
        return None if self.is_over else self.board.turn

    def role(self, player_id: str) -> str:
        """'X', 'O', 'both' (pass-and-play) or 'spectator' for this player."""
        if self.mode == "local" and self.seats["X"] == player_id:
            return "both"
        for mark in ("X", "O"):
            if self.seats[mark] == player_id:
                return mark
        return "spectator"

    def human_seat(self, player_id: str) -> Mark | None:
        """The side this player holds against the AI, or None."""
        role = self.role(player_id)
        return role if role in ("X", "O") else None  # type: ignore[return-value]

    def public(self, online: dict[str, bool] | None = None) -> dict[str, Any]:
        """The Game object of the wire contract (never a player id)."""
        outcome = self.board.outcome()
        online = online or {"X": False, "O": False}
        return {
            "id": self.id,
            "mode": self.mode,
            "level": self.level,
            "board": str(self.board),
            "turn": self.turn,
            "status": self.status,
            "winner": self.winner,
            "reason": "claim" if self.claimed_by else ("line" if outcome and outcome.winner
                                                       else None),
            "line": list(outcome.line) if outcome and outcome.line and not self.claimed_by
            else None,
            "moves": list(self.moves),
            "seats": {m: _seat_kind(self.seats[m]) for m in ("X", "O")},
            "online": {m: True if self.seats[m] == AI else bool(online.get(m)) for m in ("X", "O")},
            "version": len(self.moves),
            "hints": dict(self.hints),
            "rematch": self.rematch_id,
            "start": self.start,
        }

    def to_json(self) -> dict[str, Any]:
        """Everything, for storage."""
        return {
            "id": self.id, "mode": self.mode, "level": self.level, "seats": dict(self.seats),
            "moves": list(self.moves), "claimed_by": self.claimed_by,
            "rematch_id": self.rematch_id, "hints": dict(self.hints), "start": self.start,
            "created": self.created, "updated": self.updated, "rev": self.rev,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Match:
        """The match stored by to_json."""
        return cls(
            id=data["id"], mode=data["mode"], level=data["level"], seats=dict(data["seats"]),
            moves=tuple(data["moves"]), claimed_by=data["claimed_by"],
            rematch_id=data["rematch_id"], hints=dict(data.get("hints") or {"X": 0, "O": 0}),
            start=data.get("start", 0),
            created=data["created"], updated=data["updated"], rev=data["rev"],
        )

    def _changed(self, now: float, **changes: Any) -> Match:
        return replace(self, updated=now, rev=self.rev + 1, **changes)


def _seat_kind(seat: str | None) -> str:
    return "ai" if seat == AI else "open" if seat is None else "human"


def create(mode: str, creator: str, now: float, you: str = "X", level: str | None = None,
           rng: random.Random | None = None, game_id: str | None = None,
           moves: tuple[int, ...] = ()) -> Match:
    """A new game; against the AI as O, the AI's opening move is already played.

    `moves` starts the game from that position instead of the empty board (to try
    a position again); such a game does not count in the player's record.
    """
    if mode not in MODES:
        raise MatchError("bad_request", f"unknown mode {mode!r}")
    if you not in ("X", "O"):
        raise MatchError("bad_request", "you must be 'X' or 'O'")
    if mode == "ai":
        if level not in AI_LEVELS:
            raise MatchError("bad_request", f"level must be one of {', '.join(AI_LEVELS)}")
        seats = {you: creator, other(you): AI}
    elif mode == "local":
        level, seats = None, {"X": creator, "O": creator}
    else:
        level, seats = None, {you: creator, other(you): None}
    try:
        start = Board.from_moves(moves)
    except ValueError as error:
        raise MatchError("bad_request", f"moves: {error}") from None
    if start.is_over:
        raise MatchError("bad_request", "moves: the game would already be over")
    match = Match(id=game_id or new_id(), mode=mode, level=level, seats=seats,  # type: ignore[arg-type]
                  moves=tuple(moves), start=len(moves), created=now, updated=now)
    return ai_reply(match, rng or random.Random(), now)


def play(match: Match, player_id: str, cell: Any, now: float,
         version: int | None = None) -> Match:
    """The match after this player marks `cell`; MatchError says why not."""
    role = match.role(player_id)
    if role == "spectator":
        raise MatchError("spectator", "you are watching this game, not playing it")
    if match.is_over:
        raise MatchError("game_over", "the game is over")
    if version is not None and version != len(match.moves):
        raise MatchError("stale", f"the game is at version {len(match.moves)}, not {version}")
    if role != "both" and match.turn != role:
        raise MatchError("not_your_turn", "it is not your turn")
    if type(cell) is not int or not 0 <= cell <= 8:
        raise MatchError("bad_request", "cell must be a whole number from 0 to 8")
    if match.board.cell(cell) != ".":
        raise MatchError("occupied", "that square is taken")
    return match._changed(now, moves=(*match.moves, cell))


def ai_reply(match: Match, rng: random.Random, now: float) -> Match:
    """The match after the AI's move if it is the AI's turn, else the match unchanged."""
    turn = match.turn
    if match.mode != "ai" or turn is None or match.seats[turn] != AI:
        return match
    assert match.level is not None
    cell = player(match.level).choose(match.board, rng)
    return match._changed(now, moves=(*match.moves, cell))


def take_seat(match: Match, player_id: str, now: float) -> Match:
    """The match with this player in the open seat of a friend game (unchanged if none)."""
    if match.mode != "friend" or match.role(player_id) != "spectator":
        return match
    for mark in ("X", "O"):
        if match.seats[mark] is None:
            return match._changed(now, seats={**match.seats, mark: player_id})
    return match


def claim(match: Match, player_id: str, opponent_away: float, now: float) -> Match:
    """The friend game won by the player on move, whose opponent has been away long enough."""
    role = match.role(player_id)
    if role == "spectator":
        raise MatchError("spectator", "you are watching this game, not playing it")
    if match.is_over:
        raise MatchError("game_over", "the game is over")
    if match.mode != "friend":
        raise MatchError("not_allowed", "only a game against a friend can be claimed")
    if match.turn != role:
        raise MatchError("not_your_turn", "only the player on move can claim")
    if match.seats[other(role)] is None or opponent_away < CLAIM_AFTER_SECONDS:
        raise MatchError("not_allowed", "your friend has not been away for 60 seconds")
    return match._changed(now, claimed_by=role)


def rematch(match: Match, player_id: str, now: float, rng: random.Random,
            game_id: str | None = None) -> tuple[Match, Match]:
    """(the old match marked as continued, the new game with sides swapped)."""
    if match.role(player_id) == "spectator":
        raise MatchError("spectator", "only the players can start a rematch")
    if match.mode == "friend" and not match.is_over:
        raise MatchError("not_allowed", "finish this game before a rematch")
    seats = {"X": match.seats["O"], "O": match.seats["X"]}
    fresh = Match(id=game_id or new_id(), mode=match.mode, level=match.level, seats=seats,
                  created=now, updated=now)
    fresh = ai_reply(fresh, rng, now)
    return match._changed(now, rematch_id=fresh.id), fresh


def hint(match: Match, player_id: str, now: float) -> Match:
    """The match with one more hint counted against the side on move."""
    role = match.role(player_id)
    if role == "spectator":
        raise MatchError("spectator", "you are watching this game, not playing it")
    if match.is_over:
        raise MatchError("game_over", "the game is over")
    if match.mode == "friend":
        raise MatchError("not_allowed", "no hints in a game against a friend")
    side = match.turn
    if role != "both" and side != role:
        raise MatchError("not_your_turn", "it is not your turn")
    assert side is not None
    return match._changed(now, hints={**match.hints, side: match.hints[side] + 1})


def results(before: Match, after: Match) -> list[tuple[str, str, str]]:
    """(player id, level, 'wins'|'draws'|'losses') for a change that ended a game against the AI."""
    if after.mode != "ai" or after.start or before.is_over or not after.is_over:
        return []
    assert after.level is not None
    found = []
    for mark in ("X", "O"):
        seat = after.seats[mark]
        if seat and seat != AI:
            outcome = ("draws" if after.winner is None
                       else "wins" if after.winner == mark else "losses")
            found.append((seat, after.level, outcome))
    return found
