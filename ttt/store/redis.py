"""Matches in Redis, shared by several server processes.

A game is one JSON string with a time to live: refreshed on every change, long
while the game is on (`idle_ttl`), shorter once it is over (`finished_ttl`),
short while nobody has touched it (`untouched_ttl`). A change is one round trip
(ttt/store/redis_scripts.py): computed on this process's cached copy, it is written by
a Lua script only if the game's `rev` is still the copy's, else the script returns the
game as it is and the change is computed again on it, so two processes can never both
land a move on one version. A create's caps are counted in the same script: the counts
and the insert cannot be raced apart. Reads of other parts (the seats' presence) ride in
the same round trip (`riders`).

The live games are indexed twice: all of them in LIVE, and each in the index of its kind
(mode, variant). Every command that adds to or removes from LIVE does the same to the kind
index in the same MULTI or script, so the kinds always add up to LIVE and a scrape of the
counts per kind is one ZCARD each.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import redis

from ttt.game.match import Match
from ttt.store import codec, redis_kinds, redis_scripts
from ttt.store.base import (
    MAX_RETRIES,
    Caps,
    Change,
    Credit,
    Profile,
    StoreUnavailable,
    Update,
    as_update,
)
from ttt.store.redis_health import MIGRATIONS_KEY, SCHEMA_KEY, STORE_ID_KEY, Health
from ttt.store.redis_keys import (
    BEAT,
    DEADLINES,
    LIVE,
    cap_reached,
    game_key,
    kind_key,
    live_of,
    player_key,
    record_of,
)
from ttt.store.redis_scripts import GONE, STALE, WRITTEN, Batch, write_args

__all__ = ["MIGRATIONS_KEY", "SCHEMA_KEY", "STORE_ID_KEY", "RedisStore",
           "unavailable_on_redis_errors"]  # the schema's keys: read by the tests and tools

CACHED_GAMES = 4096  # copies of games kept by a process (as ttt.store.sqlite's)
RECORD_KEPT = 0.25  # seconds a record read with its credits serves the one `record` after

def unavailable_on_redis_errors(method):
    """Turn a lost Redis connection into StoreUnavailable; redis-py reconnects by itself."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise StoreUnavailable(str(error)) from error

    return wrapper


class RedisStore(Health):
    """One connection pool to one Redis database."""

    def __init__(self, url: str, finished_ttl: float = 7 * 24 * 3600,
                 idle_ttl: float = 30 * 24 * 3600, untouched_ttl: float = 6 * 3600) -> None:
        self.url = url
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                          socket_connect_timeout=2, health_check_interval=15)
        self.finished_ttl = int(finished_ttl)
        self.idle_ttl = int(idle_ttl)
        self.untouched_ttl = int(min(untouched_ttl, idle_ttl))
        # Reads of other parts sent in a write's round trip: each, given the game written,
        # gives its commands and what takes their answers (ttt.master.presence).
        self.riders: list[Callable[[str], tuple[list[tuple], Callable[[list], None]]]] = []
        self._cache: OrderedDict[str, Match] = OrderedDict()  # this process's copies
        self._cache_lock = threading.Lock()
        self._records: dict[str, tuple[dict, float]] = {}  # player -> (record, good until)
        self._current_set: dict[str, tuple[str, float]] = {}  # player -> (game, good until)
        self._mend_kind = self.redis.register_script(redis_kinds.MEND_KIND)
        self._count_live = self.redis.register_script(redis_scripts.COUNT_LIVE)
        self.start_health()
        with contextlib.suppress(redis.ConnectionError, redis.TimeoutError):
            redis_scripts.load(self.redis)  # the first write's EVALSHA finds it

    def _ttl(self, match: Match) -> int:
        if match.is_over:
            return self.finished_ttl
        return self.untouched_ttl if match.untouched else self.idle_ttl

    def _write(self, pipe, match: Match, fresh: bool = False) -> None:
        pipe.set(game_key(match.id), codec.encode(match), ex=self._ttl(match))
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
    def create(self, match: Match, caps: Caps | None = None, current: str | None = None,
               around: Any = None) -> None:
        batch = Batch()
        self._write(batch, match, fresh=True)
        self._ride_current(batch, current, match.id)
        batch.commands.extend(around.inside if around is not None else ())  # leases
        owners, total = self._caps_of(match, caps) if caps and not match.is_over else ((), None)
        keys, args = write_args(batch, owners=owners, total=total, prefix=game_key(""),
                                live=LIVE)
        answer = redis_scripts.call(self.redis, keys, args, self._riding(match.id), around)
        if answer[0] != WRITTEN:
            raise cap_reached(int(answer[0]), owners)
        self._remember(match)
        self._rode_current(current, match.id)

    def _ride_current(self, batch: Batch, player: str | None, game_id: str) -> None:
        """The player's current game set in a write (one round trip fewer)."""
        if player is not None:
            batch.hset(player_key(player), "current", game_id)
            batch.expire(player_key(player), self.idle_ttl)

    def _rode_current(self, player: str | None, game_id: str) -> None:
        """After a write that set it: the `set_current` that follows sends nothing."""
        if player is not None:
            if len(self._current_set) > CACHED_GAMES:  # kept for one that never came
                self._current_set.clear()
            self._current_set[player] = (game_id, time.monotonic() + 5.0)

    @staticmethod
    def _caps_of(match: Match, caps: Caps) -> tuple[list[tuple[str, int]], int]:
        """The live index and cap of each owner of a new game, and the cap on all games."""
        return ([(live_of(who), caps.per_origin if who.startswith("@") else caps.per_player)
                 for who in match.owners()], caps.total)

    def _riding(self, game_id: str) -> list[tuple[list[tuple], Callable[[list], None]]]:
        return [rider(game_id) for rider in self.riders]

    def _remember(self, match: Match) -> None:
        with self._cache_lock:
            self._cache[match.id] = match
            self._cache.move_to_end(match.id)
            if len(self._cache) > CACHED_GAMES:
                self._cache.popitem(last=False)

    def _forget(self, game_id: str) -> None:
        with self._cache_lock:
            self._cache.pop(game_id, None)

    def cached(self, game_id: str) -> Match | None:
        """The copy of a game this process last read or wrote, or None: no round trip, and
        maybe stale (another process may have changed it since), so good only for what no
        change undoes (a game's mode, that it is over) and as the first guess of `update`."""
        return self._copy(game_id)

    def _copy(self, game_id: str) -> Match | None:
        with self._cache_lock:
            return self._cache.get(game_id)

    @unavailable_on_redis_errors
    def get(self, game_id: str) -> Match | None:
        body = self.redis.get(game_key(game_id))
        if not body:
            self._forget(game_id)
            return None
        match = codec.decode(body)
        self._remember(match)
        return match

    @unavailable_on_redis_errors
    def get_many(self, game_ids: list[str]) -> list[Match | None]:
        if not game_ids:
            return []
        found = []
        for game_id, body in zip(game_ids, self.redis.mget([game_key(g) for g in game_ids]),
                                 strict=True):
            found.append(codec.decode(body) if body else None)
            if found[-1] is None:
                self._forget(game_id)
            else:
                self._remember(found[-1])
        return found

    @unavailable_on_redis_errors
    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        # The cached copy first (no read): the script writes only if the game is still at its
        # rev, else answers the game as it is, and the change is computed again on that.
        before = self._copy(game_id)
        fresh = False  # whether `before` is the game as stored (read in this call)
        for _ in range(MAX_RETRIES):
            if before is None:
                body = self.redis.get(game_key(game_id))
                if body is None:
                    self._forget(game_id)
                    return None
                before, fresh = codec.decode(body), True
            try:
                update = as_update(change(before))
            except Exception:
                if fresh:
                    raise
                before = None  # maybe refused for a stale reason: decided on the stored game
                continue
            after = update.match
            if after.rev == before.rev:
                if fresh:  # nothing to write: only the stored game may say so
                    self._remember(before)
                    return before, after
                before = None
                continue
            answer = self._write_change(game_id, before, update)
            if answer[0] == WRITTEN:
                self._remember(after)
                self._rode_current(update.current, game_id)
                if update.create:
                    self._remember(update.create)
                return before, after
            if answer[0] == GONE:
                self._forget(game_id)
                return None
            if answer[0] == STALE:  # another process wrote it: again, on the game as it is
                before, fresh = codec.decode(answer[1]), True
                continue
            assert update.create is not None and update.caps is not None
            raise cap_reached(int(answer[0]), self._caps_of(update.create, update.caps)[0])
        raise StoreUnavailable("too much contention on one game")

    def _write_change(self, game_id: str, before: Match, update: Update) -> list:
        """One WRITE: the change, the game it creates (caps counted), the records credited."""
        after = update.match
        batch = Batch()
        self._write(batch, after, fresh=set(after.owners()) != set(before.owners()))
        owners: list[tuple[str, int]] = []
        total = None
        if update.create:
            self._write(batch, update.create, fresh=True)
            if update.caps:
                owners, total = self._caps_of(update.create, update.caps)
        for who, level, outcome in update.credits:
            batch.hincrby(player_key(who), f"{level}:{outcome}", 1)
            batch.expire(player_key(who), self.idle_ttl)  # as long as a name or a current game
        self._ride_current(batch, update.current, game_id)
        batch.commands.extend(update.around.inside if update.around is not None else ())
        keys, args = write_args(batch, game_key(game_id), before.rev, owners, total,
                                game_key(""), LIVE)
        credited = sorted({who for who, _, _ in update.credits})
        return redis_scripts.call(self.redis, keys, args, self._riding(game_id) + (
            [self._records_ride(credited)] if credited else []), update.around)

    def _records_ride(self, players: list[str]) -> tuple[list[tuple], Callable[[list], None]]:
        """The records credited, read behind the write: for the `record` push that follows."""
        def took(found: list) -> None:
            if len(self._records) > CACHED_GAMES:  # kept for a `record` that never came
                self._records.clear()
            until = time.monotonic() + RECORD_KEPT
            self._records.update({p: (record_of(f), until)
                                  for p, f in zip(players, found, strict=True)})
        return [("HGETALL", player_key(p)) for p in players], took

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
                    for match in credited:
                        self._remember(match)
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
        self._forget(game_id)
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
        kept = self._records.pop(player_id, None)  # read with the write that credited it
        if kept is not None and kept[1] >= time.monotonic():
            return kept[0]
        return record_of(self.redis.hgetall(player_key(player_id)))

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
        kept = self._current_set.pop(player_id, None)  # set by the create just made
        if kept is None or kept[0] != game_id or kept[1] < time.monotonic():
            self._set_field(player_id, "current", game_id)

    @unavailable_on_redis_errors
    def name(self, player_id: str) -> str | None:
        return self.redis.hget(player_key(player_id), "name")

    @unavailable_on_redis_errors
    def profile(self, player_id: str) -> Profile:
        return self._read(None, player_id)[1]

    @unavailable_on_redis_errors
    def get_with_profile(self, game_id: str, player_id: str) -> tuple[Match | None, Profile]:
        """`get` and `profile` in one round trip (a join)."""
        return self._read(game_id, player_id)

    def _read(self, game_id: str | None, player_id: str) -> tuple[Match | None, Profile]:
        pipe = self.redis.pipeline(transaction=False)  # one round trip
        pipe.hgetall(player_key(player_id))  # the record is in the same hash
        pipe.zrange(live_of(player_id), 0, -1)
        if game_id is not None:
            pipe.get(game_key(game_id))
        fields, live, *body = pipe.execute()
        match = codec.decode(body[0]) if body and body[0] else None
        if game_id is not None:
            self._remember(match) if match else self._forget(game_id)
        return match, Profile(fields.get("name"), fields.get("current"), record_of(fields),
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
        gone += redis_kinds.purge_finished(self.redis, finished_before)
        # Games expired by their TTL (untouched ones soonest) leave their ids behind.
        redis_kinds.forget_expired(self.redis, self._unlist)
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
        # A player's index may hold games that expired: counted (and mended) in one step.
        return int(self._count_live(keys=[live_of(player_id)], args=[game_key("")]))

    def close(self) -> None:
        self.redis.close()
