"""The one door every push leaves by: built once in `create_app`, handed to the events, the
master (its pushes made off any event: an AI move landing later), the bot API and the
housekeeping loops.

A push goes out in two steps. `prepare` builds its body (a view reads presence, a `record`
reads the store): the socket handler calls it inside its guarded section, so a store fault
while a body is built is the sender's `unavailable` answer, not an escape. `send` emits what
was prepared. The bots' hub, once installed (`attach`), hears every push first: it copies
each to the bot streams listening to its room and emits it to the people in their
protocol's form.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from flask_socketio import SocketIO
from socketio import PubSubManager

from ttt.master.replies import Push
from ttt.web.transport import engine_hooks


class Listener(Protocol):
    """Who hears every push before the people do: the bots' hub (ttt.web.bots.hub)."""

    def hears(self, room_name: str) -> bool: ...

    def deliver(self, push: Push, body: dict[str, Any], skip: str | None) -> None: ...


@dataclass(frozen=True, slots=True)
class Ready:
    """A push with its body built: only emitting is left."""

    push: Push
    body: dict[str, Any]
    skip: str | None


class Publisher:
    """Every push of the app, from its room's sender to its room."""

    def __init__(self) -> None:
        self.socketio: SocketIO | None = None
        self.bots: Listener | None = None
        self._local = True  # all rooms are in this process (no message queue)

    def bind(self, socketio: SocketIO) -> None:
        """The app's Socket.IO server, once it is made."""
        self.socketio = socketio
        self._local = not isinstance(socketio.server.manager, PubSubManager)

    def attach(self, bots: Listener) -> None:
        """The bots' hub: it hears every push from now on."""
        self.bots = bots

    def prepare(self, pushes: Iterable[Push], sender: str | None = None) -> list[Ready]:
        """The pushes with their bodies built (skipping the sender, who has the answer, where
        a push says so). With one process and no message queue, a room with nobody else in
        it gets nothing: its body is never even built (an AI game's spectator room, a
        player's only tab)."""
        if not pushes or self.socketio is None:
            return []
        server, bots, local = self.socketio.server, self.bots, self._local
        ready: list[Ready] = []
        for push in pushes:
            skip = sender if push.skip_sender else None
            if local and not (bots and bots.hears(push.room)):
                members = engine_hooks.room_members(server, push.room)
                if not members or (skip is not None and len(members) == 1 and skip in members):
                    continue
            ready.append(Ready(push, push.body(), skip))
        return ready

    def send(self, ready: list[Ready]) -> None:
        """Emit what `prepare` built: to the bots' hub when there is one, else to the room."""
        socketio, bots = self.socketio, self.bots
        for item in ready:
            if bots is not None:
                bots.deliver(item.push, item.body, item.skip)
            elif socketio is not None:
                socketio.emit(item.push.event, item.body, to=item.push.room, skip_sid=item.skip)

    def publish(self, pushes: Iterable[Push], sender: str | None = None) -> None:
        """Build and send at once: for pushes made off any client's event (a clock, an AI)."""
        self.send(self.prepare(pushes, sender))

    def here(self, event: str, body: dict[str, Any], sid: str) -> None:
        """One event to one connection of this process, never through the queue."""
        if self.socketio is not None:
            engine_hooks.emit_here(self.socketio.server, event, body, sid, [])
