"""What an event comes to: the answer for the sender and the pushes to the rooms.

The master's output, and all the web layer turns into emits. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Push:
    """One emit: an event and its payload to a room.

    A payload may be a function that builds it, so nothing is built for a room nobody is in.
    """

    event: str
    room: str
    payload: dict[str, Any] | Callable[[], dict[str, Any]]
    skip_sender: bool = True

    def body(self) -> dict[str, Any]:
        """The payload, built if it was deferred."""
        return self.payload() if callable(self.payload) else self.payload


@dataclass
class Reply:
    """What an event comes to: the answer, the pushes, and the game the sender now shows.

    `then`, when set, is more work before the answer (a slow AI thinking): emit these
    pushes first, then call it for the Reply that carries the answer.
    """

    answer: dict[str, Any]
    pushes: list[Push] = field(default_factory=list)
    show: str | None = None   # the room the sender's connection now belongs to
    then: Callable[[], Reply] | None = None


def room(game_id: str, role: str) -> str:
    """The Socket.IO room of the connections that see a game as `role`."""
    return f"g:{game_id}:{role}"


def player_room(player: str) -> str:
    """The room of all of one player's connections (tabs)."""
    return f"p:{player}"


def refusal(code: str, message: str) -> dict[str, Any]:
    """A refused event's answer."""
    return {"ok": False, "error": {"code": code, "message": message}}
