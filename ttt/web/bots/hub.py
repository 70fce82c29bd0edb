"""Bot streams: the table's pushes turned into NDJSON lines, one stream per bot.

A bot is another kind of connection. For the table it is a pseudo-connection in Presence
(sid "bot:<player id>") that holds no seat: `Table.move` and the rest work on it as on a
socket. Its seats are held while its stream is open, under "botseat:<player id>", one lease
per live game, so a person sees it online, and offline (claimable) once the stream is gone.

Delivery: the publisher (ttt.web.realtime.publisher) hands every push to `Hub.deliver`,
which copies it to the streams of the bots listening to its room (`g:<game>:<side>`)
and then emits it to the people, a version 3 copy (a bot's name as {"name", "bot": true})
to version 3 connections.
With several processes on a message queue, every push goes through the queue and each
process's hub hears it where python-socketio hands it to the local rooms (through
`engine_hooks.on_queue_emit`, checked at start-up): a bot streaming from one process sees
the moves made in another, and the version 3 copy is made per process. Whether a bot is
online is a lease in the shared presence, and challenges wait in the shared bot book.
"""

from __future__ import annotations

import json
import logging
import secrets
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flask_socketio import SocketIO
from socketio import PubSubManager

from ttt.bots import Bot, bot_view, v3_answer, v3_names
from ttt.bots.book import Book
from ttt.game.match import SIDES, Match
from ttt.master.presence import LEASE_SECONDS
from ttt.master.replies import Push, room
from ttt.master.table import Table
from ttt.store import StoreUnavailable
from ttt.web.realtime import catchup
from ttt.web.realtime.publisher import Publisher
from ttt.web.transport import engine_hooks, room_queue

log = logging.getLogger("ttt.bots")
PING_EVERY = 15.0
CHECK_EVERY = 1.0          # how often a stream checks that its token still holds
RENEW_EVERY = LEASE_SECONDS / 3  # how often its seat leases are renewed (shared presence)
CLOSE = object()           # a stream's queue sentinel: end the stream now
REPLACED = {"type": "replaced"}  # a replaced stream's last line (PROTOCOL v4), then it ends


#: A stream's last line when the store (or shared presence) went away under it.
AWAY_LINE = {"type": "unavailable",
             "error": {"code": "unavailable",
                       "message": "the game store is unavailable; reconnect in a few seconds"}}


def _line(item: dict) -> bytes:
    return (json.dumps(item, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def bot_sid(player: str) -> str:
    """The pseudo-connection a bot's calls run on."""
    return f"bot:{player}"


def seat_sid(stream: Stream) -> str:
    """The sid a stream holds its bot's seat leases under: its own, so a stream closing in
    one process never ends the leases of the stream that replaced it in another."""
    return f"botseat:{stream.bot.player}:{stream.id}"


def peer_gone(sock: Any) -> bool:
    """Whether the client closed its end of a stream's connection (it sends nothing after
    its request, so a readable socket with nothing to read is a closed one)."""
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):  # an SSL socket takes no peek; a closed one: gone
        return False


def bot_room(player: str) -> str:
    """The room of a bot's own lines (challenges): its stream listens to it."""
    return f"b:{player}"


ONLINE = "X"  # the seat of the lease `("bot:<player>", ONLINE)` that says a stream is open


@dataclass(eq=False)
class Stream:
    """One open bot stream: its queue of lines and the games it holds seats in."""

    bot: Bot
    queue: Any
    held: dict[str, str] = field(default_factory=dict)   # game id -> the bot's side
    closed: bool = False
    id: str = field(default_factory=lambda: secrets.token_hex(8))


class Hub:
    """Every bot stream of this process, and the rooms they listen to."""

    def __init__(self, socketio: SocketIO, table: Table, book: Book, publisher: Publisher,
                 max_finished: int = 200) -> None:
        self.socketio = socketio
        self.publisher = publisher
        self.table = table
        self.book = book
        self.presence = table.presence
        self.max_finished = max_finished
        self._lock = threading.Lock()
        self._streams: dict[str, Stream] = {}         # bot player id -> its stream
        self._rooms: dict[str, set[str]] = room_queue.held_rooms(  # heard where they are
            socketio.server.manager)                   # room -> bot player ids listening
        eio = socketio.server.eio
        self._new_queue, self._empty = eio.create_queue, eio.get_queue_empty_exception()
        self.shared = isinstance(socketio.server.manager, PubSubManager)
        if self.shared:
            self._hear_the_queue()
            # A cut listener misses every push published meanwhile: once back, resend.
            engine_hooks.on_queue_recovered(socketio.server, self.resend)

    def _hear_the_queue(self) -> None:
        """Hear every emit where python-socketio hands it to this process's rooms."""

        def heard(message: dict) -> bool:
            data = message.get("data")
            if (message.get("namespace", "/") == "/" and not message.get("binary")
                    and isinstance(data, list) and len(data) == 1
                    and isinstance(data[0], dict) and message.get("callback") is None):
                push = Push(message.get("event", ""), message.get("room") or "", data[0])
                if push.room in self._rooms:
                    self._to_bots(push, data[0], list(self._rooms.get(push.room, ())))
                skip = message.get("skip_sid")
                return bool(self._split(push, data[0],
                                        skip if isinstance(skip, list) else [skip]))
            return False

        engine_hooks.on_queue_emit(self.socketio.server, heard)

    def resend(self) -> int:
        """The queue listener is back after a cut: the current view of every game a room of
        this process shows (people's rooms and bot streams), to this process's members only,
        read from the store after the listener subscribed again, so nothing published while
        it was away stays missing; a read the store fails is tried again until it answers
        (catchup). How many games were sent."""
        sent = catchup.resend_until_answered(sorted(self._shown_games()), self._resend,
                                             lambda game: game in self._shown_games(),
                                             sleep=self.socketio.sleep)
        log.info("queue back: resent %d games to this process's rooms", sent)
        return sent

    def _rooms_here(self) -> set[str]:
        return set(engine_hooks.local_rooms(self.socketio.server)) | set(self._rooms)

    def _shown_games(self) -> set[str]:
        return {name.split(":")[1] for name in self._rooms_here()
                if name.startswith("g:") and name.count(":") == 2}

    def _resend(self, game_id: str) -> bool:
        """One game's view to its rooms here; False when the store has it no more."""
        match = self.table.store.get(game_id)  # raises while the store does not answer
        if match is None:
            return False
        rooms = self._rooms_here()
        for push in self.table.game_pushes(match):
            if push.room in rooms:
                engine_hooks.emit_as_heard(self.socketio.server, push.event, push.body(),
                                           push.room)
        return True

    # --- the bot as a connection --------------------------------------------------------------

    def connection(self, bot: Bot, address: str) -> str:
        """The bot's pseudo-connection sid, registered in Presence on first use."""
        sid = bot_sid(bot.player)
        if self.presence.connection(sid) is None:
            self.presence.connect(sid, bot.player, address)
            conn = self.presence.connection(sid)
            if conn is not None:
                conn.holds_seats, conn.protocol = False, 3
        return sid

    def online(self, player: str) -> bool:
        """Whether that bot has a stream open (in any process, with shared presence)."""
        return player in self._streams or self.presence.seats.online(f"bot:{player}")[ONLINE]

    # --- streams ------------------------------------------------------------------------------

    def _listen_to_the_queue(self) -> None:
        """Start python-socketio's queue listener if no socket has yet (it starts it on the
        first Socket.IO connection; a process serving only bot streams would hear nothing)."""
        if self.shared:
            engine_hooks.start_queue_listener(self.socketio.server)

    def open(self, bot: Bot) -> Stream:
        """A new stream for the bot (closing its old one): hello, then every live game."""
        self._listen_to_the_queue()
        stream = Stream(bot, self._new_queue())
        with self._lock:
            old = self._streams.get(bot.player)
            self._streams[bot.player] = stream
        if old is not None:
            old.queue.put(REPLACED)  # before the drop: its reader sees this line, then ends
            self._drop(old)
        with self._lock:
            self._rooms.setdefault(bot_room(bot.player), set()).add(bot.player)
        self.presence.seats.add(f"bot:{bot.player}", ONLINE, seat_sid(stream))
        # A stream of this bot held by another process closes too (one stream per bot).
        self.emit([Push("replace", bot_room(bot.player), {"keep": stream.id})])
        stream.queue.put({"type": "hello", "bot": bot.name})
        for game_id in self.table.store.live_games(bot.player):
            match = self.table.store.get(game_id)
            if match is not None:
                self.seat(bot.player, match)
        return stream

    def seat(self, player: str, match: Match) -> None:
        """Listen to a game the bot sits in, hold its seat, send it the game's state now."""
        with self._lock:
            stream = self._streams.get(player)
        role = match.role(player)
        if stream is None or role not in SIDES:
            return
        new = match.id not in stream.held
        if new:
            with self._lock:
                stream.held[match.id] = role
                self._rooms.setdefault(room(match.id, role), set()).add(player)
                self._forget_finished(stream)
            before = self.presence.online(match.id)
            self.presence.seats.add(match.id, role, seat_sid(stream))
            if self.presence.online(match.id) != before:  # the people see it come online
                match = self.table.store.get(match.id) or match
                self.emit([p for p in self.table.game_pushes(match)
                           if p.room != room(match.id, role)])
        stream.queue.put({"type": "game", "game": bot_view(self.table.view(match, role))})

    def _forget_finished(self, stream: Stream) -> None:
        """Keep a stream's set of games bounded: the oldest ones stop being heard (lock held)."""
        while len(stream.held) > self.max_finished:
            game_id, role = next(iter(stream.held.items()))
            del stream.held[game_id]
            self._unlisten(stream, game_id, role)

    def _unlisten(self, stream: Stream, game_id: str, role: str) -> None:
        """Stop hearing a game's room and free the stream's seat in it."""
        listeners = self._rooms.get(room(game_id, role))
        if listeners is not None:
            listeners.discard(stream.bot.player)
            if not listeners:
                del self._rooms[room(game_id, role)]
        self.presence.seats.remove(game_id, role, seat_sid(stream))

    def _drop(self, stream: Stream) -> list[str]:
        """Stop listening for a stream and release its leases; the games it held."""
        player = stream.bot.player
        with self._lock:
            stream.closed = True
            if self._streams.get(player) is stream:
                del self._streams[player]
            held = dict(stream.held)
            stream.held.clear()
            for game_id, role in held.items():
                self._unlisten(stream, game_id, role)
            if player not in self._streams:  # not replaced here: its own lines go unheard
                self._rooms.pop(bot_room(player), None)
        self.presence.seats.remove(f"bot:{player}", ONLINE, seat_sid(stream))
        return list(held)

    def close(self, stream: Stream) -> None:
        """A stream ended: its seats go offline, which the people in its games see."""
        changed = self._drop(stream)
        pushes: list[Push] = []
        for game_id in changed:
            match = self.table.store.get(game_id)
            if match is not None and not match.is_over:
                pushes += self.table.game_pushes(match)
        self.emit(pushes)

    def revoke(self, player: str) -> None:
        """End the bot's stream in this process now (its token was revoked)."""
        with self._lock:
            stream = self._streams.get(player)
        if stream is not None:
            stream.queue.put(CLOSE)

    def lines(self, stream: Stream, gone: Callable[[], bool] = lambda: False
              ) -> Iterator[bytes]:
        """The stream's NDJSON lines until it is replaced (its last line says so), revoked,
        or the bot goes away (`gone()`: the client closed its end, checked every second, so a
        bot that exits cleanly is offline at once, not at the next ping)."""
        last_line = checked = renewed = time.monotonic()
        try:
            while True:
                try:
                    item = stream.queue.get(timeout=CHECK_EVERY)
                except self._empty:
                    item = None
                if item is REPLACED:
                    yield (json.dumps(REPLACED) + "\n").encode()
                    return
                if item is CLOSE or stream.closed:
                    return
                now = time.monotonic()
                try:
                    if now - checked >= CHECK_EVERY:  # a token revoked by another process
                        checked = now
                        bot = self.book.by_player(stream.bot.player)
                        if bot is None or bot.revoked or gone():
                            return
                    if now - renewed >= RENEW_EVERY:
                        renewed = now
                        try:
                            self._renew(stream)
                        except StoreUnavailable as error:  # leases outlast a short outage
                            log.warning("seat leases of %s not renewed: %s", stream.bot.name,
                                        error)
                            renewed = now - RENEW_EVERY + CHECK_EVERY  # again in a second
                except StoreUnavailable as error:  # the last line says why (the bot retries)
                    log.warning("bot stream of %s ended: %s", stream.bot.name, error)
                    yield _line(AWAY_LINE)
                    return
                if item is None and now - last_line < PING_EVERY:
                    continue
                if item is None:
                    item = {"type": "ping"}
                last_line = now
                yield _line(item)
        finally:
            try:
                self.close(stream)
            except StoreUnavailable as error:  # its seats' leases expire by themselves
                log.warning("bot stream of %s closed with the store away: %s",
                            stream.bot.name, error)

    def _renew(self, stream: Stream) -> None:
        """Renew the stream's seat leases (Redis presence expires them otherwise)."""
        sid = seat_sid(stream)
        self.presence.seats.renew([(g, r, sid) for g, r in list(stream.held.items())]
                                  + [(f"bot:{stream.bot.player}", ONLINE, sid)])

    # --- delivery -----------------------------------------------------------------------------

    def hears(self, room_name: str) -> bool:
        """Whether a bot stream listens to that room."""
        return room_name in self._rooms

    def emit(self, pushes: list[Push], sender: str | None = None) -> None:
        self.publisher.publish(pushes, sender)

    def deliver(self, push: Push, body: dict[str, Any], skip: str | None) -> None:
        """A push to its room: to the bots listening there, then to the people.

        On a message queue the emit goes through the queue, and each process's hub hears
        it there (`_hear_the_queue`), this one included."""
        if self.shared:
            self.socketio.emit(push.event, body, to=push.room, skip_sid=skip)
            return
        listeners = self._rooms.get(push.room)
        if listeners:
            self._to_bots(push, body, list(listeners))
        if not self._split(push, body, [skip]):
            self.socketio.emit(push.event, body, to=push.room, skip_sid=skip)

    def _split(self, push: Push, body: dict[str, Any], skip: list) -> bool:
        """Emit a game with a bot in it to this process's members of the room, each in its
        protocol's form; False (nothing sent) when there is no bot in it or no version 3
        member here, so the caller emits it as it is."""
        game = body.get("game") if isinstance(body.get("game"), dict) else body
        if not game.get("bot_seats"):
            return False
        server = self.socketio.server
        members = engine_hooks.room_members(server, push.room)
        newer = [sid for sid in members
                 if getattr(self.presence.connection(sid), "protocol", 2) >= 3]
        if not newer:
            return False
        older = [sid for sid in members if sid not in newer]
        if older:
            engine_hooks.emit_here(server, push.event, body, push.room, [*skip, *newer])
        v3 = v3_names(body) if "bot_seats" in body else v3_answer(body)
        engine_hooks.emit_here(server, push.event, v3, push.room, [*skip, *older])
        return True

    def _to_bots(self, push: Push, body: dict[str, Any], players: list[str]) -> None:
        for player in players:
            with self._lock:
                stream = self._streams.get(player)
            if stream is None:
                continue
            if push.event == "game":
                stream.queue.put({"type": "game", "game": bot_view(body)})
            elif push.event == "rematch":
                game = body.get("game") or {}
                if game.get("you") in SIDES:
                    fresh = self.table.store.get(game["id"])
                    if fresh is not None:
                        self.seat(player, fresh)
            elif push.event == "reaction":
                stream.queue.put({"type": "reaction", **body})
            elif push.event == "seat":  # the bot took a seat, maybe through another process
                match = self.table.store.get(body.get("game", ""))
                if match is not None:
                    self.seat(player, match)
            elif push.event == "replace" and body.get("keep") != stream.id:
                stream.queue.put(REPLACED)
            elif push.event == "challenge":
                stream.queue.put({"type": "challenge", **body})
