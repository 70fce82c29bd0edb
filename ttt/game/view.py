"""A match as the wire `Game` of PROTOCOL.md: what one receiver sees and may send.

Pure: no Flask, no database, no clock (callers pass the time in). Never a player id.
"""

from __future__ import annotations

import math
from typing import Any

from ttt.game.endings import abortable
from ttt.game.match import AI, FIRST_MOVE, SIDES, Match


def _fields(match: Match) -> dict[str, Any]:
    """The version 1 fields that do not depend on who looks or who is online (built once a
    match: every receiver's view starts from them)."""
    cached = match.__dict__.get("_wire")
    if cached is not None:
        return cached
    outcome = match.board.outcome()
    fields = {
        "id": match.id,
        "mode": match.mode,
        "variant": match.variant,
        "level": match.level,
        "board": str(match.board),
        "turn": match.turn,
        "status": match.status,
        "winner": match.winner,
        "reason": match.reason,
        "line": list(outcome.line) if outcome and outcome.line and not match.finish else None,
        "moves": list(match.moves),
        "seats": {m: _seat_kind(match.seats[m]) for m in SIDES},
        "version": len(match.moves),
        "hints": dict(match.hints),
        "rematch": match.rematch_id,
        "start": match.start,
        **match.rules.extra_view(match.board),
    }
    match.__dict__["_wire"] = fields  # a frozen match: the cache of a cached_property
    return fields


def _seat_kind(seat: str | None) -> str:
    return "ai" if seat == AI else "open" if seat is None else "human"


def public(match: Match, online: dict[str, bool] | None = None) -> dict[str, Any]:
    """The version 1 Game object (never a player id)."""
    online = online or {"X": False, "O": False}
    return {**_fields(match),
            "online": {m: True if match.seats[m] == AI else bool(online.get(m)) for m in SIDES}}


def view(match: Match, role: str, *, online: dict[str, bool], claimable_in: float | None,
         watchers: int, now: float) -> dict[str, Any]:
    """The Game as one receiver sees it: its role, what it may send, its countdowns."""
    game = public(match, online)
    left = match.seconds_left(now)
    can = allowed(match, role, claimable_in)
    game.update(
        you=role,
        can=can,
        rev=match.rev,
        legal=list(match.board.legal_moves()) if "move" in can else [],
        replay=match.rules.replay_path(match.moves),
        # Rounded up: 0 only once the claim is open (`can` then lists it), never 50 ms early.
        claimable_in=None if claimable_in is None else math.ceil(round(claimable_in * 10, 6)) / 10,
        offer={"rematch": match.offer} if match.offer else None,
        score=match.score(),
        names=dict(match.names),
        watchers=watchers,
        clock=match.clock,
        time_left=None if left is None else round(left, 1),
        # `time_left` counts a fair start's first-move window, not the clock: its length.
        first_move=FIRST_MOVE if left is not None and match.clock and match.opening else None,
        aborted=({"reason": match.finish.termination.value, "by": match.aborted_by}
                 if match.finish and match.status == "aborted" else None),
    )
    return game


def allowed(match: Match, role: str, claimable_in: float | None) -> list[str]:
    """The events a receiver in `role` may send now and have accepted (the view's `can`)."""
    seated = role in ("X", "O", "both")
    playing = not match.is_over
    can: list[str] = []
    if playing and seated and (role == "both" or match.turn == role):
        can.append("move")
        if match.mode != "friend":
            can.append("hint")
    if match.mode != "friend" or not playing:
        can.append("analyze")
    if playing and role in ("X", "O") and match.mode in ("friend", "ai"):
        can.append("resign")
    if playing and (role in ("X", "O") and match.mode in ("friend", "ai") and abortable(match)
                    or role == "both"):
        can.append("abort")
    if claimable_in == 0 and playing and role in ("X", "O") and match.mode == "friend":
        can.append("claim")
    # Against a friend a rematch is an offer: the offerer waits, the opponent may accept,
    # after an abort too (one tap to a new game with the same friend). Against the AI and
    # in pass-and-play it starts at once, mid-game too (version 1).
    if seated and (
            match.mode != "friend" or (not playing and (match.rematch_id or match.offer != role))):
        can.append("rematch")
    if match.offer and role in ("X", "O") and not match.rematch_id:
        can.append("decline")
    if match.mode == "friend" and role in ("X", "O") and all(match.seats.values()):
        can.append("react")  # once there is somebody to react to
    return can

