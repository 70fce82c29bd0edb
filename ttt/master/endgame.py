"""The master's endings off the board: resign, abort, claim, and the rematch offers after.

A part of the master (ttt.master.table): it takes a match and the services
(ttt.master.services), with the views and the AI's turns beside it, and returns the answer
and the pushes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ttt.game.endings import abort, claim, decline, leave, offer_rematch, rematch, resign
from ttt.game.match import AI, Match, MatchError, ai_to_move, other
from ttt.master.ai_turns import AiTurns
from ttt.master.creations import capped, caps, take_creation
from ttt.master.payloads import from_of, game_id_of
from ttt.master.replies import Push, Reply, room
from ttt.master.services import Services
from ttt.master.steps import changed, credits_of, enter, leave_ai, left
from ttt.master.views import Views
from ttt.store import Update


class Endgame:
    """The events that end a game off the board or follow its end."""

    def __init__(self, services: Services, views: Views, ai: AiTurns) -> None:
        self.services, self.views, self.ai = services, views, ai

    def rematch(self, sid: str, payload: dict) -> Reply:
        svc = self.services
        game_id = game_id_of(payload)
        player = svc.player(sid)
        old = svc.load(game_id)
        role = old.role(player)
        if role == "spectator":
            raise MatchError("spectator", "only the players can start a rematch")
        # The game shown (`from`; for an older client, the game rematched) is left by the
        # rule when it is a live AI game (PROTOCOL v4): the rematched one inside the same write
        # as the rematch, so a refused rematch changes nothing; another one after it.
        leaving = from_of(payload) if "from" in payload else game_id
        address = svc.presence.connection(sid).address  # type: ignore[union-attr] (known)
        names, origin = self._names_now(old), svc.origin(address)
        counted: list[bool] = []
        credited: list[tuple] = [()]

        def change(match: Match) -> Match | Update:
            # Decided on the game as stored: an offer found from the other side is accepted,
            # never overwritten, so two players asking at once start exactly one game.
            credited[0] = ()  # a store may call a change again, on a newer match
            if match.rematch_id:  # someone else's rematch got in first: keep theirs
                return match
            if match.mode == "friend" and match.offer != other(role):
                return offer_rematch(match, player, svc.clock())
            if not counted:  # a change may run again on a newer match: count it once
                take_creation(svc, player, address)
                counted.append(True)
            ended = leave(match, player, svc.clock()) if leaving == match.id else match
            marked, fresh = rematch(ended, player, svc.clock(), svc.rng,
                                    think=match.rules.instant_ai, names=names, origin=origin)
            credited[0] = credits_of(match, marked)
            # Both people sit in the new game: the caps are counted in this same write.
            return Update(marked, credited[0], create=fresh, caps=caps(svc))

        with capped():
            before, old = svc.update(game_id, change)
        credits = credited[0] if old.rev != before.rev else ()
        other_left, left_pushes = (leave_ai(self.views, player, leaving) if leaving != game_id
                                   else (None, []))
        gone = left(old) if old.mode == "ai" and old.is_over and not before.is_over else other_left
        if old.rematch_id is None:  # an offer, made now or before
            pushes = self.views.game_pushes(old) if old.rev != before.rev else []
            return Reply({"ok": True, "started": False, "left": gone,
                          "game": self.views.view(old, role)}, left_pushes + pushes)
        continued = old.rev != before.rev  # this call started it
        fresh = svc.load(old.rematch_id)
        if ai_to_move(fresh):  # a slow AI opens the rematch in a worker; a push shows it
            reply = self.ai.enter_thinking(sid, self.ai.think_later(fresh), player, started=True,
                                           left=gone)
        else:
            reply = enter(self.views, sid, fresh, player, started=True, left=gone)
        reply.pushes[:0] = left_pushes
        if continued:  # the old game changed (continued, offer gone): whoever reads it sees so
            reply.pushes.extend(changed(self.views, old, credits))
        reply.pushes.extend(self._followers(old, fresh))
        return reply

    def _followers(self, old: Match, fresh: Match) -> list[Push]:
        """Everyone who saw the old game follows: each side now sits at the other."""
        swap = {"X": "O", "O": "X", "both": "both", "spectator": "spectator"}
        return [Push("rematch", room(old.id, seen), functools.partial(
            lambda role: {"from": old.id, "game": self.views.view(fresh, role)}, swap[seen]))
            for seen in self.views.roles(old)]

    def _names_now(self, old: Match) -> dict[str, str | None]:
        """The names of the rematch's seats as the people call themselves now (sides swap)."""
        if old.mode == "local":
            return {"X": None, "O": None}
        names: dict[str, str | None] = {}
        for side, seat in (("X", old.seats["O"]), ("O", old.seats["X"])):
            names[side] = self.services.store.name(seat) if seat and seat != AI else None
        return names

    def decline(self, sid: str, payload: dict) -> Reply:
        svc = self.services
        player = svc.player(sid)
        _, match = svc.update(game_id_of(payload), lambda m: decline(m, player, svc.clock()))
        return Reply({"ok": True, "game": self.views.view(match, match.role(player))},
                     self.views.game_pushes(match))

    def _end(self, sid: str, payload: dict, change: Callable[[Match, str, float], Match]
             ) -> Reply:
        svc = self.services
        player = svc.player(sid)
        credited: list[tuple] = [()]

        def ending(match: Match) -> Update:
            after = change(match, player, svc.clock())
            credited[0] = credits_of(match, after)
            return Update(after, credited[0])

        before, match = svc.update(game_id_of(payload), ending)
        credits = credited[0] if match.rev != before.rev else ()
        answer: dict[str, Any] = {"ok": True, "game": self.views.view(match, match.role(player))}
        if credits:
            answer["record"] = svc.store.record(player)
        return Reply(answer, changed(self.views, match, credits))

    def resign(self, sid: str, payload: dict) -> Reply:
        return self._end(sid, payload, resign)

    def abort(self, sid: str, payload: dict) -> Reply:
        return self._end(sid, payload, abort)

    def claim(self, sid: str, payload: dict) -> Reply:
        game_id = game_id_of(payload)
        player = self.services.player(sid)
        match = self.services.load(game_id)
        waited = self.views.claimable_in(match, match.role(player))
        return self._end(sid, payload, lambda m, p, now: claim(m, p, waited, now))
