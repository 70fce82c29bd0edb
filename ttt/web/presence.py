"""Who is connected to which seat of which game, in this process."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ttt.match import Match


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


class Presence:
    """Connections by sid, and since when each seat has been without one."""

    def __init__(self, clock=time.time) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._started = clock()
        self._conns: dict[str, Connection] = {}
        self._seated: dict[tuple[str, str], set[str]] = {}
        self._away_since: dict[tuple[str, str], float] = {}

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
            conn.game, conn.seats = match.id, seats_of(match, conn.player)
            for mark in conn.seats:
                holders = self._seated.setdefault((match.id, mark), set())
                if not holders:
                    changed.append(match.id)
                    self._away_since.pop((match.id, mark), None)
                holders.add(sid)
            return sorted(set(changed))

    def disconnect(self, sid: str) -> list[str]:
        """Forget a connection; the game ids whose online flags changed."""
        with self._lock:
            conn = self._conns.pop(sid, None)
            return self._leave(sid, conn) if conn else []

    def _leave(self, sid: str, conn: Connection) -> list[str]:
        changed = []
        for mark in conn.seats:
            key = (conn.game or "", mark)
            holders = self._seated.get(key, set())
            holders.discard(sid)
            if not holders:
                self._seated.pop(key, None)
                self._away_since[key] = self._clock()
                changed.append(conn.game or "")
        conn.game, conn.seats = None, ()
        return changed

    def online(self, game_id: str) -> dict[str, bool]:
        """Whether each side of a game has a connection here."""
        return {mark: bool(self._seated.get((game_id, mark))) for mark in ("X", "O")}

    def away_for(self, game_id: str, mark: str) -> float:
        """Seconds since that seat last had a connection (since start if never seen)."""
        if self._seated.get((game_id, mark)):
            return 0.0
        return self._clock() - self._away_since.get((game_id, mark), self._started)

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
