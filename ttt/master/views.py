"""The master's views: each game as one receiver sees it, and the pushes that carry it.

A part of the master (ttt.master.table): it takes a match and the services
(ttt.master.services), reads presence and the store, and returns views and pushes; it never writes.
"""

from __future__ import annotations

import functools
from typing import Any

from ttt.bots import is_bot_player
from ttt.game import view
from ttt.game.match import AI, CLOCKS, FIRST_MOVE, MODES, SIDES, Match, other
from ttt.game.variants import VARIANTS, record_key
from ttt.master.replies import Push, Reply, room
from ttt.master.services import Services
from ttt.master.watchers import WatchersNews

REACTIONS = ("👍", "👏", "😮", "😅", "🤝", "gg")


class Views:
    """The receiver views of the games a `Table` keeps."""

    def __init__(self, services: Services, watching: WatchersNews | None = None) -> None:
        self.services = services
        # When a game's watchers were last told: kept by the table across new services.
        self.watching = watching or WatchersNews(services.clock)
        self.watching.clock = services.clock  # the same news, on the clock handed now

    def config(self) -> dict[str, Any]:
        """The choices a client offers, from the server's own constants (PROTOCOL v3 `config`)."""
        # `records`: each level's row in the record (PROTOCOL v4), made by the server only.
        return {"variants": {name: {"levels": list(rules.levels), "cells": rules.cells,
                                    "records": {level: record_key(name, level)
                                                for level in rules.levels}}
                             for name, rules in VARIANTS.items()},
                "modes": list(MODES), "clocks": list(CLOCKS), "reactions": list(REACTIONS),
                "claim_after": self.services.limits.claim_after}

    def claimable_in(self, match: Match, role: str,
                     online: dict[str, bool] | None = None) -> float | None:
        """Seconds until `role` may claim `match`; None when there is no claim to wait for: the
        opponent is here or unseated, has not moved yet (PROTOCOL v5: the game is called off
        then, never claimed), or is on move with a clock that ends the game first.
        `online`: the game's presence if the caller has just read it."""
        if match.mode != "friend" or match.is_over or role not in SIDES or match.opening:
            return None
        opponent = other(role)
        svc = self.services
        if online is None:
            online = svc.presence.online(match.id)
        if match.seats[opponent] is None or online[opponent]:
            return None
        # Absence counts from the last sighting (in presence, or stored with the game), from
        # when the seat could first have been present, and never from before this process
        # started: after a restart a claim needs claim_after of absence it observed.
        since = max(svc.presence.last_seen(match.id, opponent) or 0.0,
                    match.seen.get(opponent) or 0.0,
                    match.seated.get(opponent) or match.created,
                    svc.presence.started)
        now = svc.clock()
        wait = max(0.0, svc.limits.claim_after - (now - since))
        left = match.seconds_left(now) if match.turn == opponent else None
        if left is not None and left <= wait:  # the absent side's own clock ends it first
            return None
        return wait

    def view(self, match: Match, role: str) -> dict[str, Any]:
        """The Game as a receiver in `role` sees it."""
        # Presence read once per view (online, watchers and the claim's online: else
        # three reads, two or three round trips with Redis; the same moment's figures).
        svc = self.services
        online, watchers = svc.presence.present(match.id)
        game = view.view(match, role, online=online,
                         claimable_in=self.claimable_in(match, role, online),
                         watchers=watchers, now=svc.clock())
        if game["time_left"] is None:  # a clock not yet running: the side on move's full limit
            game["time_left"] = self.full_time(match)
        # The row of the record this game counts in, made here so no client builds it.
        game["record_key"] = record_key(match.variant, match.level) if match.level else None
        bots = [m for m in SIDES if is_bot_player(match.seats[m])]
        if bots:  # the sides a bot sits at: version 3 names mark them (ttt.bots.v3_names)
            game["bot_seats"] = bots
        if match.mode == "ai" and match.level and not match.rules.instant_ai:
            # The AI's seconds this move: less than its level's when the workers are busy.
            full = getattr(match.rules.player(match.level), "seconds", None)
            game["budget"] = svc.thinker.budget_of(match.id) or full
            game["budget_full"] = full  # the level's own time: less in `budget` is a crowd
        return game

    def full_time(self, match: Match) -> float | None:
        """What the side on move of a timed game has when its clock starts (PROTOCOL v5:
        `time_left` is a number in every view of a timed game): before both seats are taken,
        and before the first view after a change that puts a bot on move. None when the side
        on move has no limit (untimed games, a person's turn in an untimed game with a bot).
        A timed game that is over still reads a number, as the protocol says: 0 when it ended
        on time, else the clock's whole length (nobody's clock runs any more)."""
        if match.is_over:
            if match.clock is None:
                return None
            return 0.0 if match.reason == "time" else float(match.clock)
        bot_seat = any(is_bot_player(match.seats[m]) for m in SIDES)
        if match.clock is None and not bot_seat:
            return None
        turn = match.turn
        limits = []
        if match.clock is not None:
            limits.append(FIRST_MOVE if match.opening else float(match.clock))
        if turn is not None and is_bot_player(match.seats[turn]):
            limits.append(self.services.bot_seconds)
        return min(limits) if limits else None

    @staticmethod
    def roles(match: Match) -> tuple[str, ...]:
        """The roles a game can be seen in."""
        if match.mode == "local":
            return ("both", "spectator")
        return (*(m for m in SIDES if match.seats[m] != AI), "spectator")

    def game_pushes(self, match: Match) -> list[Push]:
        """The game to everyone who sees it, each role its own view (built when sent)."""
        self.watching.pushed(match.id)  # each view carries the number of watchers
        return [Push("game", room(match.id, role), functools.partial(self.view, match, role))
                for role in self.roles(match)]

    def watchers_changed(self, game_id: str) -> list[Push]:
        """A spectator came or went: the small `watchers` push, now or (within a second of
        the last one) at a later tick (`watchers_due`); never a whole view."""
        return self._watchers_pushes(game_id) if self.watching.changed(game_id) else []

    def watchers_due(self) -> list[Push]:
        """The `watchers` pushes that waited for their second."""
        return [p for game_id in self.watching.due() for p in self._watchers_pushes(game_id)]

    def _watchers_pushes(self, game_id: str) -> list[Push]:
        svc = self.services
        match = svc.cached(game_id) or svc.store.get(game_id)
        if match is None:
            return []
        body = functools.cache(lambda: {"game": game_id,
                                        "watchers": svc.presence.watchers(game_id)})
        return [Push("watchers", room(game_id, role), body) for role in self.roles(match)]

    def games(self, sid: str, payload: dict) -> Any:
        """The `games` event (PROTOCOL v4): the sender's live friend games, each as a
        short line for the home page's list: whose turn, the opponent, the time left."""
        store = self.services.store
        player = self.services.player(sid)
        found = []
        for game_id in store.live_games(player):
            match = store.get(game_id)
            if match is None or match.mode != "friend" or match.is_over:
                continue
            role = match.role(player)
            if role in SIDES:
                found.append((self._game_line(match, role), match.updated))
        # The games waiting for the player first, then the most recently changed.
        found.sort(key=lambda pair: (not pair[0]["your_turn"], -pair[1]))
        return Reply({"ok": True, "games": [line for line, _ in found]})

    def _game_line(self, match: Match, role: str) -> dict[str, Any]:
        game = self.view(match, role)
        opponent = other(role)
        name = game["names"].get(opponent) if isinstance(game.get("names"), dict) else None
        return {"id": match.id, "link": f"/g/{match.id}", "variant": match.variant,
                "you": role, "turn": game["turn"], "your_turn": "move" in game["can"],
                "opponent": name, "seated": match.seats[opponent] is not None,
                "online": game["online"][opponent], "clock": game.get("clock"),
                "time_left": game.get("time_left"), "moves": len(match.moves)}

    def seated(self, match: Match, player: str, record: dict | None = None,
               **extra: Any) -> dict[str, Any]:
        """The answer that shows a player a game; `record`: theirs if just read."""
        role = match.role(player)
        answer: dict[str, Any] = {"ok": True, **extra, "game": self.view(match, role),
                                  "you": role,
                                  "record": self.services.store.record(player) if record is None
                                  else record}
        if match.mode == "friend":
            answer["link"] = f"/g/{match.id}"
        return answer
