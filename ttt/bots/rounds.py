"""A ladder round among the bots online: `python -m ttt bot ladder --games N` (no programs).

Whoever runs the bots, the operator starts their games: every pair of online bots plays
`games` games, sides alternating, through `POST /api/ladder/game` (the operator's token,
TTT_OPERATOR_TOKEN). Games start in waves: no bot is given more live games of this round
than the server's cap (or `--parallel`), and a refused start (a bot busy elsewhere, the
creation rate) is tried again once a game has ended. Each game is watched through
`GET /api/ladder/game/<id>` until it ends; the bots' own runners play it. Standard library
only, like the SDK.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ttt.bots.sdk import Api, Tally

RETRY = ("not_allowed", "rate_limited", "busy", "unavailable")  # worth another try later


def pairings(names: list[str], games: int) -> list[tuple[str, str]]:
    """(X, O) of every game: each pair plays `games`, sides alternating; the pairs take
    turns so the games of one wave spread over the bots."""
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    return [(a, b) if k % 2 == 0 else (b, a) for k in range(games) for a, b in pairs]


@dataclass
class Round:
    """One round's games: those waiting, those on, and each bot's results."""

    api: Api
    variant: str = "classic"
    per_bot: int = 1                  # live games of this round a bot may sit in at once
    poll: float = 0.3                 # seconds between looks at the live games
    log: Callable[[str], None] = lambda text: None
    waiting: list[tuple[str, str]] = field(default_factory=list)
    live: dict[str, tuple[str, str]] = field(default_factory=dict)   # game id -> (X, O)
    busy: Counter = field(default_factory=Counter)
    tallies: dict[str, Tally] = field(default_factory=dict)
    skipped: int = 0
    played: int = 0

    def play(self, games: list[tuple[str, str]], timeout: float) -> bool:
        """Play these games to their ends; whether all ended before `timeout` seconds."""
        self.waiting = list(games)
        for pair in games:
            for name in pair:
                self.tallies.setdefault(name, Tally())
        deadline = time.monotonic() + timeout
        while self.waiting or self.live:
            if time.monotonic() > deadline:
                return False
            self._start_wave()
            if self.live:
                time.sleep(self.poll)  # the runners play meanwhile
            self._collect()
        return True

    def _start_wave(self) -> None:
        """Start every waiting game whose bots have room, until the server refuses one."""
        for x, o in list(self.waiting):
            if self.busy[x] >= self.per_bot or self.busy[o] >= self.per_bot:
                continue
            answer = self.api.call("/api/ladder/game", {"x": x, "o": o, "variant": self.variant})
            if answer.get("ok"):
                self.waiting.remove((x, o))
                self.live[answer["game"]["id"]] = (x, o)
                self.busy[x] += 1
                self.busy[o] += 1
                continue
            error = answer.get("error", {})
            self.log(f"{x} v {o} not started: {error.get('message')}")
            if error.get("code") not in RETRY:
                self._drop(lambda pair, pair_=(x, o): pair == pair_)
            elif error.get("code") == "not_allowed":
                self._drop_offline()
            if not self.live and self.waiting and error.get("code") in RETRY:
                time.sleep(1.0)  # nothing on to wait for: a pause before the next try
            return

    def _drop_offline(self) -> None:
        """Give up the waiting games of bots that have gone offline."""
        online = set(self.api.call("/api/ladder", method="GET").get("online", ()))
        self._drop(lambda pair: not set(pair) <= online)

    def _drop(self, test: Callable[[tuple[str, str]], bool]) -> None:
        gone = [pair for pair in self.waiting if test(pair)]
        for pair in gone:
            self.waiting.remove(pair)
        self.skipped += len(gone)

    def _collect(self) -> None:
        """Count the live games that have ended; their bots have room again."""
        for game_id, (x, o) in list(self.live.items()):
            answer = self.api.call(f"/api/ladder/game/{game_id}", method="GET")
            game = answer.get("game") if answer.get("ok") else None
            if game is None and answer.get("error", {}).get("code") != "not_found":
                continue  # the server busy or its store away for a moment: look again later
            if game is not None and game.get("status") == "playing":
                continue
            del self.live[game_id]
            self.busy[x] -= 1
            self.busy[o] -= 1
            if game is None:  # gone from the store (it cannot be, but never wait forever)
                self.skipped += 1
                continue
            self.played += 1
            for name, side in ((x, "X"), (o, "O")):
                self.tallies[name].count({**game, "you": side})

    def summary(self) -> list[dict[str, Any]]:
        """Each bot's wins, draws, losses (and aborted games) of this round."""
        return [{"bot": name, "wins": t.wins, "draws": t.draws, "losses": t.losses,
                 "aborted": t.aborted} for name, t in self.tallies.items()]


def ladder_round(server: str, token: str, games: int, variant: str = "classic",
                 parallel: int | None = None, timeout: float = 3600.0,
                 log: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """A round among the bots online on `server`: the JSON summary the command prints."""
    api, public = Api(server, token), Api(server, "-")
    known = api.call("/api/ladder", method="GET")
    if not known.get("ok"):
        code = known.get("error", {}).get("code")
        raise ValueError("the server has no ladder endpoint: set TTT_OPERATOR_TOKEN there"
                         if code == "not_found" else known.get("error", {}).get("message"))
    plays = known.get("plays") or {}  # a round pairs only the bots that play its variant
    names = sorted((n for n in known["online"] if variant in plays.get(n, [variant])),
                   key=str.lower)
    before = _ratings(public, variant)
    per_bot = max(1, min(parallel or known["max_games"], known["max_games"]))
    played = Round(api, variant, per_bot, log=log)
    error = None if len(names) >= 2 else "fewer than two bots are online"
    if error is None and not played.play(pairings(names, games), timeout):
        error = "timed out"
    ladder = public.call("/api/bots", method="GET")["bots"]
    after = {b["name"]: rating_of(b, variant) for b in ladder}
    return {"round": [{**entry, "rating_before": before.get(entry["bot"]),
                       "rating": after.get(entry["bot"])} for entry in played.summary()],
            "games": played.played, "skipped": played.skipped, "error": error,
            "ladder": [{k: b.get(k) for k in ("name", "rating", "ratings", "vs_bots")}
                       for b in ladder]}


def rating_of(bot: dict[str, Any], variant: str) -> int:
    """A listed bot's rating in a variant (ratings are per variant since PROTOCOL v4)."""
    return (bot.get("ratings") or {}).get(variant, bot["rating"])


def _ratings(public: Api, variant: str = "classic") -> dict[str, int]:
    return {b["name"]: rating_of(b, variant)
            for b in public.call("/api/bots", method="GET")["bots"]}
