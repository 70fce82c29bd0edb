"""The marker of words a person reads in a refusal: extracted for translation, sent in English.

The standard library only: the match model, the master and the bots all mark their
messages with it, so it sits on the ground floor.
"""

from __future__ import annotations


def N_(message: str) -> str:  # noqa: N802 (gettext's name for a marker that translates nothing)
    """Mark a refusal's message that a person reads: `make translations` extracts it (-k N_)
    and the page shows it in the player's language from its catalog. The wire keeps the
    English (a program reads the code)."""
    return message
