"""The master: the one authority over every game, with one method per client event.

A `Table` takes the store, presence, a clock and a random source (one `Services` value,
ttt.master.services); it checks the payload, decides, writes through the store, and returns a
`Reply`: the answer for the sender, what to push to whom (one view per receiver's role), and
which game the sender's connection now shows. Its parts (the views, the AI's turns, the
endings off the board, the clocks) take a match and the services and return answers and
pushes; none holds the Table. It never imports Flask or Socket.IO: the web layer only turns a
Reply into emits, through its one publisher (ttt.web.realtime.publisher).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from typing import Any

from ttt.ai.randomness import Dice
from ttt.game.endings import leave
from ttt.game.match import (
    CLOCKS,
    MODES,
    SIDES,
    Match,
    MatchError,
    ai_reply,
    ai_to_move,
    create,
    expired,
    play,
    rename,
    time_out,
)
from ttt.game.variants import VARIANTS
from ttt.master.ai_turns import AiTurns
from ttt.master.clocks import Clocks
from ttt.master.creations import (
    Crowded,
    abandon_local,
    capped,
    caps,
    room_for_ai,
    room_for_unjoined,
    take_creation,
)
from ttt.master.endgame import Endgame
from ttt.master.limits import Limiter, Limits
from ttt.master.payloads import choice, clean_name, from_of, game_id_of, moves_of, valid_id, whole
from ttt.master.replies import Push, Reply, refusal, room
from ttt.master.services import Cached, HouseRules, Presence, Services, Thinker
from ttt.master.steps import Credits, changed, credits_of, enter, leave_ai, sight, take_a_seat
from ttt.master.views import REACTIONS, Views
from ttt.pool.thinker import Inline
from ttt.runtime.translation import N_
from ttt.store import Store, Update


def _moved(match: Match, player: str) -> bool:
    """Whether `player` made a move in `match` (X moves first; a preset start is nobody's)."""
    role = match.role(player)
    played = range(match.start, len(match.moves))
    if role == "both":
        return bool(played)
    return role in SIDES and any((i % 2 == 0) == (role == "X") for i in played)


def _handed(name: str) -> property:
    """A collaborator the web layer or a test hands the table after it is built: the table
    builds its parts again on the new services (no part ever reads the table)."""

    def get(self: Table) -> Any:
        return getattr(self.services, name)

    def put(self: Table, value: Any) -> None:
        self._build(dataclasses.replace(self.services, **{name: value}))

    return property(get, put, doc=f"The services' `{name}`.")


class Table:
    """Every game's life, decided in one place: the events here, around a few parts that
    take the services: the views, the AI's turns, the endings off the board and the clocks
    (as lila's round is a few small services around one actor)."""

    EVENTS = ("new_game", "join", "move", "analyze", "hint", "rematch", "decline", "resign",
              "abort", "claim", "set_name", "react", "games")

    presence = _handed("presence")
    thinker = _handed("thinker")
    clock = _handed("clock")
    rng = _handed("rng")
    limits = _handed("limits")
    publish = _handed("publish")
    searched = _handed("searched")
    answer_wait = _handed("answer_wait")

    def __init__(self, store: Store, presence: Presence, clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None, limits: Limits | None = None,
                 salt: bytes = b"", thinker: Thinker | None = None,
                 rules: HouseRules | None = None, bot_seconds: float = 10.0) -> None:
        # Without a thinker (worker processes in the app) a search runs inline, on the caller's
        # thread (unit tests, the command line). The AI's dice: nobody can predict them.
        self._build(Services(store=store, presence=presence, thinker=thinker or Inline(),
                             clock=clock, rng=rng or Dice(), limits=limits or Limits(),
                             salt=salt[:64], bot_seconds=bot_seconds, rules=rules,
                             cache=store if isinstance(store, Cached) else None))

    def _build(self, services: Services) -> None:
        """The parts on these services (the watchers' news and the last stamp carry over)."""
        parts = self.__dict__
        self.services = services
        self.views = Views(services, parts["views"].watching if "views" in parts else None)
        self.ai = AiTurns(services, self.views)
        self.endgame = Endgame(services, self.views, self.ai)
        self.clocks = Clocks(services, self.views,
                             parts["clocks"].beaten if "clocks" in parts else None)
        # The parts' events, where `handle` finds them: bound once, no extra call per event.
        self.games = self.views.games
        self.analyze, self.hint = self.ai.analyze, self.ai.hint
        self.rematch, self.decline = self.endgame.rematch, self.endgame.decline
        self.resign, self.abort, self.claim = (self.endgame.resign, self.endgame.abort,
                                               self.endgame.claim)

    # --- the parts' events and steps, as the web layer, the bots and the tests call them ----

    def config(self) -> dict[str, Any]:
        """The choices a client offers (PROTOCOL v3 `config`)."""
        return self.views.config()

    def view(self, match: Match, role: str) -> dict[str, Any]:
        """The Game as a receiver in `role` sees it."""
        return self.views.view(match, role)

    def game_pushes(self, match: Match) -> list[Push]:
        """The game to everyone who sees it, each role its own view (built when sent)."""
        return self.views.game_pushes(match)

    def resume(self) -> int:
        """Ask for every AI move that was waiting when a process stopped; how many."""
        return self.ai.resume()

    def resume_clocks(self) -> list[Push]:
        """Stamp the store as served now (giving an outage back first); the pushes."""
        return self.clocks.resume_clocks()

    def tick(self) -> list[Push]:
        """End the timed games whose clock ran out, tell the absences that outlasted a blip
        (PROTOCOL v5) and the `watchers` changes that waited for their second: the pushes
        that say so. The persons who made a first move are marked in the store first."""
        self.mark_played()
        return self.clocks.tick() + self.departures() + self.views.watchers_due()

    def mark_played(self) -> None:
        """Write the marks of the persons who made their first move since the last tick."""
        self.services.marks.write(self.services.store)

    def departures(self) -> list[Push]:
        """The games whose seat has stayed empty past the blip: their views, now it is news."""
        svc = self.services
        pushes: list[Push] = []
        for game_id in svc.presence.due():
            match = sight(svc, svc.store.get(game_id))
            if match is not None:
                pushes += self.views.game_pushes(match)
        return pushes

    @property
    def store(self) -> Store:
        """The game store (handed once: its cache goes with it)."""
        return self.services.store

    @property
    def limiter(self) -> Limiter:
        """The one limiter for every rate and slot: the presence's (shared through Redis
        when processes are)."""
        return self.services.limiter

    def origin(self, address: str) -> str | None:
        """A keyed hash of a client address: enough to count by, no address kept."""
        return self.services.origin(address)

    # --- connections -------------------------------------------------------------------------

    def connect(self, sid: str, player: str, address: str = "") -> bool:
        """Whether a new connection of this player is accepted."""
        if not valid_id(player, 22, 22):
            return False
        return self.presence.connect(sid, player, address, origin=self.origin(address))

    def disconnect(self, sid: str) -> list[Push]:
        """A connection went away: the games whose presence changed."""
        svc = self.services
        pushes: list[Push] = []
        for game_id, seats in svc.presence.disconnect(sid).items():
            if not seats:
                pushes += self.views.watchers_changed(game_id)
                continue
            match = sight(svc, svc.store.get(game_id))
            if match:
                pushes += self.views.game_pushes(match)
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
        svc = self.services
        player = svc.player(sid)
        name, current, record, live = svc.store.profile(player)  # one read
        leaving = self._leaving(payload, current)
        address = svc.presence.connection(sid).address  # type: ignore[union-attr] (`player`: one)
        if level is not None:
            room_for_ai(svc, variant, level, address)
        take_creation(svc, player, address, new=True, record=record)
        waiting, local = self._unfinished(player, live)  # each live game read once
        if mode == "friend":
            room_for_unjoined(svc, player, address, waiting)
        name = name if mode != "local" else None
        # Outside any transaction: even a slow AI may play its opening move here.
        match = create(mode, player, svc.clock(), you=you, level=level, rng=svc.rng,
                       moves=moves, clock=clock, name=name, origin=svc.origin(address),
                       variant=variant, think=rules.instant_ai)
        planned = svc.presence.plan(sid, match)  # the leases and the current game ride the
        with capped():  # create's round trip
            svc.create(match, caps(svc), current=player, around=planned)
        abandoned = abandon_local(self.views, local)  # before the games left's views
        # The AI game the page showed ends by the leaving rule (PROTOCOL v4); once the new
        # game is made, so a refused new game changes nothing.
        left, left_pushes = leave_ai(self.views, player, leaving)
        if ai_to_move(match):  # a slow AI's opening move: a worker plays it, a push shows it
            reply = self.ai.enter_thinking(sid, self.ai.think_later(match), player, left=left,
                                           planned=planned)
        else:  # the record as read above, unless the game left was counted in it since
            reply = enter(self.views, sid, match, player, left=left, planned=planned,
                          record=record if left is None else None)
        reply.pushes[:0] = left_pushes + abandoned
        return reply

    def _unfinished(self, player: str, live: list[str]) -> tuple[int, list[str]]:
        """The player's live games, each read once: how many friend games (among the first
        `live_per_player`) wait for their friend, and the pass-and-play games a new game
        ends (`abandon_local`)."""
        store, first = self.services.store, self.services.limits.live_per_player
        waiting, local = 0, []
        for index, match in enumerate(store.get_many(live) if live else ()):  # one read
            if match is None or match.is_over:
                continue
            if match.mode == "local":
                local.append(match.id)
            elif (match.mode == "friend" and index < first
                  and None in match.seats.values()):
                waiting += 1
        return waiting, local

    # --- leaving a game against the AI (PROTOCOL v4): the server's rule, not the page's -----

    @staticmethod
    def _leaving(payload: dict, current: str | None) -> str | None:
        """The id of the game a new game leaves: the payload's `from` (checked here, before
        anything changes), else, for a version 1-3 client that sends none, the player's
        current game (the one it last made or opened: a one-tab page's game on screen).
        `_leave_ai` ends it only if it is a live game of the player against the AI."""
        if "from" in payload:
            return from_of(payload)
        return current

    def leave_idle(self, idle_before: float) -> list[Push]:
        """End by the leaving rule every live game against the AI nobody touched since
        `idle_before` (a closed tab is a game left): the idle purge's first step. The pushes
        of the games and records that changed."""
        svc = self.services
        pushes: list[Push] = []
        for game_id in svc.store.live_ids():
            match = svc.store.get(game_id)
            if (match is None or match.mode != "ai" or match.is_over
                    or match.updated >= idle_before):
                continue
            person = next(iter(match.humans()), None)
            if person is None:
                continue

            credited: list[Credits] = [()]

            def change(current: Match, person: str = person,
                       credited: list[Credits] = credited) -> Match | Update:
                credited[0] = ()  # a store may call a change again, on a newer match
                if current.is_over or current.updated >= idle_before:  # touched meanwhile
                    return current
                after = leave(current, person, svc.clock())
                credited[0] = credits_of(current, after)
                return Update(after, credited[0])

            ended = svc.write(game_id, change)
            if ended and ended[1].rev != ended[0].rev:
                pushes += changed(self.views, ended[1], credited[0])
        return pushes

    def join(self, sid: str, payload: dict) -> Reply:
        svc = self.services
        player = svc.player(sid)
        resumed = self.clocks.resume_if_stale()  # the views' time_left right after an outage
        seated, record, planned = False, None, None  # seated: the answer tells the side
        if "game" in payload:
            match, profile = svc.load_for(game_id_of(payload), player)  # one read on Redis
            if (match.mode == "friend" and match.role(player) == "spectator"
                    and not match.is_over and None in match.seats.values()
                    and payload.get("watch") is not True):  # `watch`: never a seat (v5)
                # A seat taken is one more live game for the player: a creation to the rate,
                # and to the player's cap (so a rename or a flood of joins stays bounded).
                take_creation(svc, player, svc.presence.connection(sid).address)  # type: ignore
                name, _, record, live = profile or svc.store.profile(player)  # one read
                cap = svc.limits.live_per_player  # `live` may hold expired games: then counted
                if len(live) >= cap and svc.store.count_live(player) >= cap:
                    raise MatchError("not_allowed", N_("you have too many unfinished games"))
                match, planned = take_a_seat(svc, sid, match.id, player, name)
                seated = match.role(player) != "spectator"
        else:
            current = svc.store.current(player)
            match = svc.store.get(current) if current else None
            if match is None:
                return Reply({"ok": True, "game": None, "you": "spectator",
                              "record": svc.store.record(player)})
        if ai_to_move(match):  # thinking now (shared, not asked twice) or a stopped process's
            reply = self.ai.enter_thinking(sid, self.ai.think_later(match), player)
        elif seated:
            reply = enter(self.views, sid, match, player, record, named_now=True, seated=True,
                          planned=planned)
        else:
            reply = enter(self.views, sid, match, player)
        reply.pushes[:0] = resumed
        return reply

    def move(self, sid: str, payload: dict) -> Reply:
        game_id = game_id_of(payload)
        cell = whole(payload, "cell", 0, 80)
        version = whole(payload, "version", 0, 81) if "version" in payload else None
        svc = self.services
        player = svc.player(sid)
        played: list[Match] = []
        late: list[bool] = []
        credited: list[Credits] = [()]

        def change(match: Match) -> Update:
            now = svc.clock()
            late.clear()  # a store may call a change again, on a newer match
            if expired(match, now):  # the clock ran out first: that is what lands
                late.append(True)
                ended = time_out(match, now)
                credited[0] = credits_of(match, ended)  # pushed; credited by the store's rules
                return Update(ended)
            played.append(play(match, player, cell, now, version))
            after = played[-1]
            if match.rules.instant_ai:  # microseconds: the reply lands in the same transaction
                after = ai_reply(after, svc.rng, now)
            credited[0] = credits_of(match, after)  # once per move
            return Update(after, credited[0])

        # A clock may end nothing before it got an outage back.
        pushes = self.clocks.resume_if_stale()
        before, after = svc.update(game_id, change)
        if late:
            return self._too_late(player, after, pushes + changed(self.views, after, credited[0]))
        if not _moved(before, player):  # the person's first move in this game
            svc.marks.mark(player)
        if ai_to_move(after):
            # A slow AI thinks in a worker: the answer carries the move now (and the reply,
            # if it is already in), and the reply follows as a `game` push.
            thought = self.ai.think_later(after)
            credits = credited[0] if thought is after else credits_of(before, thought)
            return self._answer_move(player, played[-1], thought, credits)
        return self._answer_move(player, played[-1], after, credited[0])

    def _too_late(self, player: str, after: Match, pushes: list[Push]) -> Reply:
        """The refusal of a move that came after the time ran out: it carries the ended game,
        and the ending reaches the mover's own connections too (its page learns from both)."""
        message = ("the first move did not come in time: the game is called off"
                   if after.status == "aborted" else "your time ran out")
        answer = refusal("game_over", message)
        answer["game"] = self.views.view(after, after.role(player))
        return Reply(answer, [Push(p.event, p.room, p.payload, skip_sender=False)
                              for p in pushes])

    def _answer_move(self, player: str, played: Match, after: Match, credits: Credits) -> Reply:
        role = after.role(player)
        answer: dict[str, Any] = {"ok": True, "game": self.views.view(after, role)}
        if played.rev != after.rev:
            answer["played"] = self.views.view(played, role)
        if credits:
            answer["record"] = self.services.store.record(player)
        return Reply(answer, changed(self.views, after, credits))

    def set_name(self, sid: str, payload: dict) -> Reply:
        name = clean_name(payload.get("name"))
        svc = self.services
        player = svc.player(sid)
        per_minute = svc.limits.renames_per_minute
        if not svc.limiter.take(f"rename:{player}", per_minute / 60, per_minute):
            raise MatchError("rate_limited", "too many renames: wait a moment")
        svc.store.set_name(player, name)
        pushes: list[Push] = []
        conn = svc.presence.connection(sid)
        shown = [conn.game] if conn and conn.game else []
        # The shown game and a few live ones change now; the rest show the new name when the
        # player next opens them (`_named`): a rename costs a bounded number of writes.
        live = svc.store.live_games(player)[: svc.limits.rename_batch]
        for game_id in dict.fromkeys([*shown, *live]):
            renamed = svc.write(game_id, lambda m: rename(m, player, name, svc.clock()))
            if renamed and renamed[1].rev != renamed[0].rev:
                # The sender's own page shows the new name too: it has no game in the answer.
                pushes += [Push(p.event, p.room, p.payload, skip_sender=False)
                           for p in self.views.game_pushes(renamed[1])]
        return Reply({"ok": True, "name": name}, pushes)

    def react(self, sid: str, payload: dict) -> Reply:
        reaction = choice(payload, "reaction", REACTIONS)
        svc = self.services
        match = svc.load(game_id_of(payload))
        player = svc.player(sid)
        role = match.role(player)
        if role == "spectator":
            raise MatchError("spectator", "only the players can react")
        if match.mode != "friend" or not all(match.seats.values()):
            raise MatchError("not_allowed", N_("reactions are for a friend who has joined"))
        if not svc.limiter.take(f"react:{player}", 1 / svc.limits.reaction_every, 1):
            raise MatchError("rate_limited", "one reaction a second")
        push = {"game": match.id, "from": role, "reaction": reaction}
        return Reply({"ok": True}, [Push("reaction", room(match.id, seen), push, False)
                                    for seen in self.views.roles(match)])

    def handle(self, event: str, sid: str, payload: Any) -> Reply:
        """Run one client event: refusals are answers, never exceptions."""
        if event not in self.EVENTS:
            return Reply(refusal("bad_request", "unknown event"))
        if not isinstance(payload, dict):
            return Reply(refusal("bad_request", "the payload must be an object"))
        try:
            return getattr(self, event)(sid, payload)
        except MatchError as error:
            answer = refusal(error.code, error.message)
            if isinstance(error, Crowded):  # PROTOCOL v4: the levels that still start
                answer["available"] = answer["error"]["available"] = error.available
            return Reply(answer)
