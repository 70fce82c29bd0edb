"""How a match ends off the board: a claim, a resignation, an abort, a game left; and the
rematch offers that follow an ending.

Like `ttt.game.match`, each change checks everything and returns a new match or raises one
precise `MatchError`. Pure: no Flask, no database, no clock (callers pass the time in).
"""

from __future__ import annotations

import random

from ttt.game.match import (
    AI,
    SIDES,
    Match,
    MatchError,
    ai_reply,
    checked,
    ending,
    new_id,
    no_score,
    other,
    restart_clock,
)
from ttt.rules.classic import Termination
from ttt.runtime.translation import N_


def abortable(match: Match) -> bool:
    """Whether the game has no result that matters yet: against a friend, X and O have not both
    moved; against the AI, the person has made at most one move (leaving then is a new game,
    not a loss)."""
    if match.mode == "ai":
        person = next(mark for mark in SIDES if match.seats[mark] != AI)
        # The person's moves since `start`, counted by ply: X makes the even plies and O the
        # odd ones, in both variants, and a cell once played keeps its mark, so this is the
        # count of played cells that show the person's mark (walking the board instead
        # would cost a pass per view; tests/test_leaving.py checks the two agree).
        side = SIDES.index(person)
        return len(range(match.start + (side - match.start) % 2, len(match.moves), 2)) < 2
    return match.opening


def claim(match: Match, player_id: str, claimable_in: float | None, now: float) -> Match:
    """The friend game won by a seated player whose opponent has been away long enough."""
    role = checked(match, player_id)
    if match.mode != "friend":
        raise MatchError("not_allowed", N_("only a game against a friend can be claimed"))
    if match.opening:  # PROTOCOL v5: a game nobody has both moved in is called off, not won
        raise MatchError("not_allowed", N_("no win before both sides have moved: abort instead"))
    if claimable_in is None or claimable_in > 0:
        raise MatchError("not_allowed", N_("your friend has not been away long enough"))
    return match.changed(now, finish=ending(Termination.CLAIM, role), deadline=None)  # type: ignore[arg-type]


def resign(match: Match, player_id: str, now: float) -> Match:
    """The game lost at once by the seated player who gives it up."""
    role = checked(match, player_id)
    if match.mode not in ("friend", "ai") or role not in SIDES:
        raise MatchError("not_allowed",
                         N_("only a game against a friend or the AI can be resigned"))
    return match.changed(now, finish=ending(Termination.RESIGN, other(role)), deadline=None)


def abort(match: Match, player_id: str, now: float) -> Match:
    """The game called off before it has a result that matters (see `abortable`), or a
    pass-and-play game at any time (its one player is both sides); it counts nowhere."""
    role = checked(match, player_id)
    if match.mode == "local":
        return match.changed(now, finish=ending(Termination.ABORT), deadline=None)
    if match.mode not in ("friend", "ai") or role not in SIDES:
        raise MatchError("not_allowed", N_("only a game against a friend or the AI can be aborted"))
    if not abortable(match):
        raise MatchError("not_allowed", N_("both sides have moved: resign instead"))
    return match.changed(now, finish=ending(Termination.ABORT), aborted_by=role, deadline=None)


def leave(match: Match, player_id: str, now: float) -> Match:
    """The game against the AI its person leaves for another (PROTOCOL v4): called off while
    `abortable`, else resigned (a loss, in the record). Unchanged when it is not a live AI
    game in which this player sits: a friend game is never ended this way."""
    if match.mode != "ai" or match.is_over or match.role(player_id) not in SIDES:
        return match
    return abort(match, player_id, now) if abortable(match) else resign(match, player_id, now)


def abandon(match: Match, now: float) -> Match:
    """The pass-and-play game left for another one: called off (unchanged unless one on)."""
    if match.mode != "local" or match.is_over:
        return match
    return match.changed(now, finish=ending(Termination.ABANDONED), deadline=None)


def _over_and_seated(match: Match, player_id: str) -> str:
    role = match.role(player_id)
    if role == "spectator":
        raise MatchError("spectator", "only the players can start a rematch")
    # Version 1 clients start a rematch of an AI or pass-and-play game at any time.
    if not match.is_over and match.mode == "friend":
        raise MatchError("not_allowed", N_("finish this game before a rematch"))
    return role


def offer_rematch(match: Match, player_id: str, now: float) -> Match:
    """The finished friend game with this player's rematch offer on it."""
    role = _over_and_seated(match, player_id)
    if match.offer == role:
        return match
    return match.changed(now, offer=role)


def decline(match: Match, player_id: str, now: float) -> Match:
    """The rematch offer withdrawn by its maker or declined by the opponent."""
    role = match.role(player_id)
    if role == "spectator":
        raise MatchError("spectator", "only the players can answer an offer")
    if match.offer is None or match.rematch_id:
        raise MatchError("not_allowed", N_("there is no rematch offer to decline"))
    return match.changed(now, offer=None)


def rematch(match: Match, player_id: str, now: float, rng: random.Random,
            game_id: str | None = None, think: bool = True,
            names: dict[str, str | None] | None = None,
            origin: str | None = None) -> tuple[Match, Match]:
    """(the old match marked as continued, the new game with sides swapped).

    In a friend game only the player who did not make the offer can start it. `names`: the
    people's names now, by seat of the new game (else the old game's, swapped); `origin`:
    the starter's address digest, counted against its cap like any game it creates.
    """
    role = _over_and_seated(match, player_id)
    if match.mode == "friend" and match.offer != other(role):
        raise MatchError("not_allowed", N_("a rematch needs your friend's offer first"))
    total = match.score() or no_score()
    if match.mode == "friend":  # the people swap sides, and their wins go with them
        series = {"X": total["O"], "O": total["X"], "draws": total["draws"]}
    else:
        series = total
    seats = {"X": match.seats["O"], "O": match.seats["X"]}
    if names is None:
        names = {"X": match.names.get("O"), "O": match.names.get("X")}
    fresh = Match(id=game_id or new_id(), mode=match.mode, level=match.level, seats=seats,
                  series=series, names=names, seated={m: now for m in SIDES},
                  clock=match.clock, variant=match.variant, created=now, updated=now,
                  origin=origin if origin is not None else match.origin)
    if think:
        fresh = ai_reply(fresh, rng, now, stamp=False)
    fresh = restart_clock(fresh, now)
    # A pass-and-play game replayed mid-game is left: nobody else could ever finish it.
    finish = (ending(Termination.ABANDONED) if match.mode == "local" and not match.is_over
              else match.finish)
    return match.changed(now, rematch_id=fresh.id, offer=None, finish=finish), fresh
