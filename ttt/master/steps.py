"""The master's shared steps: showing a player a game, the seats' comings and goings, the
pushes of a change, and leaving a game against the AI (PROTOCOL v4).

Functions of a match and the services (ttt.master.services); the Table and its parts call them, and
none calls back into the Table.
"""

from __future__ import annotations

import functools
from typing import Any

from ttt.game.endings import leave
from ttt.game.match import SIDES, Match, rename, results, sighted, take_seat
from ttt.master.replies import Push, Reply, player_room, room
from ttt.master.services import Services
from ttt.master.views import Views
from ttt.store import Update

Credits = tuple[tuple[str, str, str], ...]


def credits_of(before: Match, after: Match) -> Credits:
    """The record rows a change credits (computed once per change)."""
    return tuple(results(before, after))


def changed(views: Views, after: Match, credits: Credits = ()) -> list[Push]:
    """The pushes for a change: the views, and the records it credited."""
    pushes = views.game_pushes(after)
    for who in sorted({c[0] for c in credits}):
        pushes.append(Push("record", player_room(who),
                           functools.partial(views.services.store.record, who)))
    return pushes


def settled(svc: Services, game_id: str, mode: str) -> bool:
    """Whether the store's cached copy (maybe stale, never read from the database) shows
    the game over, or of another mode than `mode`. Both facts are final (a finished game
    stays finished, its mode never changes), so a change that acts only on a live game
    of `mode` would leave it as it is: skipping it saves a read, and with SQLite a write
    transaction under the write lock. Without a cached copy, the change is tried."""
    match = svc.cached(game_id)
    return match is not None and (match.is_over or match.mode != mode)


def sight(svc: Services, match: Match | None) -> Match | None:
    """The match with its seats' comings and goings stored (a write only on a change)."""
    presence = svc.presence
    if match is None or sighted(match, presence.online(match.id), 0.0) is match:
        return match
    changed_ = svc.write(match.id, lambda m: sighted(m, presence.online(m.id), svc.clock()))
    return changed_[1] if changed_ else None


def show(views: Views, sid: str, match: Match, player: str, planned: Any = None
         ) -> tuple[Match, list[Push]]:
    """Make the connection show `match`: the match as it now is (its presence stored),
    and the pushes for the games whose presence changed; `planned`: the lease change the
    write that made it carried (Presence.plan)."""
    svc = views.services
    presence = svc.presence
    pushes: list[Push] = []
    for game_id, seats in presence.attach(sid, match, planned).items():
        if not seats:  # a spectator came or went: a small push, at most one a second
            pushes += views.watchers_changed(game_id)
        elif game_id == match.id:
            match = sight(svc, match)  # type: ignore[assignment] (a match in, a match out)
            pushes += views.game_pushes(match)
        elif any(presence.online(game_id).values()) or presence.watchers(game_id):
            seen = sight(svc, svc.store.get(game_id))
            if seen:  # else nobody else is looking at the game this connection left
                pushes += views.game_pushes(seen)
        elif not settled(svc, game_id, "friend"):  # `sighted` acts on a live friend game
            sight(svc, svc.store.get(game_id))
    svc.store.set_current(player, match.id)
    return match, pushes


def take_a_seat(svc: Services, sid: str, game_id: str, player: str, name: str | None
                ) -> tuple[Match, Any]:
    """`player` takes the open seat of a friend game, their current game set and their
    connection's leases changed in the same write (Redis); the match, and the
    lease change for `enter` (Presence.plan)."""
    planned: list[Any] = [None]

    def seat(match: Match) -> Update:
        after = take_seat(match, player, svc.clock(), name)
        planned[0] = svc.presence.plan(sid, after)  # per try: the seat is the last try's
        return Update(after, current=player, around=planned[0])

    return svc.update(game_id, seat)[1], planned[0]


def named(svc: Services, match: Match, player: str) -> Match:
    """The match showing the player's name as it is now (a rename rewrites only a few
    games: the others catch up here, when the player opens them)."""
    if match.mode != "friend" or match.is_over or match.role(player) not in SIDES:
        return match
    name = svc.store.name(player)
    if name is None or match.names.get(match.role(player)) == name:
        return match
    renamed = svc.write(match.id, lambda m: rename(m, player, name, svc.clock()))
    return renamed[1] if renamed else match


def enter(views: Views, sid: str, match: Match, player: str, record: dict | None = None,
          named_now: bool = False, planned: Any = None, **extra: Any) -> Reply:
    """Show the player `match`; `record`: theirs if just read (else read here); `named_now`:
    the match was just written with the player's name as it is now (no rename to catch up)."""
    if not named_now:
        match = named(views.services, match, player)
    match, pushes = show(views, sid, match, player, planned)
    return Reply(views.seated(match, player, record, **extra), pushes,
                 show=room(match.id, match.role(player)))


def left(match: Match) -> dict[str, Any]:
    """The answer's `left`: the game ended by leaving it, and how."""
    assert match.finish is not None
    return {"game": match.id, "status": match.status, "reason": match.finish.termination.value}


def leave_ai(views: Views, player: str, game_id: str | None
             ) -> tuple[dict | None, list[Push]]:
    """End `game_id` when it is a live game of the player against the AI: called off while
    abortable, else resigned (a loss in the record). The answer's `left` (None when
    nothing was left) and the pushes of the game and the record."""
    svc = views.services
    if game_id is None or settled(svc, game_id, "ai"):  # `leave` acts on a live AI game
        return None, []
    credited: list[Credits] = []

    def change(match: Match) -> Update:
        after = leave(match, player, svc.clock())
        credited[:] = [credits_of(match, after)]  # a store may call a change again
        return Update(after, credited[0])

    ended = svc.write(game_id, change)
    if ended is None or ended[1].rev == ended[0].rev:
        return None, []  # no such game, not an AI game of this player, or over already
    return left(ended[1]), changed(views, ended[1], credited[0])
