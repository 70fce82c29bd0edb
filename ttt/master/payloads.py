"""A client's payload, read field by field: every value checked for type and range.

Each reader returns the value or raises MatchError("bad_request", ...) with words for people.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from ttt.game.match import MatchError

NAME_LENGTH = 24
_ASCII_ID = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def valid_id(value: Any, low: int = 16, high: int = 64) -> bool:
    """Whether a value is an id of ASCII letters, digits, '_' and '-' of that length."""
    return (isinstance(value, str) and low <= len(value) <= high
            and _ASCII_ID.issuperset(value))  # in C: ids are checked on every event


def game_id_of(payload: dict) -> str:
    """The payload's game id."""
    game_id = payload.get("game")
    if not valid_id(game_id):
        raise MatchError("bad_request", "game must be a game id")
    return game_id


def from_of(payload: dict) -> str | None:
    """The payload's `from` (PROTOCOL v4): the game the page shows as it asks for another, or
    None for a page that shows none."""
    game_id = payload.get("from")
    if game_id is not None and not valid_id(game_id):
        raise MatchError("bad_request", "from must be a game id or null")
    return game_id


def choice(payload: dict, key: str, options: tuple, default: Any = None) -> Any:
    """The payload's value for `key`, one of `options` (of the same type)."""
    value = payload.get(key, default)
    # `type(...) in` keeps True from passing for 1 and 1.0 for 1.
    if value not in options or type(value) not in {type(o) for o in options}:
        raise MatchError("bad_request", f"{key} must be one of {', '.join(map(str, options))}")
    return value


def whole(payload: dict, key: str, low: int, high: int) -> int:
    """The payload's whole number for `key`, from low to high."""
    value = payload.get(key)
    if type(value) is not int or not low <= value <= high:
        raise MatchError("bad_request", f"{key} must be a whole number from {low} to {high}")
    return value


def moves_of(payload: dict, cells: int) -> tuple[int, ...]:
    """The payload's preset moves: fewer than `cells` cells of the board."""
    moves = payload.get("moves", [])
    if (not isinstance(moves, list) or len(moves) >= cells
            or any(type(c) is not int or not 0 <= c < cells for c in moves)):
        raise MatchError("bad_request",
                         f"moves must be a list of fewer than {cells} cells from 0 to {cells - 1}")
    return tuple(moves)


#: Characters that render as nothing or as blank space although Unicode calls them letters
#: or symbols (Hangul fillers, the braille blank, Mongolian and Khmer vowel fillers).
BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u17b4\u17b5\u034f")


def clean_name(value: Any) -> str:
    """A display name: NFKC-normalised, 1 to 24 characters after trimming, no control
    characters, at least one visible character. The normalised form is what is kept."""
    if not isinstance(value, str):
        raise MatchError("bad_request", "name must be text")
    if len(value) > NAME_LENGTH * 4:  # before normalising: NFKC's work grows with the text
        raise MatchError("bad_request", f"a name has 1 to {NAME_LENGTH} characters")
    # Measured after NFKC: one U+FDFA is 18 characters once normalised anywhere downstream.
    name = unicodedata.normalize("NFKC", value).strip()
    if not 1 <= len(name) <= NAME_LENGTH:
        raise MatchError("bad_request", f"a name has 1 to {NAME_LENGTH} characters")
    for char in name:
        # Control and format characters (bidi overrides among them) are refused; the
        # zero-width joiner stays, or emoji sequences such as 👩‍💻 could not be names.
        if unicodedata.category(char)[0] in "CZ" and char != " " and char != "\u200d":
            raise MatchError("bad_request", "a name cannot hold control characters")
    if not any(unicodedata.category(c)[0] in "LNPS" and c not in BLANKS for c in name):
        raise MatchError("bad_request", "a name needs a visible character")
    return name
