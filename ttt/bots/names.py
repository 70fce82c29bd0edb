"""Bot names that cannot pose: not as the site's AI, not as another bot.

A bot name is 3 to 24 ASCII letters, digits, '-' and '_' (`ttt.bots.check_name`). Two more
rules, checked when a bot is made:

- A name that is an AI level's name with decoration ("Perfectddaa", "Hard_AI", "AIperfect")
  reads as the site's own AI on a seat or in a list of bots: refused.
- A name whose *skeleton* is another bot's is refused: the skeleton is Unicode TR39's idea
  (map every character to the one it is mistaken for, then compare), cut down to what an ASCII
  name can hold: `I`, `1` and `l` look alike, so do `O`, `0` and `o`, `3` and `e`, `5` and
  `s`, `rn` and `m`, `vv` and `w`, `cl` and `d`; case, `-` and `_` do not tell names apart.

The check reads every bot's name (a few thousand at most, at the rate bots are made); two
confusable names made in the same instant could both pass, which the exact-name uniqueness
of the store does not cover: rare, harmless, and an operator can revoke one.
"""

from __future__ import annotations

from collections.abc import Iterable

from ttt.bots import BotError
from ttt.runtime.translation import N_

# Single characters first (before any lowercasing, so `I` is still the capital i).
_LOOKALIKE = str.maketrans({"I": "l", "1": "l", "O": "o", "0": "o", "3": "e", "5": "s",
                            "-": None, "_": None})
# Then pairs of letters read as one (TR39: "rn" -> "m", "vv" -> "w", "cl" -> "d").
_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))


def skeleton(name: str) -> str:
    """What a name looks like: two names with one skeleton are confusable."""
    shape = name.translate(_LOOKALIKE).lower()
    for pair, one in _PAIRS:
        shape = shape.replace(pair, one)
    return shape


def _levels() -> tuple[str, ...]:
    """The AI levels' names of every variant (the site's AI is named after them)."""
    from ttt.game.variants import VARIANTS

    return tuple(sorted({skeleton(level) for rules in VARIANTS.values()
                         for level in rules.levels}))


def poses_as_level(name: str) -> str | None:
    """The level a name poses as (its skeleton starts with one, after an optional "ai"
    or "the"), or None."""
    shape = skeleton(name)
    leads = {"", skeleton("the"), skeleton("ai"), skeleton("AI")}  # "AI" reads "al"
    for lead in leads:
        rest = shape.removeprefix(lead) if shape.startswith(lead) else ""
        if rest in leads - {""}:
            return "ai"
        for level in _levels():
            if rest.startswith(level):
                return level
    return "ai" if shape in leads - {""} else None


def check_not_posing(name: str, others: Iterable[str]) -> None:
    """BotError when `name` poses as an AI level or as one of the `others` (existing bots'
    names); the exact same name (any case) is left to the store's own uniqueness check."""
    level = poses_as_level(name)
    if level is not None:
        # Translators: {level} an AI level ("easy")
        raise BotError("bad_request", N_("a bot name may not start with an AI level's name "
                                         "({level}): it would read as the site's AI"),
                       level=level)
    shape = skeleton(name)
    for other in others:
        if other.lower() != name.lower() and skeleton(other) == shape:
            # Translators: {other} another bot's name
            raise BotError("conflict", N_("that bot name looks too much like the bot {other}"),
                           other=other)
