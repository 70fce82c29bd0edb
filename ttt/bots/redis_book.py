"""Bots in the game store's Redis database (the book's Redis twin, ttt.bots.book).

One JSON string per bot, an index by name, by token hash and by maker; a new bot is written
by one script that checks its name and its maker's cap in the same step.
"""

from __future__ import annotations

import json
from typing import Any

from ttt.bots import Bot, BotError
from ttt.bots.book_rules import (
    HISTORY_KEEP,
    HISTORY_PAGE,
    TAKEN,
    apply_result,
    page_of,
    too_many_bots,
)
from ttt.store import StoreUnavailable

# KEYS: name, id, token, the set of all, the maker's set of live bots.
# ARGV: player id, body, the maker's cap (0: none), whether the maker's set counts it.
ADD = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'conflict' end
local cap = tonumber(ARGV[3])
if cap > 0 and redis.call('SCARD', KEYS[5]) >= cap then return 'cap' end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
if ARGV[4] == '1' then redis.call('SADD', KEYS[5], ARGV[1]) end
return 'ok'
"""


def open_redis_book(url: str) -> Answering:
    """The bot book in the Redis database at that URL, its lost connection unavailable."""
    return Answering(RedisBook(url))


class RedisBook:
    """Bots in Redis: a JSON string per bot, indexed by name, token and maker."""

    PREFIX = "ttt:bot:"

    def __init__(self, url: str) -> None:
        import redis

        self._redis_errors = (redis.WatchError,)
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                          socket_connect_timeout=2)
        self._add = self.redis.register_script(ADD)

    def _key(self, kind: str, value: str) -> str:
        return f"{self.PREFIX}{kind}:{value}"

    def _get(self, player: str | None) -> Bot | None:
        body = self.redis.get(self._key("id", player)) if player else None
        return Bot.from_json(json.loads(body)) if body else None

    def add(self, bot: Bot, limit: int = 0) -> None:
        # One script: the name and the cap checked and every key written in one step, so two
        # makers of one name cannot both win, and a failure leaves no name claimed for nobody.
        done = self._add(keys=[self._key("name", bot.name.lower()), self._key("id", bot.player),
                               self._key("token", bot.token_hash), f"{self.PREFIX}all",
                               self._key("maker", bot.maker)],
                         args=[bot.player, json.dumps(bot.to_json()),
                               limit if bot.maker else 0, 1 if bot.maker else 0])
        if done == "conflict":
            raise BotError("conflict", TAKEN)
        if done == "cap":
            raise too_many_bots(limit)

    def offer(self, game_id: str, target: str) -> None:
        self.redis.set(self._key("challenge", game_id), target, ex=86400)

    def answer(self, game_id: str, target: str) -> bool:
        # Compare-and-delete in one step: of two answers, one wins.
        return bool(self.redis.eval(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) "
            "end return 0", 1, self._key("challenge", game_id), target))

    def by_name(self, name: str) -> Bot | None:
        return self._get(self.redis.get(self._key("name", name.lower())))

    def by_token(self, token_hash: str) -> Bot | None:
        return self._get(self.redis.get(self._key("token", token_hash)))

    def by_player(self, player: str) -> Bot | None:
        return self._get(player)

    def all(self) -> list[Bot]:
        bots = [self._get(p) for p in self.redis.smembers(f"{self.PREFIX}all")]
        return sorted((b for b in bots if b), key=lambda b: b.name.lower())

    def _change(self, players: list[str], change) -> Any:
        """Apply `change(bots)` to these bots under WATCH, retried when someone got in first."""
        keys = [self._key("id", p) for p in players]
        for _ in range(20):
            with self.redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(*keys)
                    bodies = [pipe.get(k) for k in keys]
                    bots = [Bot.from_json(json.loads(b)) if b else None for b in bodies]
                    result = change(pipe, bots)
                    if not result:
                        return result
                    pipe.multi()
                    for key, bot in zip(keys, bots, strict=True):
                        pipe.set(key, json.dumps(bot.to_json()))
                    pipe.execute()
                    return result
                except self._redis_errors:
                    continue
        raise RuntimeError("too much contention on a bot")

    def revoke(self, name: str) -> bool:
        player = self.redis.get(self._key("name", name.lower()))
        if not player:
            return False

        def change(pipe, bots):
            if bots[0] is None:
                return False
            bots[0].revoked = True
            return bots[0]

        revoked = self._change([player], change)
        if revoked and revoked.maker:  # no longer counts against its maker's cap
            self.redis.srem(self._key("maker", revoked.maker), player)
        return bool(revoked)

    def remember(self, player: str, entry: dict[str, Any]) -> None:
        # A list per bot, newest first, and a set of its ids so a game is listed once.
        if not self.redis.sadd(self._key("history-ids", player), entry["id"]):
            return
        pipe = self.redis.pipeline()
        pipe.lpush(self._key("history", player), json.dumps(entry))
        pipe.ltrim(self._key("history", player), 0, HISTORY_KEEP - 1)
        pipe.execute()

    def history(self, player: str, before: str | None = None,
                limit: int = HISTORY_PAGE) -> list[dict[str, Any]]:
        entries = [json.loads(body) for body in
                   self.redis.lrange(self._key("history", player), 0, HISTORY_KEEP - 1)]
        return page_of(entries, before, limit)

    def note_failure(self, player: str, game_id: str, failure: dict[str, str]) -> None:
        key = self._key("failures", player)
        pipe = self.redis.pipeline()
        pipe.hset(key, game_id, json.dumps(failure))
        pipe.expire(key, 90 * 86400)
        pipe.execute()

    def failures(self, player: str, game_ids: list[str]) -> dict[str, dict[str, str]]:
        if not game_ids:
            return {}
        found = self.redis.hmget(self._key("failures", player), game_ids)
        return {g: json.loads(body) for g, body in zip(game_ids, found, strict=True) if body}

    def mark_casual(self, game_id: str) -> None:
        self.redis.set(f"{self.PREFIX}casual:{game_id}", 1, ex=30 * 24 * 3600)

    def casual(self, game_id: str) -> bool:
        return bool(self.redis.exists(f"{self.PREFIX}casual:{game_id}"))

    def set_variants(self, player: str, variants: list[str]) -> Bot | None:
        def change(pipe, bots):
            if bots[0] is None:
                return None
            bots[0].variants = list(variants)
            return bots[0]

        return self._change([player], change)

    def rate(self, game_id: str, x: str, o: str, winner: str | None,
             variant: str = "classic") -> bool:
        if x == o or self.casual(game_id):
            return False
        # Claimed first: of all the processes that see the game end, one rates it.
        if not self.redis.set(f"{self.PREFIX}game:{game_id}", 1, nx=True, ex=30 * 24 * 3600):
            return False

        def change(pipe, bots):
            if None in bots:
                return False
            apply_result(bots[0], bots[1], winner, variant)
            return True

        return self._change([x, o], change)


class Answering:
    """A Redis book whose lost connection is StoreUnavailable, on every call: the bot API
    answers 503 `unavailable` rather than an HTML 500 from `by_token` before its handler."""

    def __init__(self, book: Any) -> None:
        self._book = book

    def __getattr__(self, name: str) -> Any:
        import redis

        attribute = getattr(self._book, name)
        if not callable(attribute):
            return attribute

        def answering(*args: Any, **kwargs: Any) -> Any:
            try:
                return attribute(*args, **kwargs)
            except (redis.ConnectionError, redis.TimeoutError) as error:
                raise StoreUnavailable(f"the bot book: {error}") from error

        return answering
