"""What every bot book decides the same way, whichever store it sits in: the words of a taken
name and of a full maker, and how one game's result moves two bots' ratings.

Its own module so each backend (`ttt.bots.book`, `ttt.bots.redis_book`) imports it and none
imports another back (tests/test_import_cycles.py).
"""

from __future__ import annotations

from typing import Any

from ttt.bots import Bot, BotError, elo, outcome_of
from ttt.runtime.translation import N_

TAKEN = N_("that bot name is taken")
HISTORY_PAGE = 20    # games a page of a bot's history (PROTOCOL v5)
HISTORY_KEEP = 1000  # games kept per bot (the oldest are forgotten)


def page_of(entries: list[dict[str, Any]], before: str | None, limit: int) -> list[dict[str, Any]]:
    """The page of a newest-first history that starts after the game `before`."""
    if before is not None:
        ids = [entry["id"] for entry in entries]
        entries = entries[ids.index(before) + 1:] if before in ids else []
    return entries[:max(1, limit)]


def too_many_bots(limit: int) -> BotError:
    # Translators: {limit} a number
    return BotError("not_allowed", N_("you have {limit} bots already: revoke one first"),
                    limit=limit)


def apply_result(x: Bot, o: Bot, winner: str | None, variant: str = "classic") -> None:
    """Apply one game's result to both bots (in place), in that variant's rating."""
    score = 0.5 if winner is None else 1.0 if winner == "X" else 0.0
    rx, ro = elo(x.rating_in(variant), o.rating_in(variant), score)
    x.set_rating(variant, rx)
    o.set_rating(variant, ro)
    x.vs_bots[outcome_of(winner, "X")] = x.vs_bots.get(outcome_of(winner, "X"), 0) + 1
    o.vs_bots[outcome_of(winner, "O")] = o.vs_bots.get(outcome_of(winner, "O"), 0) + 1
