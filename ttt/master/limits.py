"""Every limit of the house, in one place: token buckets (rates and bursts) and held slots
(connections), in this process's memory or in Redis when several processes serve.

A bucket allows `burst` at once and refills at `rate` a second: events, creations,
joins that take a seat, renames and reactions are all buckets under their own key.
A slot is something held until released (a connection): `acquire` refuses once `cap`
are held under a key. In Redis a slot is a member of a sorted set scored with its
lease's expiry, renewed while the connection lives, so a crashed process's
connections stop counting by themselves. Redis decides time (`TIME`) in its
scripts, so processes with slightly different clocks share one bucket fairly.

A limiter never refuses because Redis is away: the store is then away too, and
every event is refused as `unavailable` anyway.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from ttt.runtime import loglines

log = logging.getLogger("ttt.limits")

LEASE_SECONDS = 30.0
PREFIX = "ttt:limit:"


@dataclass(frozen=True)
class Limits:
    """The rules of the house that are settings, not game rules."""

    claim_after: float = 60.0           # seconds a seat must be away before a claim
    live_per_player: int = 50
    live_per_address: int = 500         # live games made from one client address
    live_total: int = 100_000
    creations_per_minute: float = 30.0  # per player and per client address; 0: no limit
    reaction_every: float = 1.0         # seconds between one player's reactions
    outage_after: float = 5.0           # seconds with no server seen up that clocks get back
    renames_per_minute: float = 10.0    # per player, bursts of as many
    # Friend games nobody joined yet (they expire after TTT_UNTOUCHED_TTL, 30 min): a few per
    # person live at once, and so many made per half hour from one address (a class of 30
    # each sharing a link fits). With creations_per_minute 0 (benchmarks): no limit.
    unjoined_per_player: int = 10
    unjoined_per_address: float = 60.0
    rename_batch: int = 4               # live games besides the shown one a rename rewrites


@functools.lru_cache(maxsize=8192)  # on every new game and connect: parsed once per address
def prefix_of(address: str) -> str:
    """What counts as one address: an IPv4 address whole, an IPv6 address by its /64 (one
    home or one phone gets a whole /64: counting its addresses apart would be counting none),
    an IPv4-mapped IPv6 address as its IPv4 one. Anything else (a test's name) as it is."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


class Limiter(Protocol):
    """Rates and held slots by key."""

    def take(self, key: str, rate: float, burst: float) -> bool:
        """Whether one more is allowed under `key` (refilling at `rate` a second up to `burst`)."""

    def take_all(self, buckets: list[tuple[str, float, float]]) -> int | None:
        """`take` each (key, rate, burst) in order, stopping at the first refused (those before
        it taken, as a sequence of `take`s): its index, or None when all allowed. In one
        round trip on Redis."""

    def acquire(self, key: str, holder: str, cap: int) -> bool:
        """Hold one slot of `key` for `holder`; False when `cap` are held already."""

    def release(self, key: str, holder: str) -> None:
        """Give the holder's slot of `key` back."""

    def held(self, key: str) -> int:
        """How many slots of `key` are held."""

    def renew(self, slots: Iterable[tuple[str, str]]) -> None:
        """Extend the leases of these (key, holder) slots."""


class MemoryLimiter:
    """Buckets and slots in this process, bounded in memory."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, size: int = 50_000) -> None:
        self._clock = clock
        self._size = size
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float, float]] = {}  # tokens, when, rate
        self._slots: dict[str, set[str]] = {}

    def take(self, key: str, rate: float, burst: float) -> bool:
        if rate <= 0:
            return True
        now = self._clock()
        with self._lock:
            tokens, then, _ = self._buckets.get(key, (burst, now, rate))
            tokens = min(burst, tokens + max(0.0, now - then) * rate)
            if tokens < 1:
                return False
            if len(self._buckets) >= self._size and key not in self._buckets:
                self._forget_full(now, burst)
            self._buckets[key] = (tokens - 1, now, rate)
            return True

    def take_all(self, buckets: list[tuple[str, float, float]]) -> int | None:
        for index, (key, rate, burst) in enumerate(buckets):
            if not self.take(key, rate, burst):
                return index
        return None

    def _forget_full(self, now: float, burst: float) -> None:
        """Drop buckets refilled to the brim (as good as new), else the oldest tenth."""
        full = [k for k, (t, s, r) in self._buckets.items() if t + (now - s) * r >= burst]
        for k in full or list(self._buckets)[: self._size // 10]:
            del self._buckets[k]

    def acquire(self, key: str, holder: str, cap: int) -> bool:
        with self._lock:
            holders = self._slots.setdefault(key, set())
            if holder not in holders and cap > 0 and len(holders) >= cap:
                return False
            holders.add(holder)
            return True

    def release(self, key: str, holder: str) -> None:
        with self._lock:
            holders = self._slots.get(key)
            if holders is not None:
                holders.discard(holder)
                if not holders:
                    del self._slots[key]

    def held(self, key: str) -> int:
        with self._lock:
            return len(self._slots.get(key, ()))

    def renew(self, slots: Iterable[tuple[str, str]]) -> None:
        """Nothing to renew: this process's slots die with it."""


# KEYS: bucket. ARGV: rate a second, burst. Returns 1 when allowed.
TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local held = redis.call('HMGET', KEYS[1], 'tokens', 'when')
local tokens, when = tonumber(held[1]) or burst, tonumber(held[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - when) * rate)
if tokens < 1 then return 0 end
redis.call('HSET', KEYS[1], 'tokens', tokens - 1, 'when', now)
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
return 1
"""

# KEYS: buckets; ARGV: rate and burst of each. Takes from each in order, stopping at the first
# refused: its 1-based index, or 0 when all allowed (TAKE's steps, one round trip).
TAKE_ALL = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
for i, key in ipairs(KEYS) do
  local rate, burst = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  if rate > 0 then
    local held = redis.call('HMGET', key, 'tokens', 'when')
    local tokens, when = tonumber(held[1]) or burst, tonumber(held[2]) or now
    tokens = math.min(burst, tokens + math.max(0, now - when) * rate)
    if tokens < 1 then return i end
    redis.call('HSET', key, 'tokens', tokens - 1, 'when', now)
    redis.call('EXPIRE', key, math.ceil(burst / rate) + 1)
  end
end
return 0
"""

# KEYS: slots. ARGV: holder, cap, lease seconds. Returns 1 when held.
ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local cap = tonumber(ARGV[2])
if cap > 0 and redis.call('ZSCORE', KEYS[1], ARGV[1]) == false
   and redis.call('ZCARD', KEYS[1]) >= cap then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[3])) + 1)
return 1
"""

# KEYS: slots. Returns the live count.
HELD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
"""

# KEYS: the slot sets; ARGV: lease seconds, then one holder per key. Renews present ones only.
RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local lease = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', now + lease, ARGV[i + 1])
  redis.call('EXPIRE', key, math.ceil(lease) + 1)
end
return #KEYS
"""


class RedisLimiter:
    """Buckets and slots in Redis, shared by every process that serves."""

    def __init__(self, url: str, lease: float = LEASE_SECONDS) -> None:
        import redis

        self._errors = (redis.ConnectionError, redis.TimeoutError)
        self._redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                           socket_connect_timeout=2)
        self._lease = lease
        self._take = self._redis.register_script(TAKE)
        self._take_all = self._redis.register_script(TAKE_ALL)
        self._acquire = self._redis.register_script(ACQUIRE)
        self._held = self._redis.register_script(HELD)
        self._renew = self._redis.register_script(RENEW)
        # One line, then one a minute with a count, then "back": every event checks a limit.
        self._fold = loglines.Fold(log, "limits not checked, Redis unavailable")

    def _run(self, script, keys: list[str], args: list, fallback: int) -> int:
        try:
            found = int(script(keys=keys, args=args))
        except self._errors as error:
            self._fold.failed(error)
            return fallback
        self._fold.ok()
        return found

    def take(self, key: str, rate: float, burst: float) -> bool:
        if rate <= 0:
            return True
        return bool(self._run(self._take, [PREFIX + "b:" + key], [rate, burst], 1))

    def take_all(self, buckets: list[tuple[str, float, float]]) -> int | None:
        if not buckets:
            return None
        args = [word for _, rate, burst in buckets for word in (rate, burst)]
        refused = self._run(self._take_all, [PREFIX + "b:" + key for key, _, _ in buckets],
                            args, 0)
        return refused - 1 if refused else None

    def acquire(self, key: str, holder: str, cap: int) -> bool:
        return bool(self._run(self._acquire, [PREFIX + "s:" + key],
                              [holder, cap, self._lease], 1))

    def release(self, key: str, holder: str) -> None:
        try:
            self._redis.zrem(PREFIX + "s:" + key, holder)
        except self._errors as error:  # the lease lapses by itself
            self._fold.failed(f"slot not released: {error}")

    def held(self, key: str) -> int:
        return self._run(self._held, [PREFIX + "s:" + key], [], 0)

    def renew(self, slots: Iterable[tuple[str, str]]) -> None:
        slots = list(slots)
        for start in range(0, len(slots), 500):  # bounded scripts: others run between them
            batch = slots[start:start + 500]
            self._run(self._renew, [PREFIX + "s:" + key for key, _ in batch],
                      [self._lease, *(holder for _, holder in batch)], 0)


def open_limiter(shared: str | None, clock: Callable[[], float] = time.monotonic) -> Limiter:
    """Redis when a URL of it is shared by the processes that serve, else this process."""
    return RedisLimiter(shared) if shared else MemoryLimiter(clock)
