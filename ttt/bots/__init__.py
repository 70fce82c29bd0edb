"""Bots: programs that play through the same master as people (PROTOCOL "Bots (version 3)").

What a bot is (a name, a hashed token, a player id of its own, a record against other bots
and a rating), how its token is made and checked, and the Elo step. Pure: no Flask, no
database; the storage lives in `ttt.bots.book`, the HTTP API in `ttt.web.bots.api`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from ttt.runtime.translation import N_

NAME = re.compile(r"[A-Za-z0-9_-]{3,24}", re.ASCII)
ABOUT_LENGTH = 280
# What a bot's text never holds: bidi controls (U+202A-U+202E, U+2066-U+2069: they
# reorder whatever a page shows after them), line and paragraph separators, NEL, and DEL.
HIDDEN = re.compile("[\u007f\u0085\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# A bot's player id: "bot-" and 22 random characters, 26 in all. A person's id (the signed
# cookie's) is always exactly 22 characters, so no person can ever be taken for a bot.
PLAYER_PREFIX = "bot-"
START_RATING = 1500.0
K_FACTOR = 32.0



class BotError(ValueError):
    """A refused bot operation, with its wire error code.

    `message` is English with its values filled in (what the wire carries, a program reads
    the code); `template` is the message marked N_ with its {placeholders}, and `params` their
    values: a page says it in the visitor's language (`ttt.web.i18n.said`)."""

    def __init__(self, code: str, message: str, **params: Any) -> None:
        super().__init__(message.format(**params) if params else message)
        self.code = code
        self.template = message
        self.params = params
        self.message = str(self)


def check_name(name: Any) -> str:
    """A valid bot name (3 to 24 ASCII letters, digits, '-' and '_'); BotError otherwise."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise BotError("bad_request", N_("a bot name has 3 to 24 letters, digits, '-' or '_'"))
    return name


def check_about(about: Any) -> str:
    """The owner's description: text, at most 280 characters, no control characters."""
    if not isinstance(about, str):
        raise BotError("bad_request", N_("about must be text"))
    # A browser sends a textarea's newline as CRLF (and an old Mac's as CR): each one newline,
    # counted as one character, before the length and the characters are checked.
    about = about.replace("\r\n", "\n").replace("\r", "\n").strip()
    if (len(about) > ABOUT_LENGTH or any(ord(c) < 32 and c != "\n" for c in about)
            or HIDDEN.search(about)):  # bidi controls, line separators, DEL: not printable
        # Translators: {limit} a number
        raise BotError("bad_request", N_("about has at most {limit} printable characters"),
                       limit=ABOUT_LENGTH)
    return about


PLAYABLE = ("classic", "ultimate")  # the variants a bot may say it plays (ttt.game.variants)


def check_variants(variants: Any) -> list[str]:
    """A bot's variants: a non-empty list of known variant names, each once, in a fixed order."""
    if isinstance(variants, str):
        variants = [variants]
    if (not isinstance(variants, list | tuple) or not variants
            or any(v not in PLAYABLE for v in variants)):
        # Translators: {variants} 'classic' and 'ultimate'
        raise BotError("bad_request", N_("variants is a non-empty list of {variants}"),
                       variants=" and ".join(f"'{v}'" for v in PLAYABLE))
    return [v for v in PLAYABLE if v in variants]


def plays(variants: list[str]) -> str:
    """What a bot plays, in words: 'classic only', 'classic and ultimate'."""
    return variants[0] + " only" if len(variants) == 1 else " and ".join(variants)


def new_token() -> str:
    """A bot's secret: 256 random bits, URL-safe (it is still only sent in a header)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What is stored of a token: its SHA-256 (a 256-bit random secret needs no slow hash)."""
    return hashlib.sha256(token.encode()).hexdigest()


def same_hash(a: str, b: str) -> bool:
    """Constant-time comparison of two token hashes."""
    return hmac.compare_digest(a.encode(), b.encode())


def new_player_id() -> str:
    """A bot's player id, which sits in seats like a person's."""
    return PLAYER_PREFIX + secrets.token_urlsafe(16)


def is_bot_player(player: str | None) -> bool:
    """Whether a seat's player id is a bot's."""
    return player is not None and len(player) == 26 and player.startswith(PLAYER_PREFIX)


@dataclass
class Bot:
    """A bot as stored: never its token, only the token's hash."""

    player: str                      # its player id (seats, records, caps)
    name: str
    token_hash: str
    about: str = ""
    owner: str = ""                  # who made it (the command line says the OS user)
    maker: str = ""                  # the person's player id when made on the site; never shown
    created: float = 0.0
    revoked: bool = False
    rating: float = START_RATING
    vs_bots: dict[str, int] = field(default_factory=lambda: {"wins": 0, "draws": 0,
                                                             "losses": 0})
    variants: list[str] = field(default_factory=lambda: ["classic"])  # what it says it plays
    # Ratings of the variants other than classic (classic's stays `rating`, as stored before).
    ratings: dict[str, float] = field(default_factory=dict)

    def rating_in(self, variant: str) -> float:
        return self.rating if variant == "classic" else self.ratings.get(variant, START_RATING)

    def set_rating(self, variant: str, value: float) -> None:
        if variant == "classic":
            self.rating = value
        else:
            self.ratings[variant] = value

    def public(self) -> dict[str, Any]:
        """What anyone may see of a bot (no player id, no hash)."""
        return {"name": self.name, "about": self.about, "owner": self.owner,
                "rating": round(self.rating), "vs_bots": dict(self.vs_bots),
                "revoked": self.revoked, "variants": list(self.variants),
                "ratings": {v: round(self.rating_in(v)) for v in self.variants}}

    def to_json(self) -> dict[str, Any]:
        return {"player": self.player, "name": self.name, "token_hash": self.token_hash,
                "about": self.about, "owner": self.owner, "maker": self.maker,
                "created": self.created,
                "revoked": self.revoked, "rating": self.rating, "vs_bots": dict(self.vs_bots),
                "variants": list(self.variants), "ratings": dict(self.ratings)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Bot:
        return cls(**{**data, "vs_bots": dict(data.get("vs_bots") or {}),
                      "variants": list(data.get("variants") or ["classic"]),
                      "ratings": dict(data.get("ratings") or {})})


def expected(rating: float, opponent: float) -> float:
    """The score Elo expects of `rating` against `opponent` (0..1)."""
    return 1.0 / (1.0 + 10 ** ((opponent - rating) / 400.0))


def elo(x: float, o: float, score_x: float, k: float = K_FACTOR) -> tuple[float, float]:
    """Both ratings after one game in which X scored `score_x` (1 win, 0.5 draw, 0 loss)."""
    change = k * (score_x - expected(x, o))
    return x + change, o - change


def outcome_of(winner: str | None, side: str) -> str:
    """'wins', 'draws' or 'losses' for `side` in a game `winner` won (None: a draw)."""
    return "draws" if winner is None else "wins" if winner == side else "losses"


def v3_names(game: dict[str, Any]) -> dict[str, Any]:
    """A Game with its bot seats' names as {"name", "bot": true} (version 3); others as sent."""
    seats = game.get("bot_seats")
    if not seats or not isinstance(game.get("names"), dict):
        return game
    names = {m: ({"name": n, "bot": True} if m in seats and isinstance(n, str) else n)
             for m, n in game["names"].items()}
    return {**game, "names": names}


def v3_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer or push payload with every Game in it in its version 3 form."""
    changed = dict(answer)
    for key in ("game", "played"):
        if isinstance(answer.get(key), dict) and answer[key].get("bot_seats"):
            changed[key] = v3_names(answer[key])
    return changed


# The server's own analysis is not a bot's to use: a ladder of bots asking Perfect would be
# a ladder of Perfect. The API offers neither event, so a bot's `can` never lists them.
NOT_FOR_BOTS = ("hint", "analyze")


def bot_view(game: dict[str, Any]) -> dict[str, Any]:
    """A Game as a bot gets it: version 3 names, and `can` without what the API does not offer."""
    game = v3_names(game)
    can = game.get("can")
    if isinstance(can, list) and any(c in NOT_FOR_BOTS for c in can):
        game = {**game, "can": [c for c in can if c not in NOT_FOR_BOTS]}
    return game


def bot_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """An API answer with every Game in it as a bot gets it."""
    changed = dict(answer)
    for key in ("game", "played"):
        if isinstance(answer.get(key), dict):
            changed[key] = bot_view(answer[key])
    return changed
