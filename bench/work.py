"""Machine instructions per event, counted by valgrind: a CPU figure a busy machine cannot blur.

    python -m bench.work [--ref PATH|REV] [--server-root PATH] [--events 400] [--base 50]

Each tree's app (SQLite store in a temporary directory, rate limit off, an INFO log to
/dev/null as a served process writes its access lines) plays perfect-AI games through the
Socket.IO test client: `new_game`, then random legal moves (seeded dice for the player and
the AI, so both trees play the same games), under `valgrind --tool=callgrind`, once with
`--base` events and once with `--base + --events`; the difference over `--events` is the
instructions one event costs, import and start-up left out. Everything but the network runs:
python-socketio's packets, the handlers and their wrappers, the table, the store, the log
line, the metrics. Slow (valgrind runs Python some 50 times slower: minutes per tree) and
exact to a few tenths of a percent run to run; needs `valgrind` (Debian: apt-get install
valgrind). Timings stay with `make bench-server`; this says whether the work grew.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# The game, in the tree under test (run as a script by valgrind's Python).
PLAY = r"""
import logging, os, random, sys, tempfile
root, events = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, root)
os.chdir(root)
from ttt.web import create_app, get_socketio
place = tempfile.mkdtemp(prefix="ttt-work-")
app = create_app({"TESTING": True, "SECRET_KEY": "work", "TTT_RATE_LIMIT": 0,
                  "TTT_STORE": f"sqlite:///{place}/games.sqlite3"})
handler = logging.StreamHandler(open(os.devnull, "w"))
try:
    from ttt.web.ops import logs
    try:  # INFO lines batched, as a served process writes them (ttt.runtime.loglines)
        handler = logs._Ours(open(os.devnull, "w"), 0.1)
    except TypeError:
        handler = logs._Ours(open(os.devnull, "w"))
    handler.setFormatter(logs.TextFormatter())
except (ImportError, AttributeError):
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
logging.getLogger().addHandler(handler)
logging.getLogger().setLevel(logging.INFO)
app.extensions["ttt_table"].rng = random.Random(7)
flask_client = app.test_client()
flask_client.get("/")
sio = get_socketio(app).test_client(app, flask_test_client=flask_client)
if "gc.freeze()" in open(os.path.join(root, "app.py")).read():  # as that tree serves
    import gc
    gc.collect()
    gc.freeze()
dice, game = random.Random(1), None
for _ in range(events):
    if game is None or game["status"] != "playing":
        game = sio.emit("new_game", {"mode": "ai", "you": "X", "level": "perfect"},
                        callback=True)["game"]
    else:
        cells = [i for i, c in enumerate(game["board"]) if c == "."]
        game = sio.emit("move", {"game": game["id"], "cell": dice.choice(cells)},
                        callback=True)["game"]
"""


def instructions(root: Path, events: int) -> int:
    """Instructions valgrind counted for a whole run of `events` events in `root`'s app."""
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"ttt-work-{os.getpid()}.py"
    script.write_text(PLAY)
    try:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
             str(script), str(root), str(events)],
            capture_output=True, text=True, timeout=3600, check=False)
    finally:
        script.unlink(missing_ok=True)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"valgrind on {root} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_event(root: Path, base: int, events: int) -> float:
    return (instructions(root, base + events) - instructions(root, base)) / events


def main(argv: list[str] | None = None) -> int:
    from bench.checkouts import checkout, source_state

    parser = argparse.ArgumentParser(prog="bench.work", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", help="compare with this checkout: a path or a git revision")
    parser.add_argument("--server-root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--events", type=int, default=400, help="events counted per tree")
    parser.add_argument("--base", type=int, default=50, help="events of the start-up run")
    args = parser.parse_args(argv)
    if not shutil.which("valgrind"):
        parser.error("needs valgrind (apt-get install valgrind)")
    if not 1 <= args.events <= 100_000 or not 1 <= args.base <= 10_000:
        parser.error("--events 1..100000, --base 1..10000")
    trees = [("new", args.server_root.resolve())]
    with (checkout(args.ref) if args.ref else _nothing()) as ref:
        if ref is not None:
            trees.insert(0, ("ref", ref))
        figures = {}
        for name, root in trees:
            print(f"  [work] {name}: {root} ({args.base} and {args.base + args.events} events "
                  "under valgrind; minutes)", file=sys.stderr, flush=True)
            figures[name] = (per_event(root, args.base, args.events), source_state(root))
    print(f"ttt bench-work: machine instructions per event (callgrind), {args.events} events "
          "of perfect-AI games in-process (new_game and moves), SQLite store, access log on")
    for name, (count, state) in figures.items():
        print(f"  {name:<4} {count / 1000:9.1f} k instructions/event   {state}")
    if "ref" in figures:
        print(f"  new/ref: {figures['new'][0] / figures['ref'][0]:.3f}")
    return 0


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
