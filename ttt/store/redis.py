"""Matches in Redis, shared by several server processes.

A game is one JSON string with a time to live: refreshed on every change, long
while the game is on (`idle_ttl`), shorter once it is over (`finished_ttl`).
A change is WATCH / GET / MULTI / SET / EXEC: if another process wrote the
game in between, EXEC fails and the change is tried again on the new value,
so two processes can never both land a move on one version.
"""

from __future__ import annotations

import functools
import json

import redis

from ttt.match import Match
from ttt.store import MAX_RETRIES, Change, StoreUnavailable, empty_record, results

PREFIX = "ttt:"


def _game(game_id: str) -> str:
    return f"{PREFIX}game:{game_id}"


def _player(player_id: str) -> str:
    return f"{PREFIX}player:{player_id}"


LIVE = f"{PREFIX}live"  # sorted set: live game id -> last change


def _live_of(player_id: str) -> str:
    return f"{PREFIX}live:{player_id}"


def unavailable_on_redis_errors(method):
    """Turn a lost Redis connection into StoreUnavailable; redis-py reconnects by itself."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise StoreUnavailable(str(error)) from error

    return wrapper


class RedisStore:
    """One connection pool to one Redis database."""

    def __init__(self, url: str, finished_ttl: float = 7 * 24 * 3600,
                 idle_ttl: float = 30 * 24 * 3600) -> None:
        self.url = url
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                          socket_connect_timeout=2, health_check_interval=15)
        self.finished_ttl = int(finished_ttl)
        self.idle_ttl = int(idle_ttl)

    def _ttl(self, match: Match) -> int:
        return self.finished_ttl if match.is_over else self.idle_ttl

    def _write(self, pipe, match: Match, before: Match | None) -> None:
        pipe.set(_game(match.id), json.dumps(match.to_json(), separators=(",", ":")),
                 ex=self._ttl(match))
        humans = [seat for seat in match.seats.values() if seat and seat != "ai"]
        if match.is_over:
            pipe.zrem(LIVE, match.id)
            for who in humans:
                pipe.zrem(_live_of(who), match.id)
        else:
            pipe.zadd(LIVE, {match.id: match.updated})
            for who in humans:
                pipe.zadd(_live_of(who), {match.id: match.updated})
                pipe.expire(_live_of(who), self.idle_ttl)
        if before is not None:
            for who, level, outcome in results(before, match):
                pipe.hincrby(_player(who), f"{level}:{outcome}", 1)

    @unavailable_on_redis_errors
    def create(self, match: Match) -> None:
        pipe = self.redis.pipeline(transaction=True)
        self._write(pipe, match, None)
        pipe.execute()

    @unavailable_on_redis_errors
    def get(self, game_id: str) -> Match | None:
        body = self.redis.get(_game(game_id))
        return Match.from_json(json.loads(body)) if body else None

    @unavailable_on_redis_errors
    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        key = _game(game_id)
        for _ in range(MAX_RETRIES):
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(key)
                    body = pipe.get(key)
                    if body is None:
                        return None
                    before = Match.from_json(json.loads(body))
                    after = change(before)
                    if after is before:
                        return before, after
                    pipe.multi()
                    self._write(pipe, after, before)
                    pipe.execute()
                    return before, after
                except redis.WatchError:
                    continue  # another process changed it: try again on the new value
        raise StoreUnavailable("too much contention on one game")

    @unavailable_on_redis_errors
    def delete(self, game_id: str) -> None:
        body = self.redis.get(_game(game_id))
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(_game(game_id))
        pipe.zrem(LIVE, game_id)
        if body:
            for seat in json.loads(body)["seats"].values():
                if seat and seat != "ai":
                    pipe.zrem(_live_of(seat), game_id)
        pipe.execute()

    @unavailable_on_redis_errors
    def record(self, player_id: str) -> dict[str, dict[str, int]]:
        record = empty_record()
        for field, count in self.redis.hgetall(_player(player_id)).items():
            level, _, outcome = field.partition(":")
            if level in record and outcome in record[level]:
                record[level][outcome] = int(count)
        return record

    @unavailable_on_redis_errors
    def current(self, player_id: str) -> str | None:
        return self.redis.hget(_player(player_id), "current")

    @unavailable_on_redis_errors
    def set_current(self, player_id: str, game_id: str) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(_player(player_id), "current", game_id)
        pipe.expire(_player(player_id), 400 * 24 * 3600)
        pipe.execute()

    @unavailable_on_redis_errors
    def purge(self, finished_before: float, idle_before: float) -> int:
        """Redis expires games by itself; here only finished games of an old enough age go."""
        gone = 0
        stale = self.redis.zrangebyscore(LIVE, "-inf", idle_before)
        for game_id in stale:
            gone += self.redis.delete(_game(game_id))
        if stale:
            self.redis.zrem(LIVE, *stale)
        # Finished games carry a TTL; count those whose age passed finished_before too.
        cursor = 0
        while True:
            cursor, keys = self.redis.scan(cursor, match=f"{PREFIX}game:*", count=500)
            for key in keys:
                body = self.redis.get(key)
                if body:
                    match = Match.from_json(json.loads(body))
                    if match.is_over and match.updated < finished_before:
                        gone += self.redis.delete(key)
            if cursor == 0:
                return gone

    @unavailable_on_redis_errors
    def count_live(self, player_id: str | None = None) -> int:
        return self.redis.zcard(LIVE if player_id is None else _live_of(player_id))

    def ping(self) -> bool:
        try:
            return bool(self.redis.ping())
        except (redis.ConnectionError, redis.TimeoutError):
            return False

    def close(self) -> None:
        self.redis.close()
