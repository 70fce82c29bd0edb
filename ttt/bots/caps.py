"""A bot's live games, counted so that no bot can squat another.

A bot sits in at most `cap` live games against people (and the AI, and links), and apart
from those in at most half as many (and at least `PAIR`) against other bots; two bots share
at most `PAIR` live games. An attacker's bot that challenges a popular bot again and again
(and moves just inside the deadline) fills the pair's two games and no more: people still
find the bot free.
"""

from __future__ import annotations

from typing import Any

from ttt.bots import BotError, is_bot_player
from ttt.runtime.translation import N_

PAIR = 2  # live games between the same two bots
ANY = "*"  # the operator's ladder round: every live game counts against the cap, as before


def room_for(store: Any, player: str, name: str, cap: int, against: str | None) -> None:
    """BotError('not_allowed') when the bot `player` (shown as `name`) has no room for one
    more live game against `against` (a bot's player id, or None: a person, the AI, a link;
    ANY: the operator's round, which fills a bot to its cap in waves), naming the limit that
    answered."""
    people, bots, pair = 0, 0, 0
    for game_id in store.live_games(player):
        match = store.get(game_id)
        if match is None or match.is_over:
            continue
        others = [seat for seat in match.seats.values() if seat not in (None, player)]
        if any(is_bot_player(other) for other in others):
            bots += 1
            pair += against is not None and against in others
        else:
            people += 1
    if against == ANY:
        if people + bots >= cap:
            # Translators: {name} a bot's name
            raise BotError("not_allowed", N_("{name} sits in too many unfinished games"), name=name)
        return
    if against is None or not is_bot_player(against):
        if people >= cap:
            # Translators: {name} a bot's name
            raise BotError("not_allowed", N_("{name} sits in too many unfinished games"), name=name)
        return
    if pair >= PAIR:
        # Translators: {name} a bot's name; {count} a number
        raise BotError("not_allowed", N_("{name} already has {count} unfinished games against "
                                         "that bot"), name=name, count=PAIR)
    if bots >= max(PAIR, cap // 2):
        # Translators: {name} a bot's name
        raise BotError("not_allowed", N_("{name} sits in too many unfinished games against bots"),
                       name=name)


def opponent_in(store: Any, game_id: str, player: str) -> str | None:
    """The other seat's player in a game (None when open, or no such game)."""
    match = store.get(game_id)
    if match is None:
        return None
    return next((seat for seat in match.seats.values() if seat not in (None, player)), None)
