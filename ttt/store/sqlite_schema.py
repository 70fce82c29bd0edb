"""The SQLite file's tables, and the migration that brings a file from an older release
up to them (in place, at start-up, once: the file records its version in `PRAGMA
user_version` and each migration in the `migrations` table; see ttt/store/schema.py)."""

from __future__ import annotations

import sqlite3
import time

from ttt.runtime import fingerprint
from ttt.store.schema import READABLE_FROM, SCHEMA_VERSION, check

SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    rev INTEGER NOT NULL,
    updated REAL NOT NULL,
    live INTEGER NOT NULL,
    seat_x TEXT,
    seat_o TEXT,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS players (
    id TEXT PRIMARY KEY,
    current TEXT,
    record TEXT
);
"""
# Columns added after the first release: added in place to an existing file.
COLUMNS = {
    "games": {"untouched": "INTEGER NOT NULL DEFAULT 0", "created": "REAL",
              "deadline": "REAL", "origin": "TEXT", "mode": "TEXT", "variant": "TEXT"},
    "players": {"name": "TEXT", "seen": "REAL"},
}
# No index on `updated`: every move changes it, and rewriting that index cost more than the
# rest of the commit; only the purge, every ten minutes, reads it (a scan).
# games_live_kind (live, mode, variant) replaced games_live (live): the live count, in all
# and per kind, is read from it alone (covering: no game row visited). A move does not write
# it: mode and variant never change, and `live` changes once, when the game ends.
INDEXES = """
DROP INDEX IF EXISTS games_updated;
DROP INDEX IF EXISTS games_live;
CREATE INDEX IF NOT EXISTS games_live_x ON games (seat_x) WHERE live = 1;
CREATE INDEX IF NOT EXISTS games_live_o ON games (seat_o) WHERE live = 1;
CREATE INDEX IF NOT EXISTS games_live_kind ON games (live, mode, variant) WHERE live = 1;
CREATE INDEX IF NOT EXISTS games_untouched ON games (created) WHERE untouched = 1;
CREATE INDEX IF NOT EXISTS games_deadline ON games (deadline) WHERE deadline IS NOT NULL;
CREATE INDEX IF NOT EXISTS players_seen ON players (seen);
CREATE INDEX IF NOT EXISTS games_live_origin ON games (origin) WHERE live = 1;
"""
# When a server process was last seen up (clocks resume from it after an outage).
BEATS = "CREATE TABLE IF NOT EXISTS beats (name TEXT PRIMARY KEY, at REAL NOT NULL);"
# A game's kind, for the rows written before the columns existed (the body always had the
# mode; a body without a variant is a classic game, as codec.from_json reads it).
FILL_KIND = ("UPDATE games SET mode = json_extract(body, '$.mode'), "
             "variant = coalesce(json_extract(body, '$.variant'), 'classic') WHERE mode IS NULL")


# One row per migration run on this file: which version, when, by which release.
MIGRATIONS = ("CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, "
              "readable_from INTEGER NOT NULL, at REAL NOT NULL, release TEXT)")


def version(conn: sqlite3.Connection) -> tuple[int, int]:
    """The file's schema version and the oldest code version that can read it."""
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    row = None
    if found:
        try:
            row = conn.execute("SELECT readable_from FROM migrations WHERE version = ?",
                               (found,)).fetchone()
        except sqlite3.OperationalError:  # no migrations table: nothing says it is readable
            row = None
    return found, (row[0] if row else found)


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the file to SCHEMA_VERSION, once: create the tables, add the columns and indexes
    a file from an older release lacks (filled in the same transaction: a process that starts
    meanwhile finds them complete), record it. Refuse a file newer than this code reads."""
    check("sqlite", *version(conn))
    if version(conn)[0] >= SCHEMA_VERSION:
        return  # already migrated (by this release, or a newer one that we can still read)
    conn.executescript(SCHEMA)
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if found < SCHEMA_VERSION:  # not done by another process while we waited
            added = _add_columns(conn)
            if "games.mode" in added:
                conn.execute(FILL_KIND)
            for statement in (*INDEXES.split(";"), BEATS, MIGRATIONS):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT OR REPLACE INTO migrations VALUES (?, ?, ?, ?)",
                         (SCHEMA_VERSION, READABLE_FROM, time.time(), fingerprint.release()))
            conn.execute(f"PRAGMA user_version = {int(SCHEMA_VERSION)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _add_columns(conn: sqlite3.Connection) -> set[str]:
    """Add the COLUMNS a table lacks; the ones added, as `table.column`."""
    added = set()
    for table, columns in COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                added.add(f"{table}.{name}")
    return added
