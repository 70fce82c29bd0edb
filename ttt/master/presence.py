"""Who is connected to which seat of which game, and who is watching.

Connections are this process's own; how many each player and each address hold, and
the event rate of each player, are counted by the limiter (ttt/master/limits.py: in Redis when
several processes serve). Whether a seat is online, and how many watch a
game, is shared: in memory for one process, in Redis when several processes
serve the same games. In Redis each connection holds a lease on its seat (a
sorted-set member scored with the lease's expiry), renewed while it lives and
set to "now" when it leaves, so a crashed process's connections fall offline by
themselves and the highest score is always the last sighting.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from ttt.game.match import Match
from ttt.master import riding
from ttt.master.limits import Limiter, MemoryLimiter
from ttt.master.riding import Join, Leave
from ttt.store.redis import unavailable_on_redis_errors

LEASE_SECONDS = 30.0
WATCH = "watch"          # the "seat" that spectators hold
FORGET_AFTER = 600.0     # a departure older than this is as good as "long ago"
# A game's presence read in the round trip of its write (RedisSeats.ride) is what the views
# of that event read: good this long, and only until this process changes the game's seats.
RIDDEN_FOR = 0.25


@dataclass
class Connection:
    """One Socket.IO connection: its player, and the game and seats it shows."""

    player: str
    address: str = ""
    origin: str | None = None   # the address's keyed hash: its connection slot
    game: str | None = None
    role: str | None = None
    seats: tuple[str, ...] = ()
    protocol: int = 2           # the client's declared protocol version (connect auth)
    holds_seats: bool = True    # False for a bot's calls: its stream holds its seats



def seats_of(match: Match, player: str) -> tuple[str, ...]:
    """The leases a player's connection holds in a match: its sides, or the watchers' one."""
    role = match.role(player)
    return ("X", "O") if role == "both" else (role,) if role in ("X", "O") else (WATCH,)


Snapshots = tuple[tuple[dict[str, bool], int], tuple[dict[str, bool], int]]  # before, after


def _present(answers) -> tuple[dict[str, bool], int]:
    """`present` from the next three ZCOUNTs (X, O, watchers) of a pipeline's answers."""
    x, o, watchers = next(answers), next(answers), next(answers)
    return {"X": x > 0, "O": o > 0}, watchers


def _shift(seats: MemorySeats, sid: str, leave: Leave | None,
           join: Join | None) -> list[Snapshots | None]:
    found: list[Snapshots | None] = []
    if leave and leave[1]:
        before = seats.present(leave[0])
        for mark in leave[1]:
            seats.remove(leave[0], mark, sid, leave[2])
        found.append((before, seats.present(leave[0])))
    else:
        found.append(None)
    if join and join[1]:
        before = seats.present(join[0])
        for mark in join[1]:
            seats.add(join[0], mark, sid)
        found.append((before, seats.present(join[0])))
    else:
        found.append(None)
    return found



class MemorySeats:
    """Seat connections in this process."""

    def __init__(self, clock=time.time) -> None:
        self._clock = clock
        self._held: dict[tuple[str, str], set[str]] = {}
        self._left: dict[tuple[str, str], float] = {}

    def add(self, game: str, mark: str, sid: str) -> None:
        self._held.setdefault((game, mark), set()).add(sid)

    def remove(self, game: str, mark: str, sid: str, grace: float = 0.0) -> None:
        """`sid` leaves the seat; with `grace`, the seat reads online that much longer (its
        departure is dated then: a blip is no departure)."""
        holders = self._held.get((game, mark), set())
        holders.discard(sid)
        if not holders:
            self._held.pop((game, mark), None)
            if mark != WATCH:
                self._left[(game, mark)] = self._clock() + grace

    def _staying(self, key: tuple[str, str]) -> bool:
        """Whether a seat left so recently that it still counts as here (a blip)."""
        left = self._left.get(key)
        return left is not None and left > self._clock()

    def online(self, game: str) -> dict[str, bool]:
        return {mark: bool(self._held.get((game, mark))) or self._staying((game, mark))
                for mark in ("X", "O")}

    def watchers(self, game: str) -> int:
        return len(self._held.get((game, WATCH), ()))

    def present(self, game: str) -> tuple[dict[str, bool], int]:
        """`online` and `watchers` together (what a view reads), in one go."""
        held = self._held
        return ({"X": bool(held.get((game, "X"))) or self._staying((game, "X")),
                 "O": bool(held.get((game, "O"))) or self._staying((game, "O"))},
                len(held.get((game, WATCH), ())))

    def last_seen(self, game: str, mark: str) -> float | None:
        left = self._left.get((game, mark))
        return None if left is None else min(left, self._clock())

    def shift(self, sid: str, leave: Leave | None, join: Join | None) -> list[Snapshots | None]:
        """`sid` leaves the seats `leave` names (game, marks, grace) and takes those of `join`
        (game, marks); each game's `present` before and after its part (None: no part)."""
        return _shift(self, sid, leave, join)

    def renew(self, held: list[tuple[str, str, str]]) -> None:
        """Nothing to renew (a process's memory dies with its connections); forget old news."""
        horizon = self._clock() - FORGET_AFTER
        for key in [k for k, t in self._left.items() if t < horizon]:
            del self._left[key]


class RedisSeats:
    """Seat leases in Redis, shared by every process."""

    def __init__(self, url: str, clock=time.time) -> None:
        self._redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                           socket_connect_timeout=2)
        self._clock = clock
        # game -> (present, read at by the clock, good until by time.monotonic): `ride`'s.
        self._ridden: dict[str, tuple[tuple[dict[str, bool], int], float, float]] = {}
        with contextlib.suppress(redis.ConnectionError, redis.TimeoutError):
            self._redis.ping()  # connected now: no event pays the handshake

    @staticmethod
    def _key(game: str, mark: str) -> str:
        return f"ttt:seen:{game}:{mark}"

    def ride(self, game: str) -> tuple[list[tuple], Callable[[list], None]]:
        """The reads of `present` to send in the round trip of a write of `game` (the Redis
        store's `riders`), and what keeps their answers for `present` to give the event's
        views (else a move is its write and one presence read per view)."""
        now = self._clock()
        commands = [("ZCOUNT", self._key(game, mark), f"({now}", "+inf")
                    for mark in ("X", "O", WATCH)]

        def took(counts: list) -> None:
            if len(self._ridden) > 1024:
                self._ridden.clear()
            self._ridden[game] = (({"X": counts[0] > 0, "O": counts[1] > 0}, counts[2]), now,
                                  time.monotonic() + RIDDEN_FOR)

        return commands, took

    def _ridden_present(self, game: str) -> tuple[dict[str, bool], int] | None:
        ridden = self._ridden.get(game)
        if ridden is None:
            return None
        (online, watchers), at, until = ridden
        if until < time.monotonic() or not 0 <= self._clock() - at <= RIDDEN_FOR:
            self._ridden.pop(game, None)  # (a test's clock moved on counts too)
            return None
        return dict(online), watchers

    @unavailable_on_redis_errors
    def _set(self, entries: list[tuple[str, str, str]], score: float,
             leaving: bool = False) -> None:
        for game, _, _ in entries:
            self._ridden.pop(game, None)  # a change here: read it again
        pipe = self._redis.pipeline(transaction=False)
        for game, mark, sid in entries:
            if mark == WATCH and leaving:
                pipe.zrem(self._key(game, mark), sid)  # a departed watcher is no news
            else:
                pipe.zadd(self._key(game, mark), {sid: score})
            pipe.expire(self._key(game, mark), 24 * 3600)
        pipe.execute()
        for game, _, _ in entries:
            self._ridden.pop(game, None)

    def add(self, game: str, mark: str, sid: str) -> None:
        self._set([(game, mark, sid)], self._clock() + LEASE_SECONDS)

    def remove(self, game: str, mark: str, sid: str, grace: float = 0.0) -> None:
        """The lease ends now, or `grace` seconds from now (a blip is no departure)."""
        self._set([(game, mark, sid)], self._clock() + grace, leaving=True)

    @unavailable_on_redis_errors
    def online(self, game: str) -> dict[str, bool]:
        ridden = self._ridden_present(game)
        if ridden is not None:
            return ridden[0]
        now = self._clock()
        pipe = self._redis.pipeline(transaction=False)
        for mark in ("X", "O"):
            pipe.zcount(self._key(game, mark), f"({now}", "+inf")
        x, o = pipe.execute()
        return {"X": x > 0, "O": o > 0}

    @unavailable_on_redis_errors
    def watchers(self, game: str) -> int:
        ridden = self._ridden_present(game)
        if ridden is not None:
            return ridden[1]
        return self._redis.zcount(self._key(game, WATCH), f"({self._clock()}", "+inf")

    @unavailable_on_redis_errors
    def present(self, game: str) -> tuple[dict[str, bool], int]:
        """`online` and `watchers` in one round trip: the same three ZCOUNTs, one pipeline
        (two round trips a view otherwise, and an event builds two or three);
        none when the event's write brought them (`ride`)."""
        ridden = self._ridden_present(game)
        if ridden is not None:
            return ridden
        now = self._clock()
        pipe = self._redis.pipeline(transaction=False)
        for mark in ("X", "O", WATCH):
            pipe.zcount(self._key(game, mark), f"({now}", "+inf")
        x, o, watchers = pipe.execute()
        return {"X": x > 0, "O": o > 0}, watchers

    @unavailable_on_redis_errors
    def last_seen(self, game: str, mark: str) -> float | None:
        top = self._redis.zrevrange(self._key(game, mark), 0, 0, withscores=True)
        return min(top[0][1], self._clock()) if top else None

    def plan(self, sid: str, join: Join, was: tuple) -> riding.Planned:
        """`shift`'s commands, to ride the write that makes the game joined (riding.py)."""
        return riding.plan(self, sid, join, was, _present, LEASE_SECONDS, WATCH, RIDDEN_FOR)

    @unavailable_on_redis_errors
    def shift(self, sid: str, leave: Leave | None, join: Join | None) -> list[Snapshots | None]:
        """As MemorySeats.shift, in one round trip: the reads and writes of both parts in one
        pipeline (no read decides a write); the last reads kept for the views (`ride`)."""
        now = self._clock()
        pipe = self._redis.pipeline(transaction=False)
        parts = [(leave[0], leave[1], now + leave[2], True) if leave and leave[1] else None,
                 (join[0], join[1], now + LEASE_SECONDS, False) if join and join[1] else None]
        for part in parts:
            if part is None:
                continue
            game, marks, score, leaving = part
            self._ridden.pop(game, None)
            for _ in range(2):  # before, the seats, after
                for mark in ("X", "O", WATCH):
                    pipe.zcount(self._key(game, mark), f"({now}", "+inf")
                if _ == 0:
                    for mark in marks:
                        if mark == WATCH and leaving:
                            pipe.zrem(self._key(game, mark), sid)
                        else:
                            pipe.zadd(self._key(game, mark), {sid: score})
                        pipe.expire(self._key(game, mark), 24 * 3600)
        answers = iter(pipe.execute())
        found: list[Snapshots | None] = []
        for part in parts:
            if part is None:
                found.append(None)
                continue
            before = _present(answers)
            for _ in range(2 * len(part[1])):
                next(answers)
            after = _present(answers)
            self._ridden[part[0]] = (after, now, time.monotonic() + RIDDEN_FOR)
            found.append((before, after))
        return found

    def renew(self, held: list[tuple[str, str, str]]) -> None:
        if held:
            self._set(held, self._clock() + LEASE_SECONDS)


def _changes(leave: Leave | None, left: Snapshots | None) -> dict[str, bool]:
    """The game left, if its presence or watchers changed, with whether its seats' did."""
    if leave is None or left is None or left[1] == left[0]:
        return {}
    return {leave[0]: left[1][0] != left[0][0]}


class Presence:
    """This process's connections, and the (possibly shared) seat tracker."""

    def __init__(self, seats: MemorySeats | RedisSeats | None = None, clock=time.time,
                 max_connections: int = 8, per_address: int = 200,
                 limiter: Limiter | None = None, blip: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._conns: dict[str, Connection] = {}
        self.max_connections = max_connections
        self.per_address = per_address
        self.limiter = limiter or MemoryLimiter(clock)
        self.started = clock()  # absence is never counted from before this process saw it
        self.seats = seats or MemorySeats(clock)
        # A connection lost for less than `blip` seconds is no departure (PROTOCOL v5): its
        # seats read online that long, and the departure is told (`due`) only after it.
        self.blip = blip
        self._due: dict[tuple[str, str], float] = {}  # (game, seat) -> when to tell its absence

    def connect(self, sid: str, player: str, address: str = "",
                origin: str | None = None) -> bool:
        """Register a new connection; False when its player or its address holds too many.

        `origin` is the address's keyed hash (the key its slots are counted under).
        """
        if not self.limiter.acquire(f"conn:p:{player}", sid, self.max_connections):
            return False
        if origin and not self.limiter.acquire(f"conn:a:{origin}", sid, self.per_address):
            self.limiter.release(f"conn:p:{player}", sid)
            return False
        with self._lock:
            self._conns[sid] = Connection(player, address, origin)
        return True

    def connections_of(self, origin: str) -> int:
        """How many connections an address (by its keyed hash) holds, in all processes."""
        return self.limiter.held(f"conn:a:{origin}")

    def _slots(self, sid: str, conn: Connection) -> list[tuple[str, str]]:
        return [(f"conn:p:{conn.player}", sid),
                *([(f"conn:a:{conn.origin}", sid)] if conn.origin else [])]

    def connection(self, sid: str) -> Connection | None:
        """The connection of a sid."""
        return self._conns.get(sid)

    def plan(self, sid: str, match: Match) -> riding.Planned | None:
        """The lease change showing `match` makes, for the write making it to carry (Redis only);
        `attach` takes it if the connection is as it was (no lock: a race shifts again)."""
        conn = self._conns.get(sid)
        if conn is None or not isinstance(self.seats, RedisSeats):
            return None
        was = (conn.game, conn.role, conn.seats)
        seats = seats_of(match, conn.player) if conn.holds_seats else ()
        return self.seats.plan(sid, (match.id, seats), was)

    def attach(self, sid: str, match: Match, planned: riding.Planned | None = None
               ) -> dict[str, bool]:
        """Show `match` on this connection; the games whose presence or watchers changed,
        each with whether its seats' presence did (False: only the number of watchers).

        Showing again the game and seats the connection already shows changes nothing
        (else a spectator re-joining its game drops and re-adds its lease, and each
        time every player and spectator is sent the whole game)."""
        with self._lock:
            conn = self._conns.get(sid)
            if conn is None:
                return {}
            role = match.role(conn.player)
            seats = seats_of(match, conn.player) if conn.holds_seats else ()
            if conn.game == match.id and conn.role == role and conn.seats == seats:
                return {}
            leave = (conn.game, conn.seats, 0.0) if conn.game else None
            if (planned is not None and planned.found is not None and planned.join
                    == (match.id, seats) and planned.was == (conn.game, conn.role, conn.seats)):
                left, joined = planned.found  # the write that made the game changed them
            else:
                left, joined = self.seats.shift(sid, leave, (match.id, seats))
            conn.game, conn.role, conn.seats = match.id, role, seats
            changed = _changes(leave, left)
            if joined is not None and joined[1] != joined[0]:
                changed[match.id] = changed.get(match.id, False) or joined[1][0] != joined[0][0]
            return dict(sorted(changed.items()))

    def disconnect(self, sid: str) -> dict[str, bool]:
        """Forget a connection; the games whose presence or watchers changed (as `attach`)."""
        with self._lock:
            conn = self._conns.pop(sid, None)
            if conn is None:
                return {}
            for key, holder in self._slots(sid, conn):
                self.limiter.release(key, holder)
            if self.blip > 0 and conn.game:
                told = self._clock() + self.blip
                for mark in conn.seats:
                    if mark != WATCH:
                        self._due[(conn.game, mark)] = told
            return self._leave(sid, conn, self.blip)

    def due(self) -> list[str]:
        """The games with a seat whose blip ran out still empty: their absence is news now."""
        now = self._clock()
        with self._lock:
            ripe = [key for key, told in self._due.items() if told <= now]
            for key in ripe:
                del self._due[key]
        games = {game for game, _ in ripe}
        return sorted(game for game in games
                      if not all(self.seats.online(game)[mark] for g, mark in ripe if g == game))

    def _leave(self, sid: str, conn: Connection, grace: float = 0.0) -> dict[str, bool]:
        leave = (conn.game, conn.seats, grace) if conn.game else None
        left = self.seats.shift(sid, leave, None)[0] if leave and conn.seats else None
        conn.game, conn.role, conn.seats = None, None, ()
        return _changes(leave, left)

    def online(self, game_id: str) -> dict[str, bool]:
        """Whether each side of a game has a live connection."""
        return self.seats.online(game_id)

    def watchers(self, game_id: str) -> int:
        """How many spectators are connected to a game."""
        return self.seats.watchers(game_id)

    def present(self, game_id: str) -> tuple[dict[str, bool], int]:
        """`online` and `watchers` of a game, read together (one round trip with Redis)."""
        return self.seats.present(game_id)

    def last_seen(self, game_id: str, mark: str) -> float | None:
        """When that seat last had a connection, if in recent memory."""
        return self.seats.last_seen(game_id, mark)

    def renew(self) -> None:
        """Renew the leases of this process's connections."""
        with self._lock:
            held = [(c.game, mark, sid) for sid, c in self._conns.items() if c.game
                    for mark in c.seats]
            slots = [slot for sid, c in self._conns.items() for slot in self._slots(sid, c)]
        self.seats.renew(held)  # type: ignore[arg-type]
        self.limiter.renew(slots)

    def take_token(self, sid: str, rate: float) -> bool:
        """Whether the connection's player may send one more event (burst 2×rate), counted
        across all its connections (and processes, on Redis)."""
        if rate <= 0:
            return True
        conn = self._conns.get(sid)
        if conn is None:
            return True
        return self.limiter.take(f"events:{conn.player}", rate, 2 * rate)
