"""Where bots live, beside the player profiles: a `bots` table or collection in each store.

`open_book(store)` gives the book that sits beside a game store: a dict for `memory://`,
two tables in the same SQLite file, keys in the same Redis database. Names are unique
case-insensitively; a bot-versus-bot game is rated once, whoever reports it first.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from typing import Any, Protocol

from ttt.bots import Bot, BotError, elo, outcome_of
from ttt.store.sqlite_pool import Connections


class Book(Protocol):
    """What the API and the ladder need from bot storage."""

    def add(self, bot: Bot) -> None:
        """Keep a new bot; BotError('conflict') when its name is taken."""

    def by_name(self, name: str) -> Bot | None:
        """The bot of that name, in any case."""

    def by_token(self, token_hash: str) -> Bot | None:
        """The bot whose token has that hash (revoked ones too: the caller checks)."""

    def by_player(self, player: str) -> Bot | None:
        """The bot of that player id."""

    def all(self) -> list[Bot]:
        """Every bot, by name."""

    def revoke(self, name: str) -> bool:
        """Revoke that bot's token; whether there was such a bot."""

    def rate(self, game_id: str, x: str, o: str, winner: str | None) -> bool:
        """Count a finished bot-versus-bot game (player ids of X and O) once; whether now."""

    def offer(self, game_id: str, target: str) -> None:
        """Keep a challenge: the game `target` (a bot's player id) may accept or decline."""

    def answer(self, game_id: str, target: str) -> bool:
        """Take the challenge of that game away if it was `target`'s; whether it was."""


def _rated(x: Bot, o: Bot, winner: str | None) -> None:
    """Apply one game's result to both bots (in place)."""
    score = 0.5 if winner is None else 1.0 if winner == "X" else 0.0
    x.rating, o.rating = elo(x.rating, o.rating, score)
    x.vs_bots[outcome_of(winner, "X")] = x.vs_bots.get(outcome_of(winner, "X"), 0) + 1
    o.vs_bots[outcome_of(winner, "O")] = o.vs_bots.get(outcome_of(winner, "O"), 0) + 1


class MemoryBook:
    """Bots in this process's memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bots: dict[str, Bot] = {}
        self._rated: set[str] = set()
        self._offers: dict[str, str] = {}

    def offer(self, game_id: str, target: str) -> None:
        with self._lock:
            if len(self._offers) > 10_000:  # unanswered for long: forget the oldest
                for old in list(self._offers)[:1000]:
                    del self._offers[old]
            self._offers[game_id] = target

    def answer(self, game_id: str, target: str) -> bool:
        with self._lock:
            if self._offers.get(game_id) != target:
                return False
            del self._offers[game_id]
            return True

    def add(self, bot: Bot) -> None:
        with self._lock:
            if any(b.name.lower() == bot.name.lower() for b in self._bots.values()):
                raise BotError("conflict", "that bot name is taken")
            self._bots[bot.player] = Bot.from_json(bot.to_json())

    def _find(self, test) -> Bot | None:
        with self._lock:
            found = next((b for b in self._bots.values() if test(b)), None)
            return Bot.from_json(found.to_json()) if found else None

    def by_name(self, name: str) -> Bot | None:
        return self._find(lambda b: b.name.lower() == name.lower())

    def by_token(self, token_hash: str) -> Bot | None:
        return self._find(lambda b: b.token_hash == token_hash)

    def by_player(self, player: str) -> Bot | None:
        return self._find(lambda b: b.player == player)

    def all(self) -> list[Bot]:
        with self._lock:
            return sorted((Bot.from_json(b.to_json()) for b in self._bots.values()),
                          key=lambda b: b.name.lower())

    def revoke(self, name: str) -> bool:
        with self._lock:
            for bot in self._bots.values():
                if bot.name.lower() == name.lower():
                    bot.revoked = True
                    return True
            return False

    def rate(self, game_id: str, x: str, o: str, winner: str | None) -> bool:
        with self._lock:
            if game_id in self._rated or x not in self._bots or o not in self._bots or x == o:
                return False
            self._rated.add(game_id)
            _rated(self._bots[x], self._bots[o], winner)
            return True


SCHEMA = """
CREATE TABLE IF NOT EXISTS bots (
    player TEXT PRIMARY KEY,
    name_key TEXT NOT NULL UNIQUE,
    token_hash TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS bot_games (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS bot_challenges (id TEXT PRIMARY KEY, target TEXT NOT NULL,
                                           made REAL NOT NULL);
"""


class SqliteBook:
    """Bots in two tables of the game store's SQLite file."""

    def __init__(self, path: str, pool_size: int = 4) -> None:
        self.path = path
        self._pool = Connections(path, pool_size, wal=False)  # the store set the file's mode
        self._conn = self._pool.take
        with self._conn() as conn:
            conn.executescript(SCHEMA)

    def _one(self, where: str, value: str) -> Bot | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT body FROM bots WHERE {where} = ?", (value,)).fetchone()
        return Bot.from_json(json.loads(row[0])) if row else None

    def add(self, bot: Bot) -> None:
        with self._conn() as conn:
            try:
                conn.execute("INSERT INTO bots (player, name_key, token_hash, body) "
                             "VALUES (?, ?, ?, ?)", (bot.player, bot.name.lower(),
                                                     bot.token_hash, json.dumps(bot.to_json())))
            except sqlite3.IntegrityError:
                raise BotError("conflict", "that bot name is taken") from None

    def offer(self, game_id: str, target: str) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM bot_challenges WHERE made < ?", (time.time() - 86400,))
            conn.execute("INSERT OR REPLACE INTO bot_challenges (id, target, made) "
                         "VALUES (?, ?, ?)", (game_id, target, time.time()))

    def answer(self, game_id: str, target: str) -> bool:
        with self._conn() as conn:
            return conn.execute("DELETE FROM bot_challenges WHERE id = ? AND target = ?",
                                (game_id, target)).rowcount == 1

    def by_name(self, name: str) -> Bot | None:
        return self._one("name_key", name.lower())

    def by_token(self, token_hash: str) -> Bot | None:
        return self._one("token_hash", token_hash)

    def by_player(self, player: str) -> Bot | None:
        return self._one("player", player)

    def all(self) -> list[Bot]:
        with self._conn() as conn:
            rows = conn.execute("SELECT body FROM bots ORDER BY name_key").fetchall()
        return [Bot.from_json(json.loads(r[0])) for r in rows]

    def _write(self, conn: sqlite3.Connection, bot: Bot) -> None:
        conn.execute("UPDATE bots SET body = ? WHERE player = ?",
                     (json.dumps(bot.to_json()), bot.player))

    def revoke(self, name: str) -> bool:
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT body FROM bots WHERE name_key = ?",
                                   (name.lower(),)).fetchone()
                if row:
                    bot = Bot.from_json(json.loads(row[0]))
                    bot.revoked = True
                    self._write(conn, bot)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return row is not None

    def rate(self, game_id: str, x: str, o: str, winner: str | None) -> bool:
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                bots = {p: conn.execute("SELECT body FROM bots WHERE player = ?",
                                        (p,)).fetchone() for p in (x, o)}
                if x == o or None in bots.values() or conn.execute(
                        "INSERT OR IGNORE INTO bot_games (id) VALUES (?)",
                        (game_id,)).rowcount != 1:
                    conn.execute("ROLLBACK")
                    return False
                bx, bo = (Bot.from_json(json.loads(bots[p][0])) for p in (x, o))
                _rated(bx, bo, winner)
                self._write(conn, bx)
                self._write(conn, bo)
                conn.execute("COMMIT")
                return True
            except BaseException:
                conn.execute("ROLLBACK")
                raise


class RedisBook:
    """Bots in the game store's Redis database: one JSON string per bot and two indexes."""

    PREFIX = "ttt:bot:"

    def __init__(self, url: str) -> None:
        import redis

        self._redis_errors = (redis.WatchError,)
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5,
                                          socket_connect_timeout=2)

    def _key(self, kind: str, value: str) -> str:
        return f"{self.PREFIX}{kind}:{value}"

    def _get(self, player: str | None) -> Bot | None:
        body = self.redis.get(self._key("id", player)) if player else None
        return Bot.from_json(json.loads(body)) if body else None

    def add(self, bot: Bot) -> None:
        # The name index is claimed first, atomically: two makers of one name cannot both win.
        if not self.redis.set(self._key("name", bot.name.lower()), bot.player, nx=True):
            raise BotError("conflict", "that bot name is taken")
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(self._key("id", bot.player), json.dumps(bot.to_json()))
        pipe.set(self._key("token", bot.token_hash), bot.player)
        pipe.sadd(f"{self.PREFIX}all", bot.player)
        pipe.execute()

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
            return True

        return self._change([player], change)

    def rate(self, game_id: str, x: str, o: str, winner: str | None) -> bool:
        if x == o:
            return False
        # Claimed first: of all the processes that see the game end, one rates it.
        if not self.redis.set(f"{self.PREFIX}game:{game_id}", 1, nx=True, ex=30 * 24 * 3600):
            return False

        def change(pipe, bots):
            if None in bots:
                return False
            _rated(bots[0], bots[1], winner)
            return True

        return self._change([x, o], change)


def open_book(store: Any) -> Book:
    """The bot book beside a game store (the same SQLite file or Redis database)."""
    store = getattr(store, "wrapped", store)  # a MeteredStore counts calls to the real one
    kind = type(store).__name__
    if kind == "SqliteStore":
        return SqliteBook(store.path)
    if kind == "RedisStore":
        return RedisBook(store.url)
    return MemoryBook()
