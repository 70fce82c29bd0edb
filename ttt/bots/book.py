"""Where bots live, beside the player profiles: a `bots` table or collection in each store.

`open_book(store)` gives the book that sits beside a game store: a dict for `memory://`,
two tables in the same SQLite file, keys in the same Redis database. Names are unique
case-insensitively, and the store decides it: each `add` checks the name (and the maker's
cap of live bots) in the same step that writes the bot, so of two makers of one name at
once exactly one wins. A bot-versus-bot game is rated once, whoever reports it first.
`register` is the one way a bot is made, from the command line or from the site.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

from ttt.bots import (
    Bot,
    BotError,
    check_about,
    check_name,
    check_variants,
    hash_token,
    new_player_id,
    new_token,
)
from ttt.bots.book_rules import (
    HISTORY_KEEP,
    HISTORY_PAGE,
    TAKEN,
    apply_result,
    page_of,
    too_many_bots,
)
from ttt.bots.names import check_not_posing
from ttt.store import StoreUnavailable
from ttt.store.sqlite_faults import rollback_if_open, unavailable
from ttt.store.sqlite_pool import Connections


class Book(Protocol):
    """What the API and the ladder need from bot storage."""

    def remember(self, player: str, entry: dict[str, Any]) -> None:
        """One finished game in a bot's history (PROTOCOL v5), once per game id."""
        ...

    def history(self, player: str, before: str | None = None,
                limit: int = HISTORY_PAGE) -> list[dict[str, Any]]:
        """A bot's finished games, newest first, from the one after `before` (a game id)."""
        ...

    def note_failure(self, player: str, game_id: str, failure: dict[str, str]) -> None:
        """What went wrong with the bot's move in that game (its SDK says, when resigning)."""
        ...

    def failures(self, player: str, game_ids: list[str]) -> dict[str, dict[str, str]]:
        """The failures noted for these games of the bot (its owner sees them)."""
        ...

    def add(self, bot: Bot, limit: int = 0) -> None:
        """Keep a new bot; BotError('conflict') when its name is taken (in any case), and
        BotError('not_allowed') when its maker already has `limit` live bots (0: no cap)."""

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

    def rate(self, game_id: str, x: str, o: str, winner: str | None,
             variant: str = "classic") -> bool:
        """Count a finished bot-versus-bot game (player ids of X and O) once, in its variant's
        rating; whether now. A game marked casual is never counted."""

    def set_variants(self, player: str, variants: list[str]) -> Bot | None:
        """Say which variants that bot plays; the bot as now stored (None: no such bot)."""

    def mark_casual(self, game_id: str) -> None:
        """That game is casual: no rating, no record."""

    def casual(self, game_id: str) -> bool:
        """Whether that game was marked casual."""

    def offer(self, game_id: str, target: str) -> None:
        """Keep a challenge: the game `target` (a bot's player id) may accept or decline."""

    def answer(self, game_id: str, target: str) -> bool:
        """Take the challenge of that game away if it was `target`'s; whether it was."""


def register(book: Book, store: Any, name: Any, about: Any, owner: str, maker: str = "",
             limit: int = 0, variants: Any = ("classic",)) -> tuple[Bot, str]:
    """Make a bot: its name and about checked, its token made, the bot kept (name unique,
    the maker's cap checked, in one step of the book) and its seats' name set. The bot and
    its token, which is never kept: the caller shows it once."""
    name, about = check_name(name), check_about(about)
    variants = check_variants(list(variants) if isinstance(variants, tuple) else variants)
    check_not_posing(name, (other.name for other in book.all()))  # ttt.bots.names
    token = new_token()
    bot = Bot(player=new_player_id(), name=name, token_hash=hash_token(token), about=about,
              owner=owner, maker=maker, created=time.time(), variants=variants)
    book.add(bot, limit)
    store.set_name(bot.player, name)  # the name its seats show, like a person's
    return bot, token


class MemoryBook:
    """Bots in this process's memory."""

    def __init__(self) -> None:
        self._histories: dict[str, list[dict[str, Any]]] = {}
        self._failures: dict[str, dict[str, dict[str, str]]] = {}
        self._lock = threading.Lock()
        self._bots: dict[str, Bot] = {}
        self._rated: set[str] = set()
        self._offers: dict[str, str] = {}
        self._casual: set[str] = set()

    def remember(self, player: str, entry: dict[str, Any]) -> None:
        with self._lock:
            games = self._histories.setdefault(player, [])
            if all(old["id"] != entry["id"] for old in games[:50]):
                games.insert(0, dict(entry))
                del games[HISTORY_KEEP:]

    def history(self, player: str, before: str | None = None,
                limit: int = HISTORY_PAGE) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(e) for e in page_of(self._histories.get(player, []), before, limit)]

    def note_failure(self, player: str, game_id: str, failure: dict[str, str]) -> None:
        with self._lock:
            noted = self._failures.setdefault(player, {})
            noted[game_id] = dict(failure)
            while len(noted) > HISTORY_KEEP:
                del noted[next(iter(noted))]

    def failures(self, player: str, game_ids: list[str]) -> dict[str, dict[str, str]]:
        with self._lock:
            noted = self._failures.get(player, {})
            return {g: dict(noted[g]) for g in game_ids if g in noted}

    def mark_casual(self, game_id: str) -> None:
        with self._lock:
            self._casual.add(game_id)

    def casual(self, game_id: str) -> bool:
        with self._lock:
            return game_id in self._casual

    def set_variants(self, player: str, variants: list[str]) -> Bot | None:
        with self._lock:
            bot = self._bots.get(player)
            if bot is None:
                return None
            bot.variants = list(variants)
            return Bot.from_json(bot.to_json())

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

    def add(self, bot: Bot, limit: int = 0) -> None:
        with self._lock:
            if any(b.name.lower() == bot.name.lower() for b in self._bots.values()):
                raise BotError("conflict", TAKEN)
            if limit and bot.maker and sum(b.maker == bot.maker and not b.revoked
                                           for b in self._bots.values()) >= limit:
                raise too_many_bots(limit)
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

    def rate(self, game_id: str, x: str, o: str, winner: str | None,
             variant: str = "classic") -> bool:
        with self._lock:
            if (game_id in self._rated or game_id in self._casual or x not in self._bots
                    or o not in self._bots or x == o):
                return False
            self._rated.add(game_id)
            apply_result(self._bots[x], self._bots[o], winner, variant)
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
CREATE TABLE IF NOT EXISTS bot_casual (id TEXT PRIMARY KEY, made REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bot_history (seq INTEGER PRIMARY KEY AUTOINCREMENT,
                                        player TEXT NOT NULL, id TEXT NOT NULL,
                                        body TEXT NOT NULL, UNIQUE (player, id));
CREATE TABLE IF NOT EXISTS bot_failures (player TEXT NOT NULL, id TEXT NOT NULL,
                                         body TEXT NOT NULL, made REAL NOT NULL,
                                         PRIMARY KEY (player, id));
"""


class SqliteBook:
    """Bots in two tables of the game store's SQLite file."""

    def __init__(self, path: str, pool_size: int = 4) -> None:
        self.path = path
        self._pool = Connections(path, pool_size, wal=False)  # the store set the file's mode
        with self._conn() as conn:
            conn.executescript(SCHEMA)

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        """A pooled connection; a full, read-only or locked file is StoreUnavailable (the
        bot API answers 503 `unavailable`), as in the game store."""
        try:
            with self._pool.take() as conn:
                yield conn
        except sqlite3.Error as error:
            if not unavailable(error):
                raise
            raise StoreUnavailable(f"the bot book: {error}") from error

    def _one(self, where: str, value: str) -> Bot | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT body FROM bots WHERE {where} = ?", (value,)).fetchone()
        return Bot.from_json(json.loads(row[0])) if row else None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A connection in a write transaction (BEGIN IMMEDIATE: writers take turns, across
        processes too), committed after the block, rolled back if it raises."""
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                rollback_if_open(conn)
                raise
            conn.execute("COMMIT")

    def add(self, bot: Bot, limit: int = 0) -> None:
        # The name's UNIQUE index decides a race; the cap is counted in the same transaction.
        with self._transaction() as conn:
            if limit and bot.maker and conn.execute(
                    "SELECT COUNT(*) FROM bots WHERE json_extract(body, '$.maker') = ? "
                    "AND json_extract(body, '$.revoked') = 0", (bot.maker,)).fetchone()[0] >= limit:
                raise too_many_bots(limit)
            try:
                conn.execute("INSERT INTO bots (player, name_key, token_hash, body) "
                             "VALUES (?, ?, ?, ?)", (bot.player, bot.name.lower(),
                                                     bot.token_hash, json.dumps(bot.to_json())))
            except sqlite3.IntegrityError:
                raise BotError("conflict", TAKEN) from None

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
        with self._transaction() as conn:
            row = conn.execute("SELECT body FROM bots WHERE name_key = ?",
                               (name.lower(),)).fetchone()
            if row:
                bot = Bot.from_json(json.loads(row[0]))
                bot.revoked = True
                self._write(conn, bot)
        return row is not None

    def remember(self, player: str, entry: dict[str, Any]) -> None:
        with self._conn() as conn:
            conn.execute("INSERT OR IGNORE INTO bot_history (player, id, body) VALUES (?, ?, ?)",
                         (player, entry["id"], json.dumps(entry)))
            conn.execute("DELETE FROM bot_history WHERE player = ? AND seq <= (SELECT seq FROM "
                         "bot_history WHERE player = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                         (player, player, HISTORY_KEEP))

    def history(self, player: str, before: str | None = None,
                limit: int = HISTORY_PAGE) -> list[dict[str, Any]]:
        with self._conn() as conn:
            if before is None:
                rows = conn.execute("SELECT body FROM bot_history WHERE player = ? "
                                    "ORDER BY seq DESC LIMIT ?", (player, max(1, limit)))
            else:
                rows = conn.execute(
                    "SELECT body FROM bot_history WHERE player = ? AND seq < (SELECT seq FROM "
                    "bot_history WHERE player = ? AND id = ?) ORDER BY seq DESC LIMIT ?",
                    (player, player, before, max(1, limit)))
            return [json.loads(row[0]) for row in rows.fetchall()]

    def note_failure(self, player: str, game_id: str, failure: dict[str, str]) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM bot_failures WHERE made < ?", (time.time() - 90 * 86400,))
            conn.execute("INSERT OR REPLACE INTO bot_failures (player, id, body, made) "
                         "VALUES (?, ?, ?, ?)", (player, game_id, json.dumps(failure),
                                                 time.time()))

    def failures(self, player: str, game_ids: list[str]) -> dict[str, dict[str, str]]:
        if not game_ids:
            return {}
        marks = ", ".join("?" * len(game_ids))
        with self._conn() as conn:
            rows = conn.execute(f"SELECT id, body FROM bot_failures WHERE player = ? "  # noqa: S608
                                f"AND id IN ({marks})", (player, *game_ids)).fetchall()
        return {row[0]: json.loads(row[1]) for row in rows}

    def mark_casual(self, game_id: str) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM bot_casual WHERE made < ?", (time.time() - 30 * 86400,))
            conn.execute("INSERT OR REPLACE INTO bot_casual (id, made) VALUES (?, ?)",
                         (game_id, time.time()))

    def casual(self, game_id: str) -> bool:
        with self._conn() as conn:
            return conn.execute("SELECT 1 FROM bot_casual WHERE id = ?",
                                (game_id,)).fetchone() is not None

    def set_variants(self, player: str, variants: list[str]) -> Bot | None:
        with self._transaction() as conn:
            row = conn.execute("SELECT body FROM bots WHERE player = ?", (player,)).fetchone()
            if row is None:
                return None
            bot = Bot.from_json(json.loads(row[0]))
            bot.variants = list(variants)
            self._write(conn, bot)
        return bot

    def rate(self, game_id: str, x: str, o: str, winner: str | None,
             variant: str = "classic") -> bool:
        with self._transaction() as conn:
            bots = {p: conn.execute("SELECT body FROM bots WHERE player = ?",
                                    (p,)).fetchone() for p in (x, o)}
            if conn.execute("SELECT 1 FROM bot_casual WHERE id = ?", (game_id,)).fetchone():
                return False
            if x == o or None in bots.values() or conn.execute(
                    "INSERT OR IGNORE INTO bot_games (id) VALUES (?)",
                    (game_id,)).rowcount != 1:
                return False  # nothing written: the commit is empty
            bx, bo = (Bot.from_json(json.loads(bots[p][0])) for p in (x, o))
            apply_result(bx, bo, winner, variant)
            self._write(conn, bx)
            self._write(conn, bo)
            return True


def open_book(store: Any) -> Book:
    """The bot book beside a game store, chosen by the store's URL (the same SQLite file or
    Redis database; a store that names no URL keeps its bots in memory)."""
    return book_at(getattr(store, "url", "memory://"))


def book_at(url: str) -> Book:
    """The bot book at a store URL: memory://, sqlite:///path or redis://host:port/db."""
    if url.startswith("sqlite:///"):
        return SqliteBook(url.removeprefix("sqlite:///"))
    if url.startswith(("redis://", "rediss://", "unix://")):
        from ttt.bots.redis_book import open_redis_book

        return open_redis_book(url)
    return MemoryBook()
