"""The master is built from parts, not mixins (issue 36, part 1): `Table` holds its views, the
AI's turns, the endings off the board and the clocks, and hands each what it needs; none of
them inherits from another, and the views never import the table."""

from __future__ import annotations

import ast
import random
from pathlib import Path

from ttt.master.ai_turns import AiTurns
from ttt.master.clocks import Clocks
from ttt.master.endgame import Endgame
from ttt.master.limits import Limits
from ttt.master.presence import Presence
from ttt.master.table import Table
from ttt.master.views import Views
from ttt.pool.thinker import Inline
from ttt.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
PARTS = (Views, AiTurns, Endgame, Clocks)


def imported(path: Path) -> set[str]:
    """Every module a file names in an import, wherever the import is."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_table_and_its_parts_inherit_from_none_of_each_other():
    for cls in (Table, *PARTS):
        assert cls.__mro__ == (cls, object), f"{cls.__name__} inherits {cls.__mro__[1:-1]}"


def test_the_table_holds_one_of_each_part():
    table = Table(MemoryStore(), Presence())
    assert isinstance(table.views, Views)
    assert isinstance(table.ai, AiTurns)
    assert isinstance(table.endgame, Endgame)
    assert isinstance(table.clocks, Clocks)
    assert table.ai.views is table.views and table.endgame.views is table.views
    assert table.clocks.views is table.views


def test_no_part_imports_the_table():
    for module in ("views", "ai_turns", "endgame", "clocks", "limits"):
        assert "ttt.master.table" not in imported(ROOT / "ttt" / "master" / f"{module}.py"), module


def test_limits_live_with_the_limiter():
    assert Limits.__module__ == "ttt.master.limits"


def test_what_is_set_on_the_table_after_it_is_built_reaches_every_part_through_its_services():
    """Issue 43: no `HANDED`, no `__setattr__`: a collaborator handed later makes new
    services, and every part is built again on them (none holds the table)."""
    table = Table(MemoryStore(), Presence())
    thinker, presence, rng = Inline(), Presence(), random.Random(1)
    limits = Limits(claim_after=7.0)

    def clock() -> float:
        return 1000.0

    def publish(pushes: list) -> None:
        """Where a test's AI moves go."""

    def searched(seconds: float) -> None:
        """A test's metrics."""

    watching = table.views.watching
    table.thinker, table.presence, table.rng, table.limits = thinker, presence, rng, limits
    table.clock, table.publish, table.searched, table.answer_wait = clock, publish, searched, 0.2
    services = table.services
    assert (services.thinker, services.presence, services.rng, services.limits) == (
        thinker, presence, rng, limits)
    assert (services.clock, services.publish, services.searched, services.answer_wait) == (
        clock, publish, searched, 0.2)
    for part in (table.views, table.ai, table.endgame, table.clocks):
        assert part.services is services, part
    assert table.views.watching is watching and watching.clock is clock  # its state kept
    assert table.config()["claim_after"] == 7.0  # the views read the new limits


def test_no_part_holds_the_table_or_a_callback_into_it():
    table = Table(MemoryStore(), Presence())
    for part in (table.views, table.ai, table.endgame, table.clocks):
        for value in vars(part).values():
            assert value is not table and getattr(value, "__self__", None) is not table, part
    assert "__setattr__" not in vars(Table) and not hasattr(Table, "HANDED")
