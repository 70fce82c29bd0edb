"""The Redis store's layout version and identity: what start-up, each purge and each probe
check, apart from the games' reads and writes (ttt/store/redis.py)."""

from __future__ import annotations

import json
import logging
import time
import uuid

import redis

from ttt.runtime import fingerprint
from ttt.store.redis_keys import PREFIX
from ttt.store.schema import READABLE_FROM, SCHEMA_VERSION, check

log = logging.getLogger("ttt.store")

# The layout's version (ttt/store/schema.py): a hash {version, readable_from} that no TTL or
# eviction touches, and the list of migrations run (one JSON record each).
SCHEMA_KEY = f"{PREFIX}schema"
MIGRATIONS_KEY = f"{PREFIX}migrations"
# The store's identity: a random id written once, by the first process to find
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


class Health:
    """The schema check and the identity probe of a store holding `self.redis`."""

    redis: redis.Redis
    schema_checked: bool
    identity: str | None
    lost: bool

    def start_health(self) -> None:
        """At start-up: check the schema, read (or write) the store's identity."""
        self._migrate = self.redis.register_script(MIGRATE)
        self.schema_checked = False
        self.identity = None  # STORE_ID_KEY's value, once read
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
                             "at": time.time(), "release": fingerprint.release()})
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
