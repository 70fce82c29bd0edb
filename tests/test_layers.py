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
                "ttt.mcts", "ttt.variants", "ttt.store", "ttt.store.codec")
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
