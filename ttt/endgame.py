"""The master's endings off the board: resign, abort, claim, and the rematch offers after.

A part of `ttt.table.Table`, which hands it the store, the presence, the clock, the AI's
dice, the views and the table's steps it shares (entering a game, leaving an AI game, the caps).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ttt.endings import abort, claim, decline, leave, offer_rematch, rematch, resign
from ttt.match import AI, Match, MatchError, ai_to_move, other
from ttt.payloads import from_of, game_id_of
from ttt.replies import Push, Reply, room
from ttt.store import Caps, Store, Update
from ttt.views import Views


class Endgame:
    """The events that end a game off the board or follow its end."""

    def __init__(self, store: Store, presence: Any, clock: Callable[[], float],
                 rng: random.Random, views: Views, *, player: Callable[[str], str],
                 load: Callable[[str], Match], update: Callable[..., tuple[Match, Match]],
                 origin: Callable[[str], str | None], enter: Callable[..., Reply],
                 enter_thinking: Callable[..., Reply], think_later: Callable[[Match], Match],
                 take_creation: Callable[[str, str], None],
                 leave_ai: Callable[[str, str | None], tuple[dict | None, list[Push]]],
                 left: Callable[[Match], dict[str, Any]], changed: Callable[..., list[Push]],
                 credits: Callable[[Match, Match], tuple], caps: Callable[[], Caps],
                 capped: Callable[[], AbstractContextManager[None]]) -> None:
        self.store, self.presence, self.clock, self.views = store, presence, clock, views
        self.rng = rng
        # The table's shared steps and the AI's, under the names the table gives them.
        self._player, self._load, self._update, self.origin = player, load, update, origin
        self._enter, self._enter_thinking, self._think_later = enter, enter_thinking, think_later
        self._take_creation, self._leave_ai, self._left = take_creation, leave_ai, left
        self._changed, self._credits, self._caps, self._capped = changed, credits, caps, capped

    def rematch(self, sid: str, payload: dict) -> Reply:
        game_id = game_id_of(payload)
        player = self._player(sid)
        old = self._load(game_id)
        role = old.role(player)
        if role == "spectator":
            raise MatchError("spectator", "only the players can start a rematch")
        # The game shown (`from`; for an older client, the game rematched) is left by the
        # rule when it is a live AI game (PROTOCOL v4): the rematched one inside the same write
        # as the rematch, so a refused rematch changes nothing; another one after it.
        leaving = from_of(payload) if "from" in payload else game_id
        address = self.presence.connection(sid).address
        names, origin = self._names_now(old), self.origin(address)
        counted: list[bool] = []

        def change(match: Match) -> Match | Update:
            # Decided on the game as stored: an offer found from the other side is accepted,
            # never overwritten, so two players asking at once start exactly one game.
            if match.rematch_id:  # someone else's rematch got in first: keep theirs
                return match
            if match.mode == "friend" and match.offer != other(role):
                return offer_rematch(match, player, self.clock())
            if not counted:  # a change may run again on a newer match: count it once
                self._take_creation(player, address)
                counted.append(True)
            ended = leave(match, player, self.clock()) if leaving == match.id else match
            marked, fresh = rematch(ended, player, self.clock(), self.rng,
                                    think=match.rules.instant_ai, names=names, origin=origin)
            # Both people sit in the new game: the caps are counted in this same write.
            return Update(marked, self._credits(match, marked), create=fresh, caps=self._caps())

        with self._capped():
            before, old = self._update(game_id, change)
        credits = self._credits(before, old)
        left = (self._left(old) if old.mode == "ai" and old.is_over and not before.is_over
                else None)
        other_left, left_pushes = (self._leave_ai(player, leaving) if leaving != game_id
                                   else (None, []))
        left = left or other_left
        if old.rematch_id is None:  # an offer, made now or before
            pushes = self.views.game_pushes(old) if old.rev != before.rev else []
            return Reply({"ok": True, "started": False, "left": left,
                          "game": self.views.view(old, role)}, left_pushes + pushes)
        continued = old.rev != before.rev  # this call started it
        fresh = self._load(old.rematch_id)
        if ai_to_move(fresh):  # a slow AI opens the rematch in a worker; a push shows it
            reply = self._enter_thinking(sid, self._think_later(fresh), player, started=True,
                                         left=left)
        else:
            reply = self._enter(sid, fresh, player, started=True, left=left)
        reply.pushes[:0] = left_pushes
        if continued:  # the old game changed (continued, offer gone): whoever reads it sees so
            reply.pushes.extend(self._changed(old, credits))
        # Everyone who saw the old game follows: each side now sits at the other.
        swap = {"X": "O", "O": "X", "both": "both", "spectator": "spectator"}
        for seen in self.views.roles(old):
            reply.pushes.append(Push("rematch", room(old.id, seen), functools.partial(
                lambda role: {"from": old.id, "game": self.views.view(fresh, role)}, swap[seen])))
        return reply

    def _names_now(self, old: Match) -> dict[str, str | None]:
        """The names of the rematch's seats as the people call themselves now (sides swap)."""
        if old.mode == "local":
            return {"X": None, "O": None}
        names: dict[str, str | None] = {}
        for side, seat in (("X", old.seats["O"]), ("O", old.seats["X"])):
            names[side] = self.store.name(seat) if seat and seat != AI else None
        return names

    def decline(self, sid: str, payload: dict) -> Reply:
        player = self._player(sid)
        _, match = self._update(game_id_of(payload), lambda m: decline(m, player, self.clock()))
        return Reply({"ok": True, "game": self.views.view(match, match.role(player))},
                     self.views.game_pushes(match))

    def _end(self, sid: str, payload: dict, change: Callable[[Match, str, float], Match]
             ) -> Reply:
        player = self._player(sid)

        def ending(match: Match) -> Update:
            after = change(match, player, self.clock())
            return Update(after, self._credits(match, after))

        before, match = self._update(game_id_of(payload), ending)
        credits = self._credits(before, match)
        answer: dict[str, Any] = {"ok": True, "game": self.views.view(match, match.role(player))}
        if credits:
            answer["record"] = self.store.record(player)
        return Reply(answer, self._changed(match, credits))

    def resign(self, sid: str, payload: dict) -> Reply:
        return self._end(sid, payload, resign)

    def abort(self, sid: str, payload: dict) -> Reply:
        return self._end(sid, payload, abort)

    def claim(self, sid: str, payload: dict) -> Reply:
        game_id = game_id_of(payload)
        player = self._player(sid)
        match = self._load(game_id)
        waited = self.views.claimable_in(match, match.role(player))
        return self._end(sid, payload, lambda m, p, now: claim(m, p, waited, now))
