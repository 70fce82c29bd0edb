"""A real server that sends odd but valid values, for tests/browser/test_page_reads.py:
`python tests/support/odd_app.py --port P`.

The page must show exactly what it is sent, not what it would have worked out itself:
- `config.claim_after` is 7 (TTT_CLAIM_AFTER in its environment);
- `config` offers a classic level no real server has, "grandmaster", with its own record row;
- an ultimate view's `targets` differ from `next`: the boards two and six along from it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app import serve_until_term  # noqa: E402 (the repository first)
from ttt.web import create_app  # noqa: E402

ODD_LEVEL = "grandmaster"
ODD_ROW = "grandmaster-row"


def odd_targets(game: dict[str, Any]) -> list[int] | None:
    """The `targets` this server sends instead of the rules' (None: the rules')."""
    if game.get("variant") != "ultimate" or game.get("next") is None:
        return None
    return sorted({(game["next"] + 2) % 9, (game["next"] + 6) % 9})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = create_app()
    table = app.extensions["ttt_table"]
    plain_config, plain_view = table.views.config, table.views.view

    def config() -> dict[str, Any]:
        sent = plain_config()
        classic = sent["variants"]["classic"]
        classic["levels"].append(ODD_LEVEL)
        classic.setdefault("records", {})[ODD_LEVEL] = ODD_ROW
        return sent

    def view(match, role: str) -> dict[str, Any]:
        game = plain_view(match, role)
        targets = odd_targets(game)
        if targets is not None:
            game["targets"] = targets
        return game

    table.views.config, table.views.view = config, view
    serve_until_term(app, "127.0.0.1", args.port)


if __name__ == "__main__":
    main()
