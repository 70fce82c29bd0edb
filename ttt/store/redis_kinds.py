"""The Redis indexes of live games by kind (mode, variant), kept beside LIVE.

Every command that adds a game to LIVE or takes one out does the same to its kind's index,
in the same MULTI or Lua script (RedisStore._write, run by redis_scripts.WRITE; `unlist`), so
the kinds always add up to LIVE and the count per kind is one ZCARD each. `mend` is for the
upgrade: live games written by a process of a release without these indexes.
"""

from __future__ import annotations

from collections.abc import Callable

import redis

from ttt.store import codec
from ttt.store.base import KINDS, by_kind
from ttt.store.redis_keys import DEADLINES, KIND_INDEXES, LIVE, game_key, kind_key

# KEYS: LIVE, one kind index. ARGV: game ids. Each id is put in the kind index (with its
# score in LIVE) if LIVE holds it, or taken out if not: one step, so no game ending meanwhile
# is put back.
MEND_KIND = """
local mended = 0
for _, id in ipairs(ARGV) do
  local score = redis.call('ZSCORE', KEYS[1], id)
  if score then mended = mended + redis.call('ZADD', KEYS[2], score, id)
  else mended = mended + redis.call('ZREM', KEYS[2], id) end
end
return mended
"""
MEND_BATCH = 1000  # ids per script call and per MGET: Redis serves others between batches


def unlist(pipe: redis.client.Pipeline, ids: list[str]) -> None:
    """Queue the removal of games from LIVE and from every kind index (a game whose body has
    expired has no kind to read; removing an id a set lacks does nothing)."""
    pipe.zrem(LIVE, *ids)
    for key in KIND_INDEXES:
        pipe.zrem(key, *ids)


def count(client: redis.Redis) -> dict[tuple[str, str], int]:
    """The live games of every kind, read in one MULTI (one moment for all of them)."""
    pipe = client.pipeline(transaction=True)
    for key in KIND_INDEXES:
        pipe.zcard(key)
    return by_kind(dict(zip(KINDS, pipe.execute(), strict=True)))


def mend(client: redis.Redis, script: redis.commands.core.Script) -> int:
    """Give a kind index the live games in LIVE alone, take from them the games gone from
    LIVE (an older release's process wrote LIVE only); how many ids were moved."""
    mended = 0
    orphans = client.zdiff([LIVE, *KIND_INDEXES])
    for start in range(0, len(orphans), MEND_BATCH):
        batch = orphans[start:start + MEND_BATCH]
        kinds: dict[str, list[str]] = {}
        for game_id, body in zip(batch, client.mget([game_key(g) for g in batch]), strict=True):
            if body:  # expired: the purge takes it out of LIVE
                match = codec.decode(body)
                kinds.setdefault(kind_key(match.mode, match.variant), []).append(game_id)
        for key, ids in kinds.items():
            mended += script(keys=[LIVE, key], args=ids)
    for key in KIND_INDEXES:
        strays = client.zdiff([key, LIVE])
        for start in range(0, len(strays), MEND_BATCH):
            mended += script(keys=[LIVE, key], args=strays[start:start + MEND_BATCH])
    return mended


def forget_expired(client: redis.Redis, unlist: Callable[[list[str]], None]) -> None:
    """Take out of LIVE (by `unlist`, the kinds with it) and DEADLINES the ids of the games
    expired by their TTL (untouched ones soonest): a purge's step."""
    for index in (LIVE, DEADLINES):
        ids = client.zrange(index, 0, -1)
        pipe = client.pipeline(transaction=False)
        for game_id in ids:
            pipe.exists(game_key(game_id))
        missing = [gid for gid, there in zip(ids, pipe.execute(), strict=True) if not there]
        if missing and index == LIVE:
            unlist(missing)
        elif missing:
            client.zrem(index, *missing)


def purge_finished(client: redis.Redis, finished_before: float) -> int:
    """Delete the finished games older than `finished_before` (they carry a TTL too): how
    many. A purge's step, one SCAN of the games."""
    gone, cursor = 0, 0
    while True:
        cursor, keys = client.scan(cursor, match=game_key("*"), count=500)
        for key in keys:
            body = client.get(key)
            if body:
                match = codec.decode(body)
                if match.is_over and match.updated < finished_before:
                    gone += client.delete(key)
        if cursor == 0:
            return gone
