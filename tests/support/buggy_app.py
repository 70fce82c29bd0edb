"""A real server with one bug planted, for the drills (tests/deploy/test_drill.py): the `resign`
event raises, as a bug in its handler would. `python tests/support/buggy_app.py --port P`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app import serve_until_term  # noqa: E402 (the repository first)
from ttt.web import create_app  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = create_app()
    table = app.extensions["ttt_table"]
    plain = table.handle

    def handle(name, *args, **kwargs):
        if name == "resign":
            raise RuntimeError("a planted bug")
        return plain(name, *args, **kwargs)

    table.handle = handle
    serve_until_term(app, "127.0.0.1", args.port)


if __name__ == "__main__":
    main()
