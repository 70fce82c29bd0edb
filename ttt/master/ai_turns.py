"""The AI's turns: its moves searched in a worker and landed later, and the analyses and
hints it gives.

A part of the master (ttt.master.table): it takes a match and the services (ttt.master.services) and
returns the answer and the pushes; a slow search never runs inside a store transaction. An AI
move found later has no caller to return to: its pushes go to the services' publisher, the
app's one door.
"""

from __future__ import annotations

import logging
from typing import Any

from ttt.game.match import SIDES, Match, MatchError, ai_plays, ai_to_move, hint
from ttt.game.variants import VARIANTS
from ttt.master.payloads import game_id_of, whole
from ttt.master.replies import Push, Reply
from ttt.master.services import Services
from ttt.master.steps import changed, credits_of, enter
from ttt.master.views import Views
from ttt.pool.thinker import Busy, Task, Ticket
from ttt.runtime.translation import N_
from ttt.store import StoreUnavailable, Update

log = logging.getLogger("ttt.table")
LIVE_LOOKS = 50  # a player's live games looked at for a friend game in the judged position


class AiTurns:
    """The events and steps of a game whose AI thinks (and the hints and analyses)."""

    def __init__(self, services: Services, views: Views) -> None:
        self.services, self.views = services, views

    def think_later(self, match: Match) -> Match:
        """Ask a worker for the AI's move in `match`, landed (and pushed) when it comes; the
        match as it is now (with the reply already, when the search ran inline)."""
        ticket = self._ask_ai(match)
        if not ticket.done():
            return match
        return self.services.store.get(match.id) or match

    def enter_thinking(self, sid: str, match: Match, player: str, **extra: Any) -> Reply:
        """Enter a game whose AI may still be thinking: once the connection is in the game's
        room (the web layer joins it, then calls `then`), the answer is read again, so a
        reply that landed in between is in it, and any later one reaches it as a push."""
        reply = enter(self.views, sid, match, player, **extra)
        if not ai_to_move(match):
            return reply

        def caught_up() -> Reply:
            now = self.services.store.get(match.id)
            if now is not None and now.rev != match.rev:
                reply.answer["game"] = self.views.view(now, now.role(player))
            return Reply(reply.answer)

        reply.then = caught_up
        return reply

    def _ask_ai(self, match: Match) -> Ticket:
        """The search for the AI's move at this rev: queued once, whoever asks again."""
        owner = (match.humans() or [match.id])[0]  # one search at a time per person
        svc = self.services
        task = Task("move", match.variant, tuple(match.moves), match.level,
                    svc.rng.getrandbits(63))

        def found(ticket: Ticket) -> None:  # on the thinker's thread: nobody to answer
            svc.publish(self.land(match, ticket))

        return svc.thinker.move(task, owner, match.origin or "", match.id, match.rev, found)

    def land(self, match: Match, ticket: Ticket) -> list[Push]:
        """Play the worker's cell if the game is still where it was asked (compare-and-set on
        rev: a retried or repeated search never plays twice); the pushes that show it."""
        if ticket.error is not None:
            log.warning("the AI's move in %s was not found: %s", match.id, ticket.error)
            return []
        svc, cell = self.services, ticket.result
        svc.searched(ticket.seconds)
        credited: list[tuple] = [()]

        def change(current: Match) -> Match | Update:
            credited[0] = ()  # a store may call a change again, on a newer match
            if current.rev != match.rev:  # someone got in first: leave it as it is
                return current
            after = ai_plays(current, cell, svc.clock())
            if not current.moves:  # the AI's opening move leaves a new game untouched
                after = after.but(updated=current.updated)
            credited[0] = credits_of(current, after)
            return Update(after, credited[0])

        try:
            landed = svc.write(match.id, change)
        except (MatchError, StoreUnavailable) as error:  # a join or a restart plays it later
            log.warning("the AI's move in %s did not land: %s", match.id, error)
            return []
        if not landed or landed[1].rev == landed[0].rev:
            return []
        log.info("ai move game=%s cell=%s ms=%s", match.id, cell, round(ticket.seconds * 1000, 1),
                 extra={"game": match.id, "cell": cell, "rev": landed[1].rev,
                        "ms": round(ticket.seconds * 1000, 1)})
        return changed(self.views, landed[1], credited[0])

    def resume(self) -> int:
        """Ask for every AI move that was waiting when a process stopped; how many."""
        asked = 0
        store = self.services.store
        for game_id in store.live_ids():
            match = store.get(game_id)
            if match is not None and ai_to_move(match):
                self._ask_ai(match)
                asked += 1
        return asked

    def _judge(self, sid: str, player: str, variant: str, moves: tuple[int, ...]) -> dict:
        """A position's evaluation: in-process for classic (microseconds), else from the
        thinker's cache or a worker; `busy` rather than a long wait."""
        rules = VARIANTS[variant]
        self._no_help_in_a_friend_game(player, variant, moves)
        if rules.instant_ai:
            return rules.analyze(rules.from_moves(moves))
        svc = self.services
        conn = svc.presence.connection(sid)
        address = (svc.origin(conn.address) if conn else None) or ""
        try:
            ticket = svc.thinker.analyze(Task("analyze", variant, moves), player, address)
        except Busy:
            raise MatchError("busy", "the AI is busy; try again in a moment") from None
        if not ticket.wait(svc.answer_wait) or ticket.error is not None:
            raise MatchError("busy", "the AI is busy; try again in a moment")
        return ticket.result

    def _no_help_in_a_friend_game(self, player: str, variant: str,
                                  moves: tuple[int, ...]) -> None:
        """Refuse to judge the position of a live friend game the player sits in, however it
        was reached (a pass-and-play copy made with `moves`, then analysed, would be
        the engine's help in the friend game). Reads the player's live games (capped). The
        empty board is no game's secret: never refused."""
        if not moves:
            return
        board = None
        store = self.services.store
        for game_id in store.live_games(player)[:LIVE_LOOKS]:
            match = store.get(game_id)
            if (match is None or match.mode != "friend" or match.is_over
                    or match.variant != variant or match.role(player) not in SIDES
                    or len(match.moves) != len(moves)):
                continue
            if board is None:
                try:
                    board = VARIANTS[variant].from_moves(moves)
                except ValueError:
                    return
            if match.board == board:
                raise MatchError("not_allowed",
                                 N_("no analysis while a game against a friend is on"))

    def analyze(self, sid: str, payload: dict) -> Reply:
        match = self.services.load(game_id_of(payload))
        if match.mode == "friend" and not match.is_over:
            raise MatchError("not_allowed", N_("no analysis while a game against a friend is on"))
        ply = whole(payload, "ply", 0, len(match.moves)) if "ply" in payload else None
        rules = match.rules
        moves = tuple(match.moves if ply is None else match.moves[:ply])
        judged = self._judge(sid, self.services.player(sid), match.variant, moves)
        answer = {"ok": True, "analysis": judged,
                  "version": len(match.moves),
                  "ply": len(match.moves) if ply is None else ply}
        if match.is_over:
            answer.update(rules.review(match.moves))
        return Reply(answer)

    def hint(self, sid: str, payload: dict) -> Reply:
        svc = self.services
        player = svc.player(sid)
        asked = hint(svc.load(game_id_of(payload)), player, svc.clock())  # refusals first
        judged = self._judge(sid, player, asked.variant, tuple(asked.moves))  # counted once found
        before, match = svc.update(asked.id, lambda m: hint(m, player, svc.clock()))
        if match.moves != asked.moves:  # a move got in while the search ran: judge this one
            judged = self._judge(sid, player, match.variant, tuple(match.moves))
        pushes = self.views.game_pushes(match) if match.rev != before.rev else []
        return Reply({"ok": True, "game": self.views.view(match, match.role(player)),
                      "best": judged["best"], "advice": judged.get("advice", "")}, pushes)
