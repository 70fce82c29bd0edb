"""A Redis message queue that sends each push only to the processes holding its room.

python-socketio's `RedisManager` publishes every emit on one channel that every process
reads, decodes and mostly drops: with N processes each does N times the work it needs.
`RoomQueue` (socket.io's Redis adapter in its sharded, dynamic mode, in python) publishes an
emit to a room on that room's own channel, and subscribes a process to a room's channel while
it holds at least one member of the room, unsubscribing when the last one leaves. A sid is a
room too (python-socketio puts every connection in a room named by its sid): a push to a sid
of this process never leaves it; to a sid elsewhere, it goes on that sid's channel, which only
its process hears. The broadcast channel stays for what goes everywhere: emits without a room
(or to a list of rooms, or wanting an answer), disconnect, enter/leave for a sid elsewhere,
close_room and answers to callbacks.

Redis 7's sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`) carries the room channels where the
server has it (a cluster then sends a channel's messages only within its shard), plain
channels otherwise. A room message starts with the sender's host id, so a process skips its
own echo without decoding it. The listener's loop (engine_hooks.on_queue_recovered) calls
`listen_connect`, which subscribes every room held now: after an outage every room is back.
"""

from __future__ import annotations

import threading
import types
from collections import Counter
from typing import Any

from socketio import RedisManager


class RoomQueue(RedisManager):
    """python-socketio's Redis manager, with a channel per room for the pushes to a room."""

    name = "redis-rooms"

    def __init__(self, url: str, channel: str = "flask-socketio",
                 sharded: bool | None = None, **kwargs: Any) -> None:
        super().__init__(url, channel=channel, **kwargs)
        self.sharded = sharded  # None: found out at the first connection (Redis >= 7)
        self.rooms_lock = threading.RLock()  # gevent's when gevent patched threading first
        self.held: set[str] = set()         # the room channels this process listens to
        self.kept: set[str] = set()         # those held by `hold`, member or none
        self.heard: Counter = Counter()     # messages from Redis: broadcast, room, echo
        self.closed = False
        self._prefix = self.host_id.encode()
        self._broadcast = self.channel.encode()

    def room_channel(self, namespace: str, room: str) -> str:
        """The channel of one room of one namespace."""
        return f"{self.channel}#{namespace}#{room}"

    # --- connections ---------------------------------------------------------------------------

    def _redis_connect(self) -> None:
        """The publishing client; the listener's pubsub is `listen_connect`'s alone (python-
        socketio's would replace it each time a publish reconnects)."""
        with self.rooms_lock:  # never between listen_connect's pubsub and its subscribe
            pubsub = self.pubsub
            super()._redis_connect()
            self.pubsub = pubsub
            if self.sharded is None:
                try:  # every process must agree, so never a guess: no answer, no connection
                    self.sharded = _has_sharded_pubsub(self.redis)
                except Exception:
                    self.connected = False
                    raise

    def listen_connect(self) -> None:
        """Connect the listener and subscribe the broadcast channel and every room held now."""
        self._redis_connect()
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        reconnected = pubsub.on_connect

        def on_connect(pubsub: Any, connection: Any) -> None:
            """redis-py's own reconnection re-subscribes what it knows: a room whose
            subscribe failed meanwhile it does not, so every held room goes again."""
            reconnected(connection)
            with self.rooms_lock:
                if self.held and self.pubsub is pubsub:
                    self._subscribe(pubsub, *self.held)

        # A bound method (redis-py keeps a weak one), registered by the first command below.
        pubsub.on_connect = types.MethodType(on_connect, pubsub)
        with self.rooms_lock:  # no room may come or go between the copy and the subscribe
            self.pubsub = pubsub
            pubsub.subscribe(self.channel)
            if self.held:
                self._subscribe(pubsub, *self.held)

    def _subscribe(self, pubsub: Any, *channels: str) -> None:
        (pubsub.ssubscribe if self.sharded else pubsub.subscribe)(*channels)

    def _unsubscribe(self, pubsub: Any, *channels: str) -> None:
        (pubsub.sunsubscribe if self.sharded else pubsub.unsubscribe)(*channels)

    def _redis_listen_with_retries(self) -> Any:
        """python-socketio's loop, subscribing through `listen_connect` (engine_hooks replaces
        it with its capped, watched one when the app starts)."""
        while not self.closed:
            try:
                self.listen_connect()
                yield from self.pubsub.listen()
            except Exception as error:
                if not self.closed:
                    self._get_logger().error("Cannot receive from redis: %s", error)
                    self.server.sleep(1)

    def close(self) -> None:
        """Stop listening once the connection next drops (python-socketio logs the end)."""
        self.closed = True

    def _listen(self) -> Any:
        for message in self._redis_listen_with_retries():
            if message.get("type") not in ("message", "smessage") or "data" not in message:
                continue
            data = message["data"]
            if message["channel"] == self._broadcast:
                self.heard["broadcast"] += 1
                yield data
            elif data.startswith(self._prefix):
                self.heard["echo"] += 1  # our own push, already handled here
            else:
                self.heard["room"] += 1
                yield data[len(self._prefix):]  # after the sender's host id

    # --- rooms held here -----------------------------------------------------------------------

    def basic_enter_room(self, sid: str, namespace: str, room: Any,
                         eio_sid: str | None = None) -> None:
        with self.rooms_lock:
            super().basic_enter_room(sid, namespace, room, eio_sid=eio_sid)
            if isinstance(room, str):
                self._follow(self.room_channel(namespace, room), True)

    def basic_leave_room(self, sid: str, namespace: str, room: Any) -> None:
        with self.rooms_lock:
            super().basic_leave_room(sid, namespace, room)
            if isinstance(room, str):
                self._drop(namespace, room)

    def hold(self, room: str, held: bool, namespace: str = "/") -> None:
        """Listen to a room with no Socket.IO member here (a bot stream's), or stop."""
        channel = self.room_channel(namespace, room)
        with self.rooms_lock:
            (self.kept.add if held else self.kept.discard)(channel)
            if held:
                self._follow(channel, True)
            else:
                self._drop(namespace, room)

    def _drop(self, namespace: str, room: str) -> None:
        channel = self.room_channel(namespace, room)
        if room not in self.rooms.get(namespace, {}) and channel not in self.kept:
            self._follow(channel, False)

    def _follow(self, channel: str, held: bool) -> None:
        """(Un)subscribe one room's channel as its first member comes or its last one goes.
        With the listener cut, only the set changes: `listen_connect` subscribes it."""
        if (channel in self.held) == held:
            return
        (self.held.add if held else self.held.discard)(channel)
        pubsub = self.pubsub
        if pubsub is None or pubsub.connection is None:
            return
        try:
            (self._subscribe if held else self._unsubscribe)(pubsub, channel)
        except Exception as error:  # the listener is cut: it re-subscribes when back
            self._get_logger().warning("room channel %s not (un)subscribed: %s", channel, error)

    # --- publishing ----------------------------------------------------------------------------

    def _publish(self, data: Any) -> Any:
        room, namespace = data.get("room"), data.get("namespace") or "/"
        if (data.get("method") != "emit" or not isinstance(room, str)
                or data.get("callback") is not None):
            return super()._publish(data)  # everywhere: the broadcast channel
        if self.is_sid_room(namespace, room):
            return None  # a connection of this process: already handled here, nowhere else
        payload = self.host_id + self.json.dumps(data)
        return self._send(self.room_channel(namespace, room), payload)

    def _send(self, channel: str, payload: str) -> Any:
        for retries_left in (1, 0):
            try:
                if not self.connected or self.sharded is None:  # the listener may be
                    self._redis_connect()  # between its connection and asking the version
                send = self.redis.spublish if self.sharded else self.redis.publish
                return send(channel, payload)
            except Exception as error:
                self.connected = False
                if not retries_left:
                    self._get_logger().error("Cannot publish to redis: %s", error)
        return None


class HeldRooms(dict):
    """A {room: listeners} map whose rooms the room queue listens to while they are in it
    (the bot hub's: a bot's stream is no Socket.IO member of the rooms it follows)."""

    def __init__(self, manager: RoomQueue) -> None:
        super().__init__()
        self.manager = manager

    def setdefault(self, room: str, default: Any = None) -> Any:
        if room not in self:
            self.manager.hold(room, True)
        return super().setdefault(room, default)

    def __setitem__(self, room: str, listeners: Any) -> None:
        if room not in self:
            self.manager.hold(room, True)
        super().__setitem__(room, listeners)

    def __delitem__(self, room: str) -> None:
        super().__delitem__(room)
        self.manager.hold(room, False)

    def pop(self, room: str, *default: Any) -> Any:
        if room in self:
            value = super().pop(room)
            self.manager.hold(room, False)
            return value
        return super().pop(room, *default)


def held_rooms(manager: Any) -> dict:
    """A map of rooms to listeners that this process's queue delivers pushes for: with the
    room queue, the rooms in it are listened to; with another manager, a plain dict."""
    return HeldRooms(manager) if isinstance(manager, RoomQueue) else {}


def _has_sharded_pubsub(client: Any) -> bool:
    """Whether this Redis has SPUBLISH/SSUBSCRIBE (7.0 and later)."""
    version = str(client.info("server").get("redis_version", "0"))
    return int(version.split(".", 1)[0]) >= 7


def count_heard(manager: Any, registry: Any) -> None:
    """Serve `ttt_queue_messages_received_total{channel}` from `registry` (the room queue's
    only: python-socketio's own manager counts nothing)."""
    if isinstance(manager, RoomQueue):
        registry.register(heard_metric(manager))


def heard_metric(manager: Any) -> Any:
    """A Prometheus collector of `ttt_queue_messages_received_total{channel}`: what this
    process's listener took from Redis (broadcast, room, and its own room pushes, echo)."""
    from prometheus_client.core import CounterMetricFamily
    from prometheus_client.registry import Collector

    class Heard(Collector):
        def describe(self) -> list[Any]:
            return []

        def collect(self) -> Any:
            family = CounterMetricFamily(
                "ttt_queue_messages_received", "Messages this process's queue listener "
                "received from Redis, by channel (broadcast, room, echo: its own).",
                labels=["channel"])
            for channel in ("broadcast", "room", "echo"):
                family.add_metric([channel], manager.heard[channel])
            yield family

    return Heard()


def queue_manager(url: str | None, by_room: bool) -> dict[str, Any]:
    """SocketIO's queue options: python-socketio's RedisManager (every push to every process),
    or with `by_room` a Redis queue sending a push only where its room is (RoomQueue)."""
    if not url or not by_room or not url.startswith(("redis://", "rediss://", "unix://")):
        return {"message_queue": url}
    return {"message_queue": url, "client_manager": RoomQueue(url)}
