"""Budgets per address prefix for events and pages, shared by all of a prefix's
cookies and connections.

With events limited per player (TTT_RATE_LIMIT, 20 a second) and connections per address
(200) alone, 150 cookies sending `join {}` make ~900 events a second from one address and move
another player's move p50 from 1.7 to 654 ms on `python app.py`. Without a page limit, one
cookie fetching `GET /` 56 times a second (~17 ms of CPU each) takes a process.

Here, counted in this process's memory (what a flood costs is this process's CPU: a Redis
round trip per event would cost every event more than the budget saves; with N processes an
address gets N budgets, each process protected):

- events: `TTT_EVENTS_PER_ADDRESS` a second per prefix (bursts of twice that). A person
  playing sends 1-3 events a second at most (a move, a join, a rematch), so the default 100 is
  some 30 people playing at once behind one address (a class), far under what a flood sends.
  With the newcomer allowance's care for shared addresses: a `move` from a connection seated
  in the game it shows draws on a reserve of its own (PLAYERS_RESERVE people's worth) once
  the address's budget is spent, so the people already playing behind an address keep
  playing while a flood from the same address is refused.
- pages (the rendered ones: the game page, replays): `TTT_PAGES_PER_ADDRESS` a second per
  prefix (bursts of 10 times that); each cookie PAGES_PER_PLAYER a second of them (bursts of
  PAGE_BURST_PER_PLAYER), and visitors with no cookie yet share NEWCOMER_PAGES a second of the
  address's, so neither one busy cookie nor a crowd of fresh ones spends the pages of the
  people at that address.

Both are off when 0, and when TTT_RATE_LIMIT is 0 (benchmarks and trusted set-ups), like the
creation rate.
"""

from __future__ import annotations

from typing import Any

from flask import request

from ttt.master.limits import MemoryLimiter, prefix_of

#: A person's events a second at most (a seated player's moves, when the address is spent).
PERSON_EVENTS = 3.0
#: People's worth of moves a second an address's seated players keep past its budget.
PLAYERS_RESERVE = 10
#: Pages a second one cookie may load (bursts of PAGE_BURST_PER_PLAYER): reloads, replays.
PAGES_PER_PLAYER = 2.0
PAGE_BURST_PER_PLAYER = 20.0
#: Pages a second the visitors of an address with no cookie yet share (bursts of 10 times).
NEWCOMER_PAGES = 5.0
#: An address's Socket.IO event frames a second, as multiples of its event budget, past which
#: a websocket's frames are dropped unread (no decoding, no handler, no answer): a refusal
#: still cost a thread and an answer each, and 900 of them a second a player's p99 (a `move`
#: is never dropped there: it meets the seated players' reserve above).
FRAME_TIMES = 2.0
#: Accept-Language read at most this far, and this many languages of it: a browser sends a
#: few (under 100 bytes); a 7.5 kB header made each page cost 47 ms instead of 18.
ACCEPT_LANGUAGE_BYTES = 256
ACCEPT_LANGUAGE_ITEMS = 12


class Budgets:
    """Event and page budgets per address prefix, in this process."""

    def __init__(self, events_per_address: float, pages_per_address: float) -> None:
        self.events = max(0.0, float(events_per_address))
        self.pages = max(0.0, float(pages_per_address))
        self._limiter = MemoryLimiter(size=100_000)
        self.refused = {"events": 0, "pages": 0}

    def event(self, origin: str | None, name: str, seated: bool) -> bool:
        """Whether one more event from this address (its keyed hash, `origin`) is allowed;
        a seated player's `move` past the address's budget draws on the players' reserve."""
        if not self.events or origin is None:
            return True
        take = self._limiter.take
        if take(f"e:{origin}", self.events, 2 * self.events):
            return True
        if seated and name == "move":
            reserve = PERSON_EVENTS * PLAYERS_RESERVE
            if take(f"e:s:{origin}", reserve, 2 * reserve):
                return True
        self.refused["events"] += 1
        return False

    def frame(self, prefix: str) -> bool:
        """Whether one more event frame from this address prefix is read at all."""
        if not self.events:
            return True
        rate = FRAME_TIMES * self.events
        if self._limiter.take(f"f:{prefix}", rate, 2 * rate):
            return True
        self.refused["frames"] = self.refused.get("frames", 0) + 1
        return False

    def page(self, address: str, player: str | None) -> bool:
        """Whether one more page may be rendered for this client address and cookie's player
        (None: a visitor with no cookie yet)."""
        if not self.pages:
            return True
        take = self._limiter.take
        prefix = prefix_of(address)
        allowed = (take(f"p:p:{player}", PAGES_PER_PLAYER, PAGE_BURST_PER_PLAYER)
                   if player is not None else
                   take(f"p:n:{prefix}", NEWCOMER_PAGES, 10 * NEWCOMER_PAGES))
        if allowed and take(f"p:a:{prefix}", self.pages, 10 * self.pages):
            return True
        self.refused["pages"] += 1
        return False


def from_config(config: Any) -> Budgets:
    """The app's budgets: off with TTT_RATE_LIMIT 0, like every other rate."""
    limited = float(config["TTT_RATE_LIMIT"]) > 0
    return Budgets(float(config["TTT_EVENTS_PER_ADDRESS"]) if limited else 0.0,
                   float(config["TTT_PAGES_PER_ADDRESS"]) if limited else 0.0)


def bound_accept_language(environ: dict) -> None:
    """Cut the request's Accept-Language to its first ACCEPT_LANGUAGE_ITEMS languages within
    ACCEPT_LANGUAGE_BYTES (whole items only), before anything parses it."""
    value = environ.get("HTTP_ACCEPT_LANGUAGE")
    if value is None or (len(value) <= ACCEPT_LANGUAGE_BYTES
                         and value.count(",") < ACCEPT_LANGUAGE_ITEMS):
        return
    items = value[:ACCEPT_LANGUAGE_BYTES + 1].split(",", ACCEPT_LANGUAGE_ITEMS)
    if len(value) > ACCEPT_LANGUAGE_BYTES:
        items = items[:-1]  # the last one may be cut in two
    environ["HTTP_ACCEPT_LANGUAGE"] = ",".join(items[:ACCEPT_LANGUAGE_ITEMS])


def bounded_headers() -> None:
    """Flask's before_request: the headers parsed per request, bounded (Accept-Language)."""
    bound_accept_language(request.environ)
