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
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ttt.ai_turns import AiTurns
from ttt.clocks import Clocks
from ttt.dice import Dice
from ttt.endgame import Endgame
from ttt.endings import abandon, leave
from ttt.limits import Limiter, Limits, MemoryLimiter, prefix_of
from ttt.match import (
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
    results,
    sighted,
    take_seat,
    time_out,
)
from ttt.payloads import choice, clean_name, from_of, game_id_of, moves_of, valid_id, whole
from ttt.replies import N_, Push, Reply, player_room, refusal, room
from ttt.store import CapReached, Caps, Store, Update
from ttt.thinker import Inline, Task, Thinker
from ttt.variants import VARIANTS
from ttt.views import REACTIONS, Views

# What the web layer, the bots and the tests take from here (some defined in the parts' modules;
# `Limits` lives in ttt.limits).
__all__ = ["REACTIONS", "Limits", "Push", "Reply", "Table", "player_room", "refusal", "room",
           "valid_id"]



# A shared address (a school, a carrier's NAT) makes this many persons' worth of new games a
# minute; its newcomers (cookies that have not played yet) together make one person's worth.
PEOPLE_PER_ADDRESS = 10
NEWCOMERS_PER_ADDRESS = 1
MARKED_KEPT = 100_000  # players this process knows are marked as having played (no rewrite)


def _moved(match: Match, player: str) -> bool:
    """Whether `player` made a move in `match` (X moves first; a preset start is nobody's)."""
    role = match.role(player)
    played = range(match.start, len(match.moves))
    if role == "both":
        return bool(played)
    return role in SIDES and any((i % 2 == 0) == (role == "X") for i in played)


def _cap_words(cap: CapReached) -> str:
    """Which live-game cap refused a new game, said."""
    if getattr(cap, "per_address", False):
        return N_("too many unfinished games from your address (a shared network): finish some")
    if cap.per_player:
        return N_("you have too many unfinished games")
    return N_("the server is full; try again in a moment")


class Crowded(MatchError):
    """A new game the AI has no room for now: `busy`, with the levels that still start."""

    def __init__(self, message: str, available: list[str]) -> None:
        super().__init__("busy", message)
        self.available = available


class Table:
    """Every game's life, decided in one place: the events here, around a few parts it holds
    and hands what each needs: the views, the AI's turns, the endings off the board and the
    clocks (as lila's round is a few small services around one actor)."""

    def __init__(self, store: Store, presence: Any, clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None, limits: Limits | None = None,
                 salt: bytes = b"", thinker: Thinker | None = None) -> None:
        self.store = store
        # Every slow search goes through the thinker (worker processes in the app); without
        # one it runs inline, on the caller's thread (unit tests, the command line).
        self.thinker: Thinker = thinker or Inline()
        self._salt = salt[:64]
        self.presence = presence
        self.clock = clock
        self.rng = rng or Dice()  # the AI's dice: nobody can predict them (ttt.dice)
        self.limits = limits or Limits()
        self._limiter = MemoryLimiter(clock)
        self._marked: set[str] = set()  # players marked as having played (`_mark_played`)
        self._unmarked: set[str] = set()  # ... not yet written to the store
        self._marking = threading.Lock()
        self.views = Views(store, presence, clock, self.limits, self.thinker,
                           player=self._player)
        self.ai = AiTurns(store, presence, clock, self.thinker, self.rng, self.views,
                          player=self._player, load=self._load, update=self._update,
                          enter=self._enter, origin=self.origin, changed=self._changed,
                          credits=self._credits)
        self.endgame = Endgame(store, presence, clock, self.rng, self.views,
                               player=self._player, load=self._load, update=self._update,
                               origin=self.origin, enter=self._enter,
                               enter_thinking=self.ai.enter_thinking,
                               think_later=self.ai.think_later,
                               take_creation=self._take_creation, leave_ai=self._leave_ai,
                               left=self._left, changed=self._changed, credits=self._credits,
                               caps=self._caps, capped=self._capped)
        self.clocks = Clocks(store, self.clock, self.limits, self.views)
        # Where pushes made off any event go (an AI move landing later): set by the web layer.
        self.publish: Callable[[list[Push]], None] = lambda pushes: None
        self.answer_wait = 5.0  # seconds an `analyze` or hint may wait for a worker
        # Told how long each AI search took (the web layer's metrics); nothing by default.
        self.searched: Callable[[float], None] = lambda seconds: None
        # The parts' events, where `handle` finds them: bound once, no extra call per event.
        self.games = self.views.games
        self.analyze, self.hint = self.ai.analyze, self.ai.hint
        self.rematch, self.decline = self.endgame.rematch, self.endgame.decline
        self.resign, self.abort, self.claim = (self.endgame.resign, self.endgame.abort,
                                               self.endgame.claim)

    # What the web layer and the tests set after construction (a thinker, a clock, where the
    # AI's moves go), handed on to each part that holds it: a part never reads the table.
    HANDED = {"presence": ("views", "ai", "endgame"),
              "clock": ("views", "ai", "endgame", "clocks"),
              "thinker": ("views", "ai"), "rng": ("ai", "endgame"),
              "limits": ("views", "clocks"), "publish": ("ai",), "searched": ("ai",),
              "answer_wait": ("ai",)}

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        for part in self.HANDED.get(name, ()):
            if part in self.__dict__:  # not yet while the table is being built
                setattr(self.__dict__[part], name, value)

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
        that say so. The persons who made a first move are marked in the store first
        (`mark_played`)."""
        self.mark_played()
        return self.clocks.tick() + self.departures() + self.views.watchers_due()

    def departures(self) -> list[Push]:
        """The games whose seat has stayed empty past the blip: their views, now it is news."""
        due = getattr(self.presence, "due", None)
        pushes: list[Push] = []
        for game_id in due() if due is not None else ():
            match = self._sighted(self.store.get(game_id))
            if match is not None:
                pushes += self.views.game_pushes(match)
        return pushes

    @property
    def limiter(self) -> Limiter:
        """The one limiter for every rate and slot: the presence's (shared through Redis
        when processes are)."""
        return getattr(self.presence, "limiter", None) or self._limiter

    def origin(self, address: str) -> str | None:
        """A keyed hash of a client address: enough to count by, no address kept."""
        if not address:
            return None
        address = prefix_of(address)  # an IPv6 /64 is one address (one home, one phone)
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
        for game_id, seats in self.presence.attach(sid, match).items():
            if not seats:  # a spectator came or went: a small push, at most one a second
                pushes += self.views.watchers_changed(game_id)
            elif game_id == match.id:
                match = self._sighted(match)
                pushes += self.views.game_pushes(match)
            elif any(self.presence.online(game_id).values()) or self.presence.watchers(game_id):
                changed = self._sighted(self.store.get(game_id))
                if changed:  # else nobody else is looking at the game this connection left
                    pushes += self.views.game_pushes(changed)
            elif not self._settled(game_id, "friend"):  # `sighted` acts on a live friend game
                self._sighted(self.store.get(game_id))
        self.store.set_current(player, match.id)
        return match, pushes

    def _settled(self, game_id: str, mode: str) -> bool:
        """Whether the store's cached copy (maybe stale, never read from the database) shows
        the game over, or of another mode than `mode`. Both facts are final (a finished game
        stays finished, its mode never changes), so a change that acts only on a live game
        of `mode` would leave it as it is: skipping it saves a read, and with SQLite a write
        transaction under the write lock (issue 28: a new game after a finished one read the
        finished one twice). Without a cached copy, the change is tried as before."""
        cached = getattr(self.store, "cached", None)
        match = cached(game_id) if cached is not None else None
        return match is not None and (match.is_over or match.mode != mode)

    def _sighted(self, match: Match | None) -> Match | None:
        """The match with its seats' comings and goings stored (a write only on a change)."""
        if match is None or sighted(match, self.presence.online(match.id), 0.0) is match:
            return match
        changed = self.store.update(
            match.id, lambda m: sighted(m, self.presence.online(m.id), self.clock()))
        return changed[1] if changed else None

    def _enter(self, sid: str, match: Match, player: str, record: dict | None = None,
               **extra: Any) -> Reply:
        """Show the player `match`; `record`: theirs if just read (else read here)."""
        match = self._named(match, player)
        match, pushes = self._show(sid, match, player)
        return Reply(self.views.seated(match, player, record, **extra), pushes,
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
        pushes = self.views.game_pushes(after)
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
        for game_id, seats in self.presence.disconnect(sid).items():
            if not seats:
                pushes += self.views.watchers_changed(game_id)
                continue
            match = self._sighted(self.store.get(game_id))
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
        player = self._player(sid)
        # The name, the current game, the record and the live games in one read (issue 28).
        name, current, record, live = self.store.profile(player)
        leaving = self._leaving(payload, current)
        conn = self.presence.connection(sid)
        if level is not None:
            self._room_for_ai(variant, level, conn.address)
        self._take_creation(player, conn.address, new=True, record=record)
        if mode == "friend":
            self._room_for_unjoined(player, conn.address, live)
        name = name if mode != "local" else None
        # Outside any transaction: even a slow AI may play its opening move here.
        match = create(mode, player, self.clock(), you=you, level=level, rng=self.rng,
                       moves=moves, clock=clock, name=name, origin=self.origin(conn.address),
                       variant=variant, think=rules.instant_ai)
        with self._capped():
            self.store.create(match, self._caps())
        abandoned = self._abandon_local(live)  # before the games left's views
        # The AI game the page showed ends by the leaving rule (PROTOCOL v4); once the new
        # game is made, so a refused new game changes nothing.
        left, left_pushes = self._leave_ai(player, leaving)
        if ai_to_move(match):  # a slow AI's opening move: a worker plays it, a push shows it
            reply = self.ai.enter_thinking(sid, self.ai.think_later(match), player, left=left)
        else:  # the record as read above, unless the game left was counted in it since
            reply = self._enter(sid, match, player, left=left,
                                record=record if left is None else None)
        reply.pushes[:0] = left_pushes + abandoned
        return reply

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

    def _leave_ai(self, player: str, game_id: str | None) -> tuple[dict | None, list[Push]]:
        """End `game_id` when it is a live game of the player against the AI: called off while
        abortable, else resigned (a loss in the record). The answer's `left` (None when
        nothing was left) and the pushes of the game and the record."""
        if game_id is None or self._settled(game_id, "ai"):  # `leave` acts on a live AI game
            return None, []

        def change(match: Match) -> Update:
            after = leave(match, player, self.clock())
            return Update(after, self._credits(match, after))

        changed = self.store.update(game_id, change)
        if changed is None or changed[1].rev == changed[0].rev:
            return None, []  # no such game, not an AI game of this player, or over already
        before, after = changed
        return self._left(after), self._changed(after, self._credits(before, after))

    @staticmethod
    def _left(match: Match) -> dict[str, Any]:
        """The answer's `left`: the game ended by leaving it, and how."""
        assert match.finish is not None
        return {"game": match.id, "status": match.status,
                "reason": match.finish.termination.value}

    def leave_idle(self, idle_before: float) -> list[Push]:
        """End by the leaving rule every live game against the AI nobody touched since
        `idle_before` (a closed tab is a game left): the idle purge's first step. The pushes
        of the games and records that changed."""
        pushes: list[Push] = []
        for game_id in self.store.live_ids():
            match = self.store.get(game_id)
            if (match is None or match.mode != "ai" or match.is_over
                    or match.updated >= idle_before):
                continue
            person = next(iter(match.humans()), None)
            if person is None:
                continue

            def change(current: Match, person: str = person) -> Match | Update:
                if current.is_over or current.updated >= idle_before:  # touched meanwhile
                    return current
                after = leave(current, person, self.clock())
                return Update(after, self._credits(current, after))

            changed = self.store.update(game_id, change)
            if changed and changed[1].rev != changed[0].rev:
                pushes += self._changed(changed[1], self._credits(*changed))
        return pushes

    def _room_for_ai(self, variant: str, level: str, address: str) -> None:
        """Past the AI's capacity a new game at a slow level is refused `busy`, naming the
        levels that still start, so the games already running keep a bounded wait."""
        crowded = getattr(self.thinker, "crowded", None)
        rules = VARIANTS[variant]
        task = Task("move", variant, (), level)
        if rules.instant_ai or crowded is None or not crowded(task, self.origin(address) or ""):
            return
        available = [other for other in rules.levels
                     if not crowded(Task("move", variant, (), other), "", count=False)]
        raise Crowded(f"the AI is at capacity: no new {level} games for now"
                      + (f" (try {' or '.join(available)})" if available else ""), available)

    def _abandon_local(self, live: list[str]) -> list[Push]:
        """End the player's other unfinished pass-and-play games (`live`: their unfinished
        games as read before the new one was made): a new game takes their screen, and
        nobody else can ever finish them (they would count against the caps for 30 days).
        After the new game is made, so a refused new game changes nothing."""
        pushes: list[Push] = []
        for match in self.store.get_many(live) if live else ():  # one read (issue 44)
            if match is None or match.mode != "local" or match.is_over:
                continue
            changed = self.store.update(match.id, lambda m: abandon(m, self.clock()))
            if changed and changed[1].rev != changed[0].rev:
                pushes += self.views.game_pushes(changed[1])
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
            raise MatchError("not_allowed", _cap_words(cap)) from None

    def join(self, sid: str, payload: dict) -> Reply:
        player = self._player(sid)
        resumed = self.clocks.resume_if_stale()  # the views' time_left right after an outage
        seated = False  # this join took a seat: the answer says so (the page tells the side)
        if "game" in payload:
            match = self._load(game_id_of(payload))
            if (match.mode == "friend" and match.role(player) == "spectator"
                    and not match.is_over and None in match.seats.values()
                    and payload.get("watch") is not True):  # `watch`: never a seat (v5)
                # A seat taken is one more live game for the player: a creation to the rate,
                # and to the player's cap (so a rename or a flood of joins stays bounded).
                self._take_creation(player, self.presence.connection(sid).address)
                if self.store.count_live(player) >= self.limits.live_per_player:
                    raise MatchError("not_allowed", N_("you have too many unfinished games"))
                name = self.store.name(player)
                _, match = self._update(match.id,
                                        lambda m: take_seat(m, player, self.clock(), name))
                seated = match.role(player) != "spectator"
        else:
            current = self.store.current(player)
            match = self.store.get(current) if current else None
            if match is None:
                return Reply({"ok": True, "game": None, "you": "spectator",
                              "record": self.store.record(player)})
        if ai_to_move(match):  # thinking now (shared, not asked twice) or a stopped process's
            reply = self.ai.enter_thinking(sid, self.ai.think_later(match), player)
        elif seated:
            reply = self._enter(sid, match, player, seated=True)
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

        # A clock may end nothing before it got an outage back.
        pushes = self.clocks.resume_if_stale()
        before, after = self._update(game_id, change)
        credits = self._credits(before, after)
        if late:
            return self._too_late(player, after, pushes + self._changed(after, credits))
        if not _moved(before, player):  # the person's first move in this game
            self._mark_played(player)
        if ai_to_move(after):
            # A slow AI thinks in a worker: the answer carries the move now (and the reply,
            # if it is already in), and the reply follows as a `game` push.
            return self._answer_move(player, played[-1], before, self.ai.think_later(after))
        return self._answer_move(player, played[-1], before, after)

    def _too_late(self, player: str, after: Match, pushes: list[Push]) -> Reply:
        """The refusal of a move that came after the time ran out: it carries the ended game,
        and the ending reaches the mover's own connections too (its page learns from both)."""
        message = ("the first move did not come in time: the game is called off"
                   if after.status == "aborted" else "your time ran out")
        answer = refusal("game_over", message)
        answer["game"] = self.views.view(after, after.role(player))
        return Reply(answer, [Push(p.event, p.room, p.payload, skip_sender=False)
                              for p in pushes])

    def _answer_move(self, player: str, played: Match, before: Match, after: Match) -> Reply:
        credits = self._credits(before, after)
        role = after.role(player)
        answer: dict[str, Any] = {"ok": True, "game": self.views.view(after, role)}
        if played.rev != after.rev:
            answer["played"] = self.views.view(played, role)
        if credits:
            answer["record"] = self.store.record(player)
        return Reply(answer, self._changed(after, credits))

    def _take_creation(self, player: str, address: str, new: bool = False,
                       record: dict | None = None) -> None:
        """Count one new game (a rematch, a seat taken too): the person's own rate first and
        strictest; then the address's, loose enough for a school or a carrier's NAT; a person
        who has not played yet (a new cookie) also draws on the address's small allowance for
        newcomers, so a flood of fresh cookies is held there and not by the people already
        playing behind that address. Only a `new` game (not a seat in a friend's game, which
        its maker paid for, nor a rematch, which follows a game) asks, outside any store
        transaction (it reads the store; `record`: the person's, if just read). Each refusal
        names the limit that answered."""
        per_minute = self.limits.creations_per_minute
        if per_minute <= 0:
            return
        origin = self.origin(address)
        if not self.limiter.take(f"create:p:{player}", per_minute / 60, per_minute):
            raise MatchError("rate_limited", "too many new games from you: wait a moment")
        if origin is None:
            return
        if new and not self._has_played(player, record):
            newcomers = per_minute * NEWCOMERS_PER_ADDRESS
            if not self.limiter.take(f"create:new:{origin}", newcomers / 60, newcomers):
                raise MatchError("rate_limited", "too many new games from new players at your "
                                 "address: play a move first, or wait a moment")
        shared = per_minute * PEOPLE_PER_ADDRESS
        if not self.limiter.take(f"create:a:{origin}", shared / 60, shared):
            raise MatchError("rate_limited", "too many new games from your address (a shared "
                             "network): wait a moment")

    def _room_for_unjoined(self, player: str, address: str, live: list[str]) -> None:
        """A friend game waits for its friend on a small allowance: the person's few open
        links, then the address's; so strangers cannot fill the site with games nobody plays
        (the global cap is left to games people join). `live`: the player's unfinished games."""
        limits = self.limits
        if limits.creations_per_minute <= 0:
            return
        waiting = 0
        for match in self.store.get_many(live[: limits.live_per_player]):  # one read (issue 44)
            if (match is not None and match.mode == "friend" and not match.is_over
                    and None in match.seats.values()):
                waiting += 1
        if waiting >= limits.unjoined_per_player:
            raise MatchError("not_allowed", N_("you have too many friend games nobody has joined "
                                               "yet: share a link, or wait for them to expire"))
        origin = self.origin(address)
        per_address = limits.unjoined_per_address
        if origin and not self.limiter.take(f"unjoined:a:{origin}", per_address / 1800,
                                            per_address):
            raise MatchError("rate_limited", "too many friend games waiting for a friend from "
                             "your address: wait a moment")

    def _mark_played(self, player: str) -> None:
        """Mark the person as having made a move: known here at once, written to the store
        at the next tick (`mark_played`), off the move's own path (tests/budget.json); this
        process remembers whom it marked, so a person is written once."""
        if player in self._marked:
            return
        if len(self._marked) >= MARKED_KEPT:
            self._marked.clear()
        self._marked.add(player)
        with self._marking:
            self._unmarked.add(player)

    def mark_played(self) -> None:
        """Write the marks of the persons who made their first move since the last tick."""
        with self._marking:
            players, self._unmarked = self._unmarked, set()
        try:
            for player in sorted(players):
                self.store.mark_played(player)
                players.discard(player)
        finally:  # a store away: the rest at the next tick
            with self._marking:
                self._unmarked |= players

    def _has_played(self, player: str, record: dict | None = None) -> bool:
        """Whether the person has made a move: in any game (the store's lasting mark), or a
        game against the AI finished before the mark was kept (its record: `record` if just
        read, else read here)."""
        if player in self._marked:
            return True
        if record is not None and any(any(c.values()) for c in record.values()):
            return True
        if self.store.played(player):
            return True
        if record is None:
            record = self.store.record(player)
        return any(any(counts.values()) for counts in record.values())

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
                           for p in self.views.game_pushes(changed[1])]
        return Reply({"ok": True, "name": name}, pushes)

    def react(self, sid: str, payload: dict) -> Reply:
        reaction = choice(payload, "reaction", REACTIONS)
        match = self._load(game_id_of(payload))
        player = self._player(sid)
        role = match.role(player)
        if role == "spectator":
            raise MatchError("spectator", "only the players can react")
        if match.mode != "friend" or not all(match.seats.values()):
            raise MatchError("not_allowed", N_("reactions are for a friend who has joined"))
        if not self.limiter.take(f"react:{player}", 1 / self.limits.reaction_every, 1):
            raise MatchError("rate_limited", "one reaction a second")
        push = {"game": match.id, "from": role, "reaction": reaction}
        return Reply({"ok": True}, [Push("reaction", room(match.id, seen), push, False)
                                    for seen in self.views.roles(match)])

    EVENTS = ("new_game", "join", "move", "analyze", "hint", "rematch", "decline", "resign",
              "abort", "claim", "set_name", "react", "games")

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
