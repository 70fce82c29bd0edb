"""The engine, the match model and the master stay free of the web, the database and Redis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PURE_MODULES = (
    "ttt.runtime.fingerprint", "ttt.runtime.loglines", "ttt.runtime.jsonlog",
    "ttt.runtime.translation",
    "ttt.rules.classic", "ttt.rules.ultimate",
    "ttt.ai.solver", "ttt.ai.levels", "ttt.ai.analysis", "ttt.ai.randomness", "ttt.ai.mcts",
    "ttt.ai.mcts_position", "ttt.ai.mcts_search", "ttt.ai.mcts_trees", "ttt.ai.mcts_book",
    "ttt.game.variants", "ttt.game.match", "ttt.game.endings", "ttt.game.view",
    "ttt.store", "ttt.store.codec",
    "ttt.master.table", "ttt.master.replies", "ttt.master.views", "ttt.master.ai_turns",
    "ttt.master.endgame", "ttt.master.clocks", "ttt.master.payloads", "ttt.master.services",
    "ttt.master.steps", "ttt.master.creations",
)
FORBIDDEN = ("flask", "flask_socketio", "socketio", "engineio", "redis", "sqlite3")

PROBE = f"""
import json, sys
import {", ".join(PURE_MODULES)}
forbidden = {FORBIDDEN!r}
loaded = sorted(
    name for name in sys.modules
    if any(name == f or name.startswith(f + ".") for f in forbidden)
)
pure = sorted(m for m in {PURE_MODULES!r} if m in sys.modules)
print(json.dumps({{"loaded": loaded, "pure": pure}}))
"""


def test_engine_and_match_modules_import_no_web_database_or_redis_packages():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # The probe really imported every module it checks...
    assert report["pure"] == sorted(PURE_MODULES)
    # ...and none of them pulled in a web, database or Redis package.
    assert report["loaded"] == []


# --- the packages of ttt/ on floors ----------------------------------------------------------

# Bottom to top: a package imports its own modules and those of the floors below it, never one
# beside it or above it (docs/DESIGN.md, "The layout"). `ttt` (empty) and `ttt.__main__` (the
# command line) stand on top.
FLOORS = (("runtime",), ("rules",), ("ai",), ("game",), ("pool", "store"), ("bots",),
          ("master",), ("web",))
FLOOR = {package: level for level, packages in enumerate(FLOORS) for package in packages}
TOP = {"ttt", "ttt.__main__"}


def package_of(module: str) -> str:
    return module.split(".")[1]


def test_every_module_of_ttt_lives_in_a_package_of_a_floor():
    from tests.unit.test_import_cycles import modules

    loose = sorted(m for m in modules() if m not in TOP and package_of(m) not in FLOOR)
    assert loose == [], loose
    assert {package_of(m) for m in modules() if m not in TOP} == set(FLOOR)


def test_each_package_imports_only_the_floors_below_it():
    from tests.unit.test_import_cycles import graph

    found = graph(typed=True)  # imports only a type checker reads count too
    wrong = sorted(
        f"{m} -> {t}" for m, targets in found.items() if m not in TOP for t in targets
        if t in TOP or (package_of(t) != package_of(m)
                        and FLOOR[package_of(t)] >= FLOOR[package_of(m)]))
    assert wrong == [], "\n".join(wrong)


def test_the_ground_floor_needs_only_the_standard_library():
    probe = ("import sys, json\n"
             "before = set(sys.modules)\n"
             "import ttt.runtime.fingerprint, ttt.runtime.loglines, ttt.runtime.jsonlog, "
             "ttt.runtime.translation\n"
             "print(json.dumps(sorted({n.split('.')[0] for n in set(sys.modules) - before})))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout)) - {"ttt"}
    assert loaded <= set(sys.stdlib_module_names), sorted(loaded - set(sys.stdlib_module_names))


def test_modules_that_find_the_checkout_find_it_from_their_floor():
    """A module that names the checkout's root counts its folders up from where it stands: the
    code fingerprint hashes ROOT/ttt, and a worker process starts in ROOT."""
    from ttt import web
    from ttt.bots import cli
    from ttt.pool import workers
    from ttt.runtime import fingerprint
    from ttt.web.bots import pages

    assert fingerprint.ROOT == workers.ROOT == cli.ROOT == web.ROOT == ROOT
    assert pages.EXAMPLES.is_dir()


# --- ttt/web/ in rooms (issue 36): which room may import which -------------------------------

ROOMS = ("transport", "realtime", "http", "bots", "ops")
# What each room may import of the others (besides itself, and ttt.web's own modules):
# the transport sits under the game, the real-time side under the pages; settings, logs and
# metrics are leaves every room uses, and health reads the transport's queue listener.
MAY_IMPORT = {
    "transport": {"ops"},
    "realtime": {"transport", "ops"},
    "http": {"realtime", "transport", "ops"},
    "bots": {"http", "realtime", "transport", "ops"},
    "ops": {"transport"},
}
LEAVES = {"ttt.web.ops.settings", "ttt.web.ops.logs", "ttt.web.ops.metrics",
          "ttt.web.ops.collectors"}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["ttt", "web"] and parts[2] in ROOMS \
        else None


def test_each_room_of_the_web_layer_imports_only_the_rooms_below_it():
    from tests.unit.test_import_cycles import graph

    found = graph()
    assert {room_of(m) for m in found} >= set(ROOMS), "the rooms of ttt/web/ moved"
    wrong = sorted(f"{m} -> {t}" for m, targets in found.items() for t in targets
                   if room_of(m) and room_of(t) and room_of(t) != room_of(m)
                   and room_of(t) not in MAY_IMPORT[room_of(m)])
    assert wrong == [], "\n".join(wrong)
    # The leaves import no other module of the web layer (but one another).
    leaning = sorted(f"{m} -> {t}" for m in LEAVES for t in found[m]
                     if t.startswith("ttt.web") and t not in LEAVES)
    assert leaning == [], "\n".join(leaning)
    # Only the factory (ttt.web) and the bot room (its pages are pages) reach the HTTP side;
    # only the factory wires the bot room in.
    up = sorted(m for m, targets in found.items() if room_of(m) not in ("http", "bots")
                and any(room_of(t) == "http" for t in targets))
    assert up == ["ttt.web"], up
    wiring = sorted(m for m, targets in found.items() if room_of(m) != "bots"
                    and any(room_of(t) == "bots" for t in targets))
    assert wiring == ["ttt.web"], wiring


# --- rooms within size (issue 43) -----------------------------------------------------------

MODULE_LINES, SCRIPT_LINES, FUNCTION_LINES = 450, 300, 60
# Over their limit while other branches of issue 43 split them: each entry comes out as its
# split lands (the tests below fail on an entry that is within size again).
LONG_MODULES: set[str] = set()
LONG_SCRIPTS: set[str] = set()
LONG_FUNCTIONS: set[str] = set()


def lines_of(paths) -> dict[str, int]:
    return {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
            for p in paths}


def test_no_module_of_ttt_is_over_450_lines():
    sizes = lines_of(sorted((ROOT / "ttt").rglob("*.py")))
    over = {path: n for path, n in sizes.items() if n > MODULE_LINES}
    assert set(over) - LONG_MODULES == set(), over
    assert LONG_MODULES - set(over) == set(), "within size now: take it off LONG_MODULES"


def test_no_script_of_the_page_is_over_300_lines():
    sizes = lines_of(sorted((ROOT / "static" / "js").glob("*.js")))
    assert sizes, "the page's scripts moved"
    over = {path: n for path, n in sizes.items() if n > SCRIPT_LINES}
    assert set(over) - LONG_SCRIPTS == set(), over
    assert LONG_SCRIPTS - set(over) == set(), "within size now: take it off LONG_SCRIPTS"


def test_no_function_of_ttt_is_over_60_lines():
    import ast

    over = {}
    for path in sorted((ROOT / "ttt").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = node.end_lineno - first + 1
                if length > FUNCTION_LINES:
                    over[f"{path.relative_to(ROOT)}:{node.name}"] = length
    assert set(over) - LONG_FUNCTIONS == set(), over
    assert LONG_FUNCTIONS - set(over) == set(), "within size now: take it off LONG_FUNCTIONS"
