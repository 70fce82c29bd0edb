"""Matches in Redis, shared by several server processes.

A game is one JSON string with a time to live: refreshed on every change, long
while the game is on (`idle_ttl`), shorter once it is over (`finished_ttl`),
short while nobody has touched it (`untouched_ttl`). A change is WATCH / GET /
MULTI / SET / EXEC: if another process wrote the game in between, EXEC fails
and the change is tried again on the new value, so two processes can never
both land a move on one version. A create with caps is one Lua script: the
counts and the insert cannot be raced apart.

The live games are indexed twice: all of them in LIVE, and each in the index of its kind
(mode, variant). Every command that adds to or removes from LIVE does the same to the kind
index in the same MULTI or script, so the kinds always add up to LIVE and a scrape of the
counts per kind is one ZCARD each.
"""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
from collections.abc import Callable

import redis

from ttt import build
from ttt.match import Match
from ttt.store import codec, redis_kinds
from ttt.store.base import (
    MAX_RETRIES,
    OUTCOMES,
    CapReached,
    Caps,
    Change,
    Credit,
    Profile,
    StoreUnavailable,
    as_update,
    empty_record,
)
from ttt.store.redis_keys import (
    BEAT,
    DEADLINES,
    LIVE,
    PREFIX,
    game_key,
    kind_key,
    live_of,
    player_key,
)
from ttt.store.schema import READABLE_FROM, SCHEMA_VERSION, check

# KEYS: game, LIVE, the game's kind index, the live index of each owner (player, or '@'
# address). ARGV: body, ttl, updated, id, total, game key prefix, the cap of each owner (0: none).
CREATE_CAPPED = """
local owners = #KEYS - 3
for i = 1, owners do
  local cap = tonumber(ARGV[6 + i])
  local live = 0
  for _, id in ipairs(redis.call('ZRANGE', KEYS[3 + i], 0, -1)) do
    if redis.call('EXISTS', ARGV[6] .. id) == 1 then live = live + 1
    else redis.call('ZREM', KEYS[3 + i], id) end  -- expired by its TTL
  end
  if cap > 0 and live >= cap then return 2 + i end  -- which owner: a player or the address
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 2 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
for i = 1, owners do
  redis.call('ZADD', KEYS[3 + i], ARGV[3], ARGV[4])
  if redis.call('TTL', KEYS[3 + i]) < tonumber(ARGV[2]) then
    redis.call('EXPIRE', KEYS[3 + i], ARGV[2])
  end
end
return 0
"""


log = logging.getLogger("ttt.store")

# The layout's version (ttt/store/schema.py): a hash {version, readable_from} that no TTL or
# eviction touches, and the list of migrations run (one JSON record each).
SCHEMA_KEY = f"{PREFIX}schema"
MIGRATIONS_KEY = f"{PREFIX}migrations"
# The store's identity (issue 45): a random id written once, by the first process to find
# none (SET NX), and read back by every other. `ping` (each /healthz and scrape) checks it is
# still there: a FLUSHDB, a Redis restarted without its data or another database is a store
# down at the next probe, not a log line at the next purge. A backup carries it (a ttt: key),
# so a restore brings the same store back.
STORE_ID_KEY = f"{PREFIX}store-id"
# KEYS: SCHEMA_KEY, MIGRATIONS_KEY. ARGV: this code's version, readable_from, the record.
# Returns the version and readable_from found before; records ours only when it is newer.
MIGRATE = """
local found = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
local readable = tonumber(redis.call('HGET', KEYS[1], 'readable_from') or tostring(found))
if found < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'version', ARGV[1], 'readable_from', ARGV[2])
  redis.call('RPUSH', KEYS[2], ARGV[3])
end
return {found, readable, redis.call('EXISTS', KEYS[1])}
"""


def unavailable_on_redis_errors(method):
    """Turn a lost Redis connection into StoreUnavailable; redis-py reconnects by itself."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise StoreUnavailable(str(error)) from error

    return wrapper


def _body(match: Match) -> str:
    return codec.encode(match)


def _record_of(fields: dict[str, str]) -> dict[str, dict[str, int]]:
    """A player's record from the fields of their hash (`level:outcome` counts)."""
    record = empty_record()
    for field, count in fields.items():
        level, _, outcome = field.partition(":")
        if level in record and outcome in OUTCOMES:
            record[level][outcome] = int(count)
    return record

class RedisStore:
    """One connection pool to one Redis database."""

    def __init__(self, url: str, finished_ttl: float = 7 * 24 * 3600,
                 idle_ttl: float = 30 * 24 * 3600, untouched_ttl: float = 6 * 3600) -> None:
        self.url = url
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                          socket_connect_timeout=2, health_check_interval=15)
        self.finished_ttl = int(finished_ttl)
        self.idle_ttl = int(idle_ttl)
        self.untouched_ttl = int(min(untouched_ttl, idle_ttl))
        self._create_capped = self.redis.register_script(CREATE_CAPPED)
        self._mend_kind = self.redis.register_script(redis_kinds.MEND_KIND)
        self._migrate = self.redis.register_script(MIGRATE)
        self.schema_checked = False
        self.identity: str | None = None  # STORE_ID_KEY's value, once read
        self.lost = False  # the identity is gone or another: the data went with it
        try:
            self.migrate_schema()
            self.identity = self._claim_identity()
        except (redis.ConnectionError, redis.TimeoutError) as error:
            # Serve anyway (the store's errors say the rest); checked again at each purge.
            log.warning("redis store unreachable at start-up, schema not checked yet: %s",
                        error)

    def migrate_schema(self) -> int:
        """Check the layout's version, refuse a newer one (SchemaTooNew), record ours once.
        The version found before."""
        record = json.dumps({"version": SCHEMA_VERSION, "readable_from": READABLE_FROM,
                             "at": time.time(), "release": build.release()})
        found, readable, _ = self._migrate(keys=[SCHEMA_KEY, MIGRATIONS_KEY],
                                           args=[SCHEMA_VERSION, READABLE_FROM, record])
        found, readable = int(found), int(readable)
        if found == 0 and self.schema_checked:
            # Seen before by this process, gone now: Redis restarted without its data (no
            # AOF, or evicted under maxmemory): every game, seat and record went with it.
            log.error("redis store lost its data (the schema key %s is gone): was it "
                      "restarted without persistence? see deploy/redis.conf", SCHEMA_KEY)
        check("redis", found, readable)
        self.schema_checked = True
        return found

    def _ttl(self, match: Match) -> int:
        if match.is_over:
            return self.finished_ttl
        return self.untouched_ttl if match.untouched else self.idle_ttl

    def _write(self, pipe, match: Match, fresh: bool = False) -> None:
        pipe.set(game_key(match.id), _body(match), ex=self._ttl(match))
        kind = kind_key(match.mode, match.variant)
        if match.is_over:
            pipe.zrem(LIVE, match.id)
            pipe.zrem(kind, match.id)
            for who in match.owners():
                pipe.zrem(live_of(who), match.id)
        else:
            pipe.zadd(LIVE, {match.id: match.updated})
            pipe.zadd(kind, {match.id: match.updated})
            for who in match.owners():
                # Touched only when a game joins it (NX; the TTL set then): a move leaves an
                # owner's index alone, so a capped create WATCHing it is not retried per move.
                pipe.zadd(live_of(who), {match.id: match.updated}, nx=True)
                if fresh or match.untouched:
                    pipe.expire(live_of(who), self.idle_ttl)
        if match.deadline is not None and not match.is_over:
            pipe.zadd(DEADLINES, {match.id: match.deadline})
        else:
            pipe.zrem(DEADLINES, match.id)

    @unavailable_on_redis_errors
    def create(self, match: Match, caps: Caps | None = None) -> None:
        if caps is None or match.is_over:
            pipe = self.redis.pipeline(transaction=True)
            self._write(pipe, match, fresh=True)
            pipe.execute()
            return
        owners = match.owners()
        refused = self._create_capped(
            keys=[game_key(match.id), LIVE, kind_key(match.mode, match.variant),
                  *(live_of(who) for who in owners)],
            args=[_body(match), self._ttl(match), match.updated, match.id, caps.total,
                  game_key(""), *(caps.per_origin if w.startswith("@") else caps.per_player
                               for w in owners)])
        if refused:
            raise CapReached(per_player=refused != 2,
                             per_address=refused > 2 and owners[refused - 3].startswith("@"))
        if match.deadline is not None:
            self.redis.zadd(DEADLINES, {match.id: match.deadline})

    def _check(self, pipe, match: Match, caps: Caps) -> None:
        """Refuse a new game over its caps, counted on WATCHed indexes: if another process
        adds a live game to one of them before EXEC, the whole change is tried again."""
        owners = match.owners()
        pipe.watch(*(live_of(who) for who in owners))
        for who in owners:
            cap = caps.per_origin if who.startswith("@") else caps.per_player
            ids = pipe.zrange(live_of(who), 0, -1)
            if cap and ids and pipe.exists(*(game_key(gid) for gid in ids)) >= cap:
                raise CapReached(per_player=True, per_address=who.startswith("@"))
        if pipe.zcard(LIVE) >= caps.total:
            raise CapReached(per_player=False)

    @unavailable_on_redis_errors
    def get(self, game_id: str) -> Match | None:
        body = self.redis.get(game_key(game_id))
        return codec.decode(body) if body else None

    @unavailable_on_redis_errors
    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        key = game_key(game_id)
        for _ in range(MAX_RETRIES):
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(key)
                    body = pipe.get(key)
                    if body is None:
                        return None
                    before = codec.decode(body)
                    update = as_update(change(before))
                    after = update.match
                    if after.rev == before.rev:
                        return before, after
                    if update.create and update.caps:
                        self._check(pipe, update.create, update.caps)
                    pipe.multi()
                    self._write(pipe, after, fresh=set(after.owners()) != set(before.owners()))
                    if update.create:
                        self._write(pipe, update.create, fresh=True)
                    for who, level, outcome in update.credits:
                        pipe.hincrby(player_key(who), f"{level}:{outcome}", 1)
                    pipe.execute()
                    return before, after
                except redis.WatchError:
                    continue  # another process changed it: try again on the new value
        raise StoreUnavailable("too much contention on one game")

    @unavailable_on_redis_errors
    def resume(self, clock: Callable[[], float], grace: float, credit: Credit) -> list[Match]:
        # WATCH the stamp and every game credited: a move landing meanwhile, or another
        # process resuming first, fails EXEC and the whole step is done again.
        for _ in range(MAX_RETRIES):
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(BEAT)
                    last = pipe.get(BEAT)
                    now = clock()
                    credited = []
                    if last is not None and now - float(last) > grace:
                        credited = self._credit(pipe, float(last), now - float(last), credit)
                    pipe.multi()
                    for match in credited:
                        self._write(pipe, match)
                    pipe.set(BEAT, repr(now))
                    pipe.execute()
                    return credited
                except redis.WatchError:
                    continue
        raise StoreUnavailable("too much contention while resuming the clocks")

    @staticmethod
    def _credit(pipe, since: float, downtime: float, credit: Credit) -> list[Match]:
        """The live timed games with `credit` applied, each watched (the pipe is not in MULTI)."""
        keys = [game_key(gid) for gid in pipe.zrange(DEADLINES, 0, -1)]
        if not keys:
            return []
        pipe.watch(BEAT, *keys)
        credited = []
        for body in pipe.mget(keys):
            if body:
                before = codec.decode(body)
                after = credit(before, since, downtime)
                if after.rev != before.rev:
                    credited.append(after)
        return credited

    @unavailable_on_redis_errors
    def delete(self, game_id: str) -> None:
        body = self.redis.get(game_key(game_id))
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(game_key(game_id))
        redis_kinds.unlist(pipe, [game_id])
        pipe.zrem(DEADLINES, game_id)
        if body:
            for who in codec.decode(body).owners():
                pipe.zrem(live_of(who), game_id)
        pipe.execute()

    @unavailable_on_redis_errors
    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        return _record_of(self.redis.hgetall(player_key(player_id)))

    @unavailable_on_redis_errors
    def current(self, player_id: str) -> str | None:
        return self.redis.hget(player_key(player_id), "current")

    def _set_field(self, player_id: str, field: str, value: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(player_key(player_id), field, value)
        # A profile lives as long as a game nobody touches: seen again, it lives on.
        pipe.expire(player_key(player_id), self.idle_ttl)
        pipe.execute()

    @unavailable_on_redis_errors
    def set_current(self, player_id: str, game_id: str) -> None:
        self._set_field(player_id, "current", game_id)

    @unavailable_on_redis_errors
    def name(self, player_id: str) -> str | None:
        return self.redis.hget(player_key(player_id), "name")

    @unavailable_on_redis_errors
    def profile(self, player_id: str) -> Profile:
        pipe = self.redis.pipeline(transaction=False)  # one round trip
        pipe.hgetall(player_key(player_id))  # the record is in the same hash
        pipe.zrange(live_of(player_id), 0, -1)
        fields, live = pipe.execute()
        return Profile(fields.get("name"), fields.get("current"), _record_of(fields),
                       sorted(live))

    @unavailable_on_redis_errors
    def set_name(self, player_id: str, name: str) -> None:
        self._set_field(player_id, "name", name)

    @unavailable_on_redis_errors
    def mark_played(self, player_id: str) -> None:
        self._set_field(player_id, "played", "1")  # in the profile's hash: kept as long

    @unavailable_on_redis_errors
    def played(self, player_id: str) -> bool:
        return bool(self.redis.hexists(player_key(player_id), "played"))

    @unavailable_on_redis_errors
    def live_games(self, player_id: str) -> list[str]:
        return sorted(self.redis.zrange(live_of(player_id), 0, -1))

    @unavailable_on_redis_errors
    def live_ids(self) -> list[str]:
        return self.redis.zrange(LIVE, 0, -1)

    @unavailable_on_redis_errors
    def due(self, now: float) -> list[str]:
        return self.redis.zrangebyscore(DEADLINES, "-inf", now)

    @unavailable_on_redis_errors
    def purge(self, finished_before: float, idle_before: float,
              untouched_before: float | None = None) -> int:
        """Redis expires games by itself: here the indexes lose the games that are gone."""
        self.migrate_schema()  # one round trip every purge: notices a Redis that lost its data
        gone = 0
        stale = self.redis.zrangebyscore(LIVE, "-inf", idle_before)
        for game_id in stale:
            gone += self.redis.delete(game_key(game_id))
        if stale:
            self._unlist(stale)
        # Finished games carry a TTL; purge those whose age passed finished_before too.
        cursor = 0
        while True:
            cursor, keys = self.redis.scan(cursor, match=f"{PREFIX}game:*", count=500)
            for key in keys:
                body = self.redis.get(key)
                if body:
                    match = codec.decode(body)
                    if match.is_over and match.updated < finished_before:
                        gone += self.redis.delete(key)
            if cursor == 0:
                break
        # Games expired by their TTL (untouched ones soonest) leave their ids behind.
        for index in (LIVE, DEADLINES):
            ids = self.redis.zrange(index, 0, -1)
            pipe = self.redis.pipeline(transaction=False)
            for game_id in ids:
                pipe.exists(game_key(game_id))
            missing = [gid for gid, there in zip(ids, pipe.execute(), strict=True) if not there]
            if missing and index == LIVE:
                self._unlist(missing)
            elif missing:
                self.redis.zrem(index, *missing)
        redis_kinds.mend(self.redis, self._mend_kind)
        return gone

    def _unlist(self, ids: list[str]) -> None:
        """Take games out of LIVE and out of the kind indexes, in one MULTI."""
        pipe = self.redis.pipeline(transaction=True)
        redis_kinds.unlist(pipe, ids)
        pipe.execute()

    @unavailable_on_redis_errors
    def count_live_by_kind(self) -> dict[tuple[str, str], int]:
        return redis_kinds.count(self.redis)

    @unavailable_on_redis_errors
    def count_live(self, player_id: str | None = None) -> int:
        if player_id is None:
            return self.redis.zcard(LIVE)
        # A player's index may hold games that expired: count the ones still there.
        ids = self.redis.zrange(live_of(player_id), 0, -1)
        if not ids:
            return 0
        there = self.redis.exists(*(game_key(gid) for gid in ids))
        if there < len(ids):
            pipe = self.redis.pipeline(transaction=False)
            for gid in ids:
                pipe.exists(game_key(gid))
            missing = [g for g, ok in zip(ids, pipe.execute(), strict=True) if not ok]
            if missing:
                self.redis.zrem(live_of(player_id), *missing)
        return there

    def _claim_identity(self) -> str:
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(STORE_ID_KEY, uuid.uuid4().hex, nx=True)
        pipe.get(STORE_ID_KEY)
        return pipe.execute()[1]

    def ping(self) -> bool:
        """Whether Redis answers and still holds this store's identity (one round trip)."""
        try:
            if self.identity is None:  # unreachable at start-up: claimed at the first answer
                self.identity = self._claim_identity()
                return True
            found = self.redis.get(STORE_ID_KEY)
        except (redis.ConnectionError, redis.TimeoutError):
            return False
        lost = found != self.identity
        if lost != self.lost:
            self.lost = lost
            if lost:
                log.error("redis store lost its data: its identity %s is %s (FLUSHDB, a "
                          "restart without persistence, another database?): restore the last "
                          "backup, or restart every process to start anew (docs/runbook.md, "
                          "TTTStoreLostData)", STORE_ID_KEY,
                          "gone" if found is None else "another store's")
            else:
                log.warning("redis store's identity is back (restored)")
        return not lost

    def close(self) -> None:
        self.redis.close()
