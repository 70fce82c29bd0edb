"""Who is connected to which seat of which game.

Connections (and their rate-limit buckets) are this process's own. Whether a
seat is online is shared: in memory for one process, in Redis when several
processes serve the same games. In Redis each connection holds a lease on its
seat (a sorted-set member scored with the lease's expiry), renewed while it
lives and set to "now" when it leaves, so a crashed process's connections
fall offline by themselves and the highest score is always the last sighting.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import redis

from ttt.match import Match
from ttt.store.redis import unavailable_on_redis_errors

LEASE_SECONDS = 30.0


@dataclass
class Connection:
    """One Socket.IO connection: its player, and the game and seats it shows."""

    player: str
    game: str | None = None
    seats: tuple[str, ...] = ()
    tokens: float = 0.0
    refilled: float = field(default_factory=time.monotonic)


def seats_of(match: Match, player: str) -> tuple[str, ...]:
    """The sides a player sits at in a match (both in pass-and-play)."""
    role = match.role(player)
    return ("X", "O") if role == "both" else (role,) if role in ("X", "O") else ()


class MemorySeats:
    """Seat connections in this process."""

    def __init__(self, clock=time.time) -> None:
        self._clock = clock
        self._held: dict[tuple[str, str], set[str]] = {}
        self._left: dict[tuple[str, str], float] = {}

    def add(self, game: str, mark: str, sid: str) -> None:
        self._held.setdefault((game, mark), set()).add(sid)

    def remove(self, game: str, mark: str, sid: str) -> None:
        holders = self._held.get((game, mark), set())
        holders.discard(sid)
        if not holders:
            self._held.pop((game, mark), None)
            self._left[(game, mark)] = self._clock()

    def online(self, game: str) -> dict[str, bool]:
        return {mark: bool(self._held.get((game, mark))) for mark in ("X", "O")}

    def last_seen(self, game: str, mark: str) -> float | None:
        return self._left.get((game, mark))

    def renew(self, held: list[tuple[str, str, str]]) -> None:
        """Nothing to renew: a process's memory dies with its connections."""


class RedisSeats:
    """Seat leases in Redis, shared by every process."""

    def __init__(self, url: str, clock=time.time) -> None:
        self._redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                           socket_connect_timeout=2)
        self._clock = clock

    @staticmethod
    def _key(game: str, mark: str) -> str:
        return f"ttt:seen:{game}:{mark}"

    @unavailable_on_redis_errors
    def _set(self, entries: list[tuple[str, str, str]], score: float) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for game, mark, sid in entries:
            pipe.zadd(self._key(game, mark), {sid: score})
            pipe.expire(self._key(game, mark), 24 * 3600)
        pipe.execute()

    def add(self, game: str, mark: str, sid: str) -> None:
        self._set([(game, mark, sid)], self._clock() + LEASE_SECONDS)

    def remove(self, game: str, mark: str, sid: str) -> None:
        self._set([(game, mark, sid)], self._clock())

    @unavailable_on_redis_errors
    def online(self, game: str) -> dict[str, bool]:
        now = self._clock()
        pipe = self._redis.pipeline(transaction=False)
        for mark in ("X", "O"):
            pipe.zcount(self._key(game, mark), f"({now}", "+inf")
        x, o = pipe.execute()
        return {"X": x > 0, "O": o > 0}

    @unavailable_on_redis_errors
    def last_seen(self, game: str, mark: str) -> float | None:
        top = self._redis.zrevrange(self._key(game, mark), 0, 0, withscores=True)
        return min(top[0][1], self._clock()) if top else None

    def renew(self, held: list[tuple[str, str, str]]) -> None:
        if held:
            self._set(held, self._clock() + LEASE_SECONDS)


class Presence:
    """This process's connections, and the (possibly shared) seat tracker."""

    def __init__(self, seats: MemorySeats | RedisSeats | None = None, clock=time.time) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._started = clock()
        self._conns: dict[str, Connection] = {}
        self.seats = seats or MemorySeats(clock)

    def connect(self, sid: str, player: str, burst: float) -> None:
        """Register a new connection."""
        with self._lock:
            self._conns[sid] = Connection(player, tokens=burst)

    def connection(self, sid: str) -> Connection | None:
        """The connection of a sid."""
        return self._conns.get(sid)

    def attach(self, sid: str, match: Match) -> list[str]:
        """Show `match` on this connection; the game ids whose online flags changed."""
        with self._lock:
            conn = self._conns.get(sid)
            if conn is None:
                return []
            changed = self._leave(sid, conn)
            before = self.seats.online(match.id)
            conn.game, conn.seats = match.id, seats_of(match, conn.player)
            for mark in conn.seats:
                self.seats.add(match.id, mark, sid)
            if self.seats.online(match.id) != before:
                changed.append(match.id)
            return sorted(set(changed))

    def disconnect(self, sid: str) -> list[str]:
        """Forget a connection; the game ids whose online flags changed."""
        with self._lock:
            conn = self._conns.pop(sid, None)
            return self._leave(sid, conn) if conn else []

    def _leave(self, sid: str, conn: Connection) -> list[str]:
        if not conn.game or not conn.seats:
            conn.game, conn.seats = None, ()
            return []
        game = conn.game
        before = self.seats.online(game)
        for mark in conn.seats:
            self.seats.remove(game, mark, sid)
        conn.game, conn.seats = None, ()
        return [game] if self.seats.online(game) != before else []

    def online(self, game_id: str) -> dict[str, bool]:
        """Whether each side of a game has a live connection."""
        return self.seats.online(game_id)

    def away_for(self, game_id: str, mark: str) -> float:
        """Seconds since that seat last had a connection (since start if never seen)."""
        if self.seats.online(game_id)[mark]:
            return 0.0
        seen = self.seats.last_seen(game_id, mark)
        return self._clock() - (seen if seen is not None else self._started)

    def renew(self) -> None:
        """Renew the leases of this process's seated connections."""
        with self._lock:
            held = [(c.game, mark, sid) for sid, c in self._conns.items() if c.game
                    for mark in c.seats]
        self.seats.renew(held)  # type: ignore[arg-type]

    def take_token(self, sid: str, rate: float) -> bool:
        """Whether the connection may send one more event (token bucket, burst 2×rate)."""
        if rate <= 0:
            return True
        conn = self._conns.get(sid)
        if conn is None:
            return True
        now = time.monotonic()
        with self._lock:
            conn.tokens = min(2 * rate, conn.tokens + (now - conn.refilled) * rate)
            conn.refilled = now
            if conn.tokens < 1:
                return False
            conn.tokens -= 1
            return True
