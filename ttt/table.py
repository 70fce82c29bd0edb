"""The master: the one authority over every game, with one method per client event.

A `Table` takes the store, presence, a clock and a random source; it checks the
payload, decides, writes through the store, and returns a `Reply`: the answer
for the sender, what to push to whom (one view per receiver's role), and which
game the sender's connection now shows. It never imports Flask or Socket.IO:
the web layer only turns a Reply into emits.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ttt.bots import is_bot_player
from ttt.limits import Limiter, MemoryLimiter
from ttt.match import (
    AI,
    CLOCKS,
    MODES,
    SIDES,
    Match,
    MatchError,
    abandon,
    abort,
    ai_plays,
    ai_reply,
    ai_to_move,
    claim,
    create,
    credit_outage,
    decline,
    expired,
    hint,
    offer_rematch,
    other,
    play,
    rematch,
    rename,
    resign,
    results,
    sighted,
    take_seat,
    time_out,
)
from ttt.payloads import choice, clean_name, game_id_of, moves_of, valid_id, whole
from ttt.store import CapReached, Caps, Store, StoreUnavailable, Update
from ttt.thinker import Busy, Inline, Task, Thinker, Ticket
from ttt.variants import VARIANTS

REACTIONS = ("👍", "👏", "😮", "😅", "🤝", "gg")
ROLES = ("X", "O", "both", "spectator")
log = logging.getLogger("ttt.table")


@dataclass(frozen=True)
class Limits:
    """The rules of the house that are settings, not game rules."""

    claim_after: float = 60.0           # seconds a seat must be away before a claim
    live_per_player: int = 50
    live_per_address: int = 500         # live games made from one client address
    live_total: int = 100_000
    creations_per_minute: float = 30.0  # per player and per client address; 0: no limit
    reaction_every: float = 1.0         # seconds between one player's reactions
    outage_after: float = 5.0           # seconds with no server seen up that clocks get back
    renames_per_minute: float = 10.0    # per player, bursts of as many
    rename_batch: int = 4               # live games besides the shown one a rename rewrites


@dataclass
class Push:
    """One emit: an event and its payload to a room.

    A payload may be a function that builds it, so nothing is built for a room nobody is in.
    """

    event: str
    room: str
    payload: dict[str, Any] | Callable[[], dict[str, Any]]
    skip_sender: bool = True

    def body(self) -> dict[str, Any]:
        """The payload, built if it was deferred."""
        return self.payload() if callable(self.payload) else self.payload


@dataclass
class Reply:
    """What an event comes to: the answer, the pushes, and the game the sender now shows.

    `then`, when set, is more work before the answer (a slow AI thinking): emit these
    pushes first, then call it for the Reply that carries the answer.
    """

    answer: dict[str, Any]
    pushes: list[Push] = field(default_factory=list)
    show: str | None = None   # the room the sender's connection now belongs to
    then: Callable[[], Reply] | None = None


def room(game_id: str, role: str) -> str:
    """The Socket.IO room of the connections that see a game as `role`."""
    return f"g:{game_id}:{role}"


def player_room(player: str) -> str:
    """The room of all of one player's connections (tabs)."""
    return f"p:{player}"


def refusal(code: str, message: str) -> dict[str, Any]:
    """A refused event's answer."""
    return {"ok": False, "error": {"code": code, "message": message}}




class Table:
    """Every game's life, decided in one place."""

    def __init__(self, store: Store, presence: Any, clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None, limits: Limits | None = None,
                 salt: bytes = b"", thinker: Thinker | None = None) -> None:
        self.store = store
        # Every slow search goes through the thinker (worker processes in the app); without
        # one it runs inline, on the caller's thread (unit tests, the command line).
        self.thinker: Thinker = thinker or Inline()
        # Where pushes made off any event go (an AI move landing later): set by the web layer.
        self.publish: Callable[[list[Push]], None] = lambda pushes: None
        self.answer_wait = 5.0  # seconds an `analyze` or hint may wait for a worker
        self._salt = salt[:64]
        self.presence = presence
        self.clock = clock
        self.rng = rng or random.SystemRandom()  # the AI's dice: nobody can predict them
        self.limits = limits or Limits()
        # When this process last stamped the store as up; None while no clock loop runs (tests).
        self._beaten: float | None = None
        self._limiter = MemoryLimiter(clock)

    @property
    def limiter(self) -> Limiter:
        """The one limiter for every rate and slot: the presence's (shared through Redis
        when processes are)."""
        return getattr(self.presence, "limiter", None) or self._limiter

    # --- views -------------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The choices a client offers, from the server's own constants (PROTOCOL v3 `config`)."""
        return {"variants": {name: {"levels": list(rules.levels), "cells": rules.cells}
                             for name, rules in VARIANTS.items()},
                "modes": list(MODES), "clocks": list(CLOCKS), "reactions": list(REACTIONS),
                "claim_after": self.limits.claim_after}

    def claimable_in(self, match: Match, role: str) -> float | None:
        """Seconds until `role` may claim `match`; None when the opponent is here or unseated."""
        if match.mode != "friend" or match.is_over or role not in SIDES:
            return None
        opponent = other(role)
        if match.seats[opponent] is None or self.presence.online(match.id)[opponent]:
            return None
        # Absence counts from the last sighting (in presence, or stored with the game), from
        # when the seat could first have been present, and never from before this process
        # started: after a restart a claim needs claim_after of absence it observed.
        since = max(self.presence.last_seen(match.id, opponent) or 0.0,
                    match.seen.get(opponent) or 0.0,
                    match.seated.get(opponent) or match.created,
                    getattr(self.presence, "started", 0.0))
        return max(0.0, self.limits.claim_after - (self.clock() - since))

    def view(self, match: Match, role: str) -> dict[str, Any]:
        """The Game as a receiver in `role` sees it."""
        game = match.view(role, online=self.presence.online(match.id),
                          claimable_in=self.claimable_in(match, role),
                          watchers=self.presence.watchers(match.id), now=self.clock())
        bots = [m for m in SIDES if is_bot_player(match.seats[m])]
        if bots:  # the sides a bot sits at: version 3 names mark them (ttt.bots.v3_names)
            game["bot_seats"] = bots
        if match.mode == "ai" and match.level and not match.rules.instant_ai:
            # The AI's seconds this move: less than its level's when the workers are busy.
            game["budget"] = self.thinker.budget_of(match.id) or getattr(
                match.rules.player(match.level), "seconds", None)
        return game

    @staticmethod
    def roles(match: Match) -> tuple[str, ...]:
        """The roles a game can be seen in."""
        if match.mode == "local":
            return ("both", "spectator")
        return (*(m for m in SIDES if match.seats[m] != AI), "spectator")

    def game_pushes(self, match: Match) -> list[Push]:
        """The game to everyone who sees it, each role its own view (built when sent)."""
        return [Push("game", room(match.id, role), functools.partial(self.view, match, role))
                for role in self.roles(match)]

    def _seated(self, match: Match, player: str, **extra: Any) -> dict[str, Any]:
        role = match.role(player)
        answer: dict[str, Any] = {"ok": True, **extra, "game": self.view(match, role),
                                  "you": role, "record": self.store.record(player)}
        if match.mode == "friend":
            answer["link"] = f"/g/{match.id}"
        return answer

    def origin(self, address: str) -> str | None:
        """A keyed hash of a client address: enough to count by, no address kept."""
        if not address:
            return None
        return hashlib.blake2b(address.encode(), key=self._salt, digest_size=8).hexdigest()

    # --- shared steps ------------------------------------------------------------------------

    def _load(self, game_id: str) -> Match:
        match = self.store.get(game_id)
        if match is None:
            raise MatchError("not_found", "no such game")
        return match

    def _update(self, game_id: str, change: Callable[[Match], Match | Update]
                ) -> tuple[Match, Match]:
        changed = self.store.update(game_id, change)
        if changed is None:
            raise MatchError("not_found", "no such game")
        return changed

    def _player(self, sid: str) -> str:
        conn = self.presence.connection(sid)
        if conn is None:  # connect refused it, so a client cannot get here
            raise MatchError("bad_request", "no session")
        return conn.player

    def _show(self, sid: str, match: Match, player: str) -> tuple[Match, list[Push]]:
        """Make the connection show `match`: the match as it now is (its presence stored),
        and the pushes for the games whose presence changed."""
        pushes: list[Push] = []
        for game_id in self.presence.attach(sid, match):
            if game_id == match.id:
                match = self._sighted(match)
                pushes += self.game_pushes(match)
            elif any(self.presence.online(game_id).values()) or self.presence.watchers(game_id):
                changed = self._sighted(self.store.get(game_id))
                if changed:  # else nobody else is looking at the game this connection left
                    pushes += self.game_pushes(changed)
            else:
                self._sighted(self.store.get(game_id))
        self.store.set_current(player, match.id)
        return match, pushes

    def _sighted(self, match: Match | None) -> Match | None:
        """The match with its seats' comings and goings stored (a write only on a change)."""
        if match is None or sighted(match, self.presence.online(match.id), 0.0) is match:
            return match
        changed = self.store.update(
            match.id, lambda m: sighted(m, self.presence.online(m.id), self.clock()))
        return changed[1] if changed else None

    def _enter(self, sid: str, match: Match, player: str, **extra: Any) -> Reply:
        match = self._named(match, player)
        match, pushes = self._show(sid, match, player)
        return Reply(self._seated(match, player, **extra), pushes,
                     show=room(match.id, match.role(player)))

    def _named(self, match: Match, player: str) -> Match:
        """The match showing the player's name as it is now (a rename rewrites only a few
        games: the others catch up here, when the player opens them)."""
        if (match.mode != "friend" or match.is_over
                or match.role(player) not in SIDES):
            return match
        name = self.store.name(player)
        if name is None or match.names.get(match.role(player)) == name:
            return match
        changed = self.store.update(match.id, lambda m: rename(m, player, name, self.clock()))
        return changed[1] if changed else match

    def _changed(self, after: Match, credits: tuple = ()) -> list[Push]:
        """The pushes for a change: the views, and the records it credited."""
        pushes = self.game_pushes(after)
        for who in sorted({c[0] for c in credits}):
            pushes.append(Push("record", player_room(who),
                               functools.partial(self.store.record, who)))
        return pushes

    @staticmethod
    def _credits(before: Match, after: Match) -> tuple[tuple[str, str, str], ...]:
        return tuple(results(before, after))

    # --- connections -------------------------------------------------------------------------

    def connect(self, sid: str, player: str, address: str = "", burst: float = 40) -> bool:
        """Whether a new connection of this player is accepted."""
        if not valid_id(player, 22, 22):
            return False
        return self.presence.connect(sid, player, burst, address, origin=self.origin(address))

    def disconnect(self, sid: str) -> list[Push]:
        """A connection went away: the games whose presence changed."""
        pushes: list[Push] = []
        for game_id in self.presence.disconnect(sid):
            match = self._sighted(self.store.get(game_id))
            if match:
                pushes += self.game_pushes(match)
        return pushes

    # --- events ------------------------------------------------------------------------------

    def new_game(self, sid: str, payload: dict) -> Reply:
        mode = choice(payload, "mode", MODES)
        you = choice(payload, "you", SIDES) if mode != "local" else "X"
        variant = choice(payload, "variant", tuple(VARIANTS), "classic")
        rules = VARIANTS[variant]
        level = choice(payload, "level", rules.levels) if mode == "ai" else None
        clock = choice(payload, "clock", (None, *CLOCKS))
        moves = moves_of(payload, rules.cells)
        player = self._player(sid)
        conn = self.presence.connection(sid)
        self._take_creation(player, conn.address)
        name = self.store.name(player) if mode != "local" else None
        # Outside any transaction: even a slow AI may play its opening move here.
        match = create(mode, player, self.clock(), you=you, level=level, rng=self.rng,
                       moves=moves, clock=clock, name=name, origin=self.origin(conn.address),
                       variant=variant, think=rules.instant_ai)
        with self._capped():
            self.store.create(match, self._caps())
        left = self._abandon_local(player, keep=match.id)  # before the views of the games left
        if ai_to_move(match):  # a slow AI's opening move: a worker plays it, a push shows it
            reply = self._enter_thinking(sid, self._think_later(match), player)
        else:
            reply = self._enter(sid, match, player)
        reply.pushes[:0] = left
        return reply

    def _abandon_local(self, player: str, keep: str) -> list[Push]:
        """End the player's other unfinished pass-and-play games: a new game takes their
        screen, and nobody else can ever finish them (they would count against the caps for
        30 days). After the new game is made, so a refused new game changes nothing."""
        pushes: list[Push] = []
        for game_id in self.store.live_games(player):
            match = self.store.get(game_id) if game_id != keep else None
            if match is None or match.mode != "local" or match.is_over:
                continue
            changed = self.store.update(game_id, lambda m: abandon(m, self.clock()))
            if changed and changed[1].rev != changed[0].rev:
                pushes += self.game_pushes(changed[1])
        return pushes

    def _caps(self) -> Caps:
        limits = self.limits
        return Caps(limits.live_per_player, limits.live_total, limits.live_per_address)

    @staticmethod
    @contextlib.contextmanager
    def _capped() -> Iterator[None]:
        """A create refused by its caps, as the refusal the player gets."""
        try:
            yield
        except CapReached as cap:
            raise MatchError("not_allowed", "you have too many unfinished games" if cap.per_player
                             else "the server is full; try again in a moment") from None

    def join(self, sid: str, payload: dict) -> Reply:
        player = self._player(sid)
        resumed = self._resume_if_stale()  # the views' time_left right after an outage
        if "game" in payload:
            match = self._load(game_id_of(payload))
            if (match.mode == "friend" and match.role(player) == "spectator"
                    and not match.is_over and None in match.seats.values()):
                # A seat taken is one more live game for the player: a creation to the rate,
                # and to the player's cap (so a rename or a flood of joins stays bounded).
                self._take_creation(player, self.presence.connection(sid).address)
                if self.store.count_live(player) >= self.limits.live_per_player:
                    raise MatchError("not_allowed", "you have too many unfinished games")
                name = self.store.name(player)
                _, match = self._update(match.id,
                                        lambda m: take_seat(m, player, self.clock(), name))
        else:
            current = self.store.current(player)
            match = self.store.get(current) if current else None
            if match is None:
                return Reply({"ok": True, "game": None, "you": "spectator",
                              "record": self.store.record(player)})
        if ai_to_move(match):  # thinking now (shared, not asked twice) or a stopped process's
            reply = self._enter_thinking(sid, self._think_later(match), player)
        else:
            reply = self._enter(sid, match, player)
        reply.pushes[:0] = resumed
        return reply

    def move(self, sid: str, payload: dict) -> Reply:
        game_id = game_id_of(payload)
        cell = whole(payload, "cell", 0, 80)
        version = whole(payload, "version", 0, 81) if "version" in payload else None
        player = self._player(sid)
        played: list[Match] = []
        late: list[bool] = []

        def change(match: Match) -> Update:
            now = self.clock()
            late.clear()  # a store may call a change again, on a newer match
            if expired(match, now):  # the clock ran out first: that is what lands
                late.append(True)
                return Update(time_out(match, now))
            played.append(play(match, player, cell, now, version))
            after = played[-1]
            if match.rules.instant_ai:  # microseconds: the reply lands in the same transaction
                after = ai_reply(after, self.rng, now)
            return Update(after, self._credits(match, after))

        pushes = self._resume_if_stale()  # a clock may end nothing before it got an outage back
        before, after = self._update(game_id, change)
        credits = self._credits(before, after)
        if late:
            return self._too_late(player, after, pushes + self._changed(after, credits))
        if ai_to_move(after):
            # A slow AI thinks in a worker: the answer carries the move now (and the reply,
            # if it is already in), and the reply follows as a `game` push.
            return self._answer_move(player, played[-1], before, self._think_later(after))
        return self._answer_move(player, played[-1], before, after)

    def _too_late(self, player: str, after: Match, pushes: list[Push]) -> Reply:
        """The refusal of a move that came after the time ran out: it carries the ended game,
        and the ending reaches the mover's own connections too (its page learns from both)."""
        message = ("the first move did not come in time: the game is called off"
                   if after.status == "aborted" else "your time ran out")
        answer = refusal("game_over", message)
        answer["game"] = self.view(after, after.role(player))
        return Reply(answer, [Push(p.event, p.room, p.payload, skip_sender=False)
                              for p in pushes])

    def _answer_move(self, player: str, played: Match, before: Match, after: Match) -> Reply:
        credits = self._credits(before, after)
        role = after.role(player)
        answer: dict[str, Any] = {"ok": True, "game": self.view(after, role)}
        if played.rev != after.rev:
            answer["played"] = self.view(played, role)
        if credits:
            answer["record"] = self.store.record(player)
        return Reply(answer, self._changed(after, credits))

    def _think(self, match: Match) -> tuple[Match, Match]:
        """The AI's move in `match`, waited for; (the match before it, the match after it)."""
        ticket = self._ask_ai(match)
        ticket.wait()
        return match, self.store.get(match.id) or match

    def _think_later(self, match: Match) -> Match:
        """Ask a worker for the AI's move in `match`, landed (and pushed) when it comes; the
        match as it is now (with the reply already, when the search ran inline)."""
        ticket = self._ask_ai(match)
        if not ticket.done():
            return match
        return self.store.get(match.id) or match

    def _enter_thinking(self, sid: str, match: Match, player: str, **extra: Any) -> Reply:
        """Enter a game whose AI may still be thinking: once the connection is in the game's
        room (the web layer joins it, then calls `then`), the answer is read again, so a
        reply that landed in between is in it, and any later one reaches it as a push."""
        reply = self._enter(sid, match, player, **extra)
        if not ai_to_move(match):
            return reply

        def caught_up() -> Reply:
            now = self.store.get(match.id)
            if now is not None and now.rev != match.rev:
                reply.answer["game"] = self.view(now, now.role(player))
            return Reply(reply.answer)

        reply.then = caught_up
        return reply

    def _ask_ai(self, match: Match) -> Ticket:
        """The search for the AI's move at this rev: queued once, whoever asks again."""
        owner = (match.humans() or [match.id])[0]  # one search at a time per person
        task = Task("move", match.variant, tuple(match.moves), match.level,
                    self.rng.getrandbits(63))
        return self.thinker.move(task, owner, match.origin or "", match.id, match.rev,
                                 functools.partial(self._land, match))

    def _land(self, match: Match, ticket: Ticket) -> None:
        """Play the worker's cell if the game is still where it was asked (compare-and-set on
        rev: a retried or repeated search never plays twice); push it to everyone."""
        if ticket.error is not None:
            log.warning("the AI's move in %s was not found: %s", match.id, ticket.error)
            return
        cell = ticket.result
        self.searched(ticket.seconds)

        def change(current: Match) -> Match | Update:
            if current.rev != match.rev:  # someone got in first: leave it as it is
                return current
            after = ai_plays(current, cell, self.clock())
            if not current.moves:  # the AI's opening move leaves a new game untouched
                after = replace(after, updated=current.updated)
            return Update(after, self._credits(current, after))

        try:
            changed = self.store.update(match.id, change)
        except (MatchError, StoreUnavailable) as error:  # a join or a restart plays it later
            log.warning("the AI's move in %s did not land: %s", match.id, error)
            return
        if changed and changed[1].rev != changed[0].rev:
            self.publish(self._changed(changed[1], self._credits(*changed)))

    def resume(self) -> int:
        """Ask for every AI move that was waiting when a process stopped; how many."""
        asked = 0
        for game_id in self.store.live_ids():
            match = self.store.get(game_id)
            if match is not None and ai_to_move(match):
                self._ask_ai(match)
                asked += 1
        return asked

    def _judge(self, sid: str, player: str, variant: str, moves: tuple[int, ...]) -> dict:
        """A position's evaluation: in-process for classic (microseconds), else from the
        thinker's cache or a worker; `busy` rather than a long wait."""
        rules = VARIANTS[variant]
        if rules.instant_ai:
            return rules.analyze(rules.from_moves(moves))
        conn = self.presence.connection(sid)
        address = (self.origin(conn.address) if conn else None) or ""
        try:
            ticket = self.thinker.analyze(Task("analyze", variant, moves), player, address)
        except Busy:
            raise MatchError("busy", "the AI is busy; try again in a moment") from None
        if not ticket.wait(self.answer_wait) or ticket.error is not None:
            raise MatchError("busy", "the AI is busy; try again in a moment")
        return ticket.result

    def analyze(self, sid: str, payload: dict) -> Reply:
        match = self._load(game_id_of(payload))
        if match.mode == "friend" and not match.is_over:
            raise MatchError("not_allowed", "no analysis while a game against a friend is on")
        ply = whole(payload, "ply", 0, len(match.moves)) if "ply" in payload else None
        rules = match.rules
        moves = tuple(match.moves if ply is None else match.moves[:ply])
        answer = {"ok": True, "analysis": self._judge(sid, self._player(sid), match.variant, moves),
                  "version": len(match.moves),
                  "ply": len(match.moves) if ply is None else ply}
        if match.is_over:
            answer.update(rules.review(match.moves))
        return Reply(answer)

    def hint(self, sid: str, payload: dict) -> Reply:
        player = self._player(sid)
        asked = hint(self._load(game_id_of(payload)), player, self.clock())  # refusals first
        judged = self._judge(sid, player, asked.variant, tuple(asked.moves))  # counted once found
        before, match = self._update(asked.id, lambda m: hint(m, player, self.clock()))
        if match.moves != asked.moves:  # a move got in while the search ran: judge this one
            judged = self._judge(sid, player, match.variant, tuple(match.moves))
        pushes = self.game_pushes(match) if match.rev != before.rev else []
        return Reply({"ok": True, "game": self.view(match, match.role(player)),
                      "best": judged["best"], "advice": judged.get("advice", "")}, pushes)

    def rematch(self, sid: str, payload: dict) -> Reply:
        game_id = game_id_of(payload)
        player = self._player(sid)
        old = self._load(game_id)
        role = old.role(player)
        if role == "spectator":
            raise MatchError("spectator", "only the players can start a rematch")
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
            marked, fresh = rematch(match, player, self.clock(), self.rng,
                                    think=match.rules.instant_ai, names=names, origin=origin)
            # Both people sit in the new game: the caps are counted in this same write.
            return Update(marked, create=fresh, caps=self._caps())

        with self._capped():
            before, old = self._update(game_id, change)
        if old.rematch_id is None:  # an offer, made now or before
            pushes = self.game_pushes(old) if old.rev != before.rev else []
            return Reply({"ok": True, "started": False, "game": self.view(old, role)}, pushes)
        continued = old.rev != before.rev  # this call started it
        fresh = self._load(old.rematch_id)
        if ai_to_move(fresh):  # a slow AI opens the rematch in a worker; a push shows it
            reply = self._enter_thinking(sid, self._think_later(fresh), player, started=True)
        else:
            reply = self._enter(sid, fresh, player, started=True)
        if continued:  # the old game changed (continued, offer gone): whoever reads it sees so
            reply.pushes.extend(self.game_pushes(old))
        # Everyone who saw the old game follows: each side now sits at the other.
        swap = {"X": "O", "O": "X", "both": "both", "spectator": "spectator"}
        for seen in self.roles(old):
            reply.pushes.append(Push("rematch", room(old.id, seen), functools.partial(
                lambda role: {"from": old.id, "game": self.view(fresh, role)}, swap[seen])))
        return reply

    def _take_creation(self, player: str, address: str) -> None:
        """Count one new game (a rematch, a seat taken too) against the player's and the
        address's rate."""
        per_minute = self.limits.creations_per_minute
        rate = per_minute / 60
        if not (self.limiter.take(f"create:p:{player}", rate, per_minute)
                and self.limiter.take(f"create:a:{self.origin(address)}", rate, per_minute)):
            raise MatchError("rate_limited", "too many new games at once: wait a moment")

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
        return Reply({"ok": True, "game": self.view(match, match.role(player))},
                     self.game_pushes(match))

    def _end(self, sid: str, payload: dict, change: Callable[[Match, str, float], Match]
             ) -> Reply:
        player = self._player(sid)

        def ending(match: Match) -> Update:
            after = change(match, player, self.clock())
            return Update(after, self._credits(match, after))

        before, match = self._update(game_id_of(payload), ending)
        credits = self._credits(before, match)
        answer: dict[str, Any] = {"ok": True, "game": self.view(match, match.role(player))}
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
        waited = self.claimable_in(match, match.role(player))
        return self._end(sid, payload, lambda m, p, now: claim(m, p, waited, now))

    def set_name(self, sid: str, payload: dict) -> Reply:
        name = clean_name(payload.get("name"))
        player = self._player(sid)
        per_minute = self.limits.renames_per_minute
        if not self.limiter.take(f"rename:{player}", per_minute / 60, per_minute):
            raise MatchError("rate_limited", "too many renames: wait a moment")
        self.store.set_name(player, name)
        pushes: list[Push] = []
        conn = self.presence.connection(sid)
        shown = [conn.game] if conn and conn.game else []
        # The shown game and a few live ones change now; the rest show the new name when the
        # player next opens them (`_named`): a rename costs a bounded number of writes.
        live = self.store.live_games(player)[: self.limits.rename_batch]
        for game_id in dict.fromkeys([*shown, *live]):
            changed = self.store.update(game_id, lambda m: rename(m, player, name, self.clock()))
            if changed and changed[1].rev != changed[0].rev:
                # The sender's own page shows the new name too: it has no game in the answer.
                pushes += [Push(p.event, p.room, p.payload, skip_sender=False)
                           for p in self.game_pushes(changed[1])]
        return Reply({"ok": True, "name": name}, pushes)

    def react(self, sid: str, payload: dict) -> Reply:
        reaction = choice(payload, "reaction", REACTIONS)
        match = self._load(game_id_of(payload))
        player = self._player(sid)
        role = match.role(player)
        if role == "spectator":
            raise MatchError("spectator", "only the players can react")
        if match.mode != "friend" or not all(match.seats.values()):
            raise MatchError("not_allowed", "reactions are for a friend who has joined")
        if not self.limiter.take(f"react:{player}", 1 / self.limits.reaction_every, 1):
            raise MatchError("rate_limited", "one reaction a second")
        push = {"game": match.id, "from": role, "reaction": reaction}
        return Reply({"ok": True}, [Push("reaction", room(match.id, seen), push, False)
                                    for seen in self.roles(match)])

    # --- the server's own moves -------------------------------------------------------------

    BEAT_EVERY = 1.0  # seconds between this process's stamps in the store

    def resume_clocks(self) -> list[Push]:
        """Stamp the store as served now; after an outage (no stamp for `outage_after`), give
        every running clock the downtime back first. The pushes of the games credited."""
        now = self.clock()
        if self._beaten is not None and now - self._beaten < self.BEAT_EVERY:
            return []
        if self._beaten is None:
            self._beaten = float("-inf")  # a clock loop runs from now on: moves check it
        credited = self.store.resume(self.clock, self.limits.outage_after, credit_outage)
        self._beaten = now
        return [push for match in credited for push in self.game_pushes(match)]

    def _resume_if_stale(self) -> list[Push]:
        """`resume_clocks` when the clock loop has not stamped for a while (the store is back)."""
        if self._beaten is None or self.clock() - self._beaten <= self.limits.outage_after:
            return []
        return self.resume_clocks()

    def tick(self) -> list[Push]:
        """End the timed games whose clock ran out; the pushes that says so."""
        # Once a clock loop runs, it stamps the store first (and gives back an outage).
        pushes: list[Push] = self.resume_clocks() if self._beaten is not None else []
        for game_id in self.store.due(self.clock()):
            changed = self.store.update(game_id, lambda m: time_out(m, self.clock()))
            if changed and changed[1].rev != changed[0].rev:
                pushes += self.game_pushes(changed[1])
        return pushes

    # Told how long each AI search took (the web layer's metrics); nothing by default.
    searched: Callable[[float], None] = staticmethod(lambda seconds: None)

    EVENTS = ("new_game", "join", "move", "analyze", "hint", "rematch", "decline", "resign",
              "abort", "claim", "set_name", "react")

    def handle(self, event: str, sid: str, payload: Any) -> Reply:
        """Run one client event: refusals are answers, never exceptions."""
        if event not in self.EVENTS:
            return Reply(refusal("bad_request", "unknown event"))
        if not isinstance(payload, dict):
            return Reply(refusal("bad_request", "the payload must be an object"))
        try:
            return getattr(self, event)(sid, payload)
        except MatchError as error:
            return Reply(refusal(error.code, error.message))
