"""Schema versions of the stores, shared by SQLite and Redis.

Each store records the version of the layout it holds (SQLite: `PRAGMA user_version`, Redis:
the `ttt:schema` hash) and, beside it, the oldest code that can still read and write that
layout (`readable_from`). A migration only ever adds (columns, indexes, keys): the code of
the release before keeps working on the new layout, which is what makes a rolling restart
(old and new processes on one store) and a rollback possible. A process refuses to start on
a store whose layout is newer than its code knows, unless that layout says the code can
still read it.

Version 0: no version recorded (releases before the versions). Version 1: this release's
layout (SQLite: every column of sqlite_schema.COLUMNS and its indexes; Redis: the per-kind
live indexes), readable by version-0 code.
"""

from __future__ import annotations

#: The layout this code writes; a store older than it is migrated at start-up.
SCHEMA_VERSION = 1
#: The oldest code that reads and writes this layout (every migration so far is additive).
READABLE_FROM = 0


class SchemaTooNew(RuntimeError):
    """The store was migrated by a newer release this code does not know how to read."""

    def __init__(self, store: str, found: int, readable_from: int) -> None:
        super().__init__(
            f"the {store} store has schema version {found}, readable by code of version "
            f"{readable_from} and later; this code knows version {SCHEMA_VERSION}: "
            "upgrade the code, or restore the backup taken before the upgrade "
            "(docs/deploy.md, 'Upgrades and rollbacks')")
        self.found, self.readable_from = found, readable_from


def check(store: str, found: int, readable_from: int) -> None:
    """Refuse a layout this code cannot read."""
    if found > SCHEMA_VERSION and readable_from > SCHEMA_VERSION:
        raise SchemaTooNew(store, found, readable_from)
