"""The engine, the match model and the master stay free of the web, the database and Redis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PURE_MODULES = ("ttt.rules", "ttt.solver", "ttt.players", "ttt.analysis", "ttt.match",
                "ttt.endings", "ttt.wire", "ttt.table", "ttt.replies", "ttt.views",
                "ttt.ai_turns", "ttt.endgame", "ttt.clocks", "ttt.payloads", "ttt.ultimate",
                "ttt.mcts", "ttt.mcts_position", "ttt.mcts_search", "ttt.mcts_trees",
                "ttt.mcts_book", "ttt.variants", "ttt.store", "ttt.store.codec", "ttt.dice",
                "ttt.loglines")
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


# --- ttt/web/ in rooms (issue 36): which room may import which -------------------------------

ROOMS = ("transport", "realtime", "http", "ops")
# What each room may import of the others (besides itself, and ttt.web's own modules):
# the transport sits under the game, the real-time side under the pages; settings, logs and
# metrics are leaves every room uses, and health reads the transport's queue listener.
MAY_IMPORT = {
    "transport": {"ops"},
    "realtime": {"transport", "ops"},
    "http": {"realtime", "transport", "ops"},
    "ops": {"transport"},
}
LEAVES = {"ttt.web.ops.settings", "ttt.web.ops.logs", "ttt.web.ops.metrics"}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[:2] == ["ttt", "web"] and parts[2] in ROOMS \
        else None


def test_each_room_of_the_web_layer_imports_only_the_rooms_below_it():
    from tests.test_import_cycles import graph

    found = graph()
    assert {room_of(m) for m in found} >= set(ROOMS), "the rooms of ttt/web/ moved"
    wrong = sorted(f"{m} -> {t}" for m, targets in found.items() for t in targets
                   if room_of(m) and room_of(t) and room_of(t) != room_of(m)
                   and room_of(t) not in MAY_IMPORT[room_of(m)])
    assert wrong == [], "\n".join(wrong)
    # The leaves import no other module of the web layer.
    leaning = sorted(f"{m} -> {t}" for m in LEAVES for t in found[m] if t.startswith("ttt.web"))
    assert leaning == [], "\n".join(leaning)
    # Only the factory (ttt.web) wires the HTTP side in; nothing below it reaches up.
    up = sorted(m for m, targets in found.items() if room_of(m) != "http"
                and any(room_of(t) == "http" for t in targets))
    assert up == ["ttt.web"], up
