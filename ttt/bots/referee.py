"""The house rules for bots: move deadlines and the bots' ladder, applied by the master.

`BotRules(book)` is one of the master's services (ttt.master.services: `Services.write` runs every
change through `rewrite` inside the store's transaction, and `ended` after it); the store
stays a store. Every change that puts a bot on move gives it a deadline (`move_seconds`, or
the game's own clock when that is shorter), written in the same transaction as the change,
so the match clock the table already runs (`Table.tick`, the store's `due`) ends a bot's
game on time like a person's.
Every change that ends a game between two bots rates it once, in its variant; a game a bot
started casual (`"rated": false`) counts in no record and no rating. Nothing else changes.

A person playing a bot has a move deadline too (`person_seconds`): ten games taken
against a bot and never moved in would otherwise hold its seats for good. A person whose
first move does not come in time leaves the game called off (no result); later, the move's
time runs out as a loss. A game between two bots is rated only when both have moved and the
two were made by different people (one person's two bots cannot farm a rating).
"""

from __future__ import annotations

from typing import Any

from ttt.bots import is_bot_player
from ttt.bots.book import Book
from ttt.game.match import AI, SIDES, Match, ending, other, results
from ttt.rules.classic import Termination
from ttt.store import Update

MOVE_SECONDS = 10.0
PERSON_SECONDS = 300.0  # a person's time for a move against a bot (no clock of their own)


def bot_on_move(match: Match) -> bool:
    """Whether the side on move is a bot."""
    turn = match.turn
    return turn is not None and is_bot_player(match.seats.get(turn))


def history_entry(match: Match, side: str, rated: bool, book: Any) -> dict[str, Any]:
    """A finished game as the bot at `side` lists it (PROTOCOL v5's bot history)."""
    foe = other(side)
    seat = match.seats.get(foe)
    if seat == AI:
        opponent = {"kind": "ai", "name": f"ai:{match.level}", "level": match.level}
    elif is_bot_player(seat):
        bot = book.by_player(seat)
        opponent = {"kind": "bot", "name": bot.name if bot else None}
    else:
        opponent = {"kind": "person" if seat else "nobody", "name": match.names.get(foe)}
    result = ("aborted" if match.status == "aborted" else "draw" if match.status == "draw"
              else "won" if match.winner == side else "lost")
    reason = (match.finish.termination.value if match.status == "aborted" and match.finish
              else match.reason)
    return {"id": match.id, "you": side, "opponent": opponent, "variant": match.variant,
            "rated": rated, "result": result, "reason": reason, "moves": len(match.moves),
            "ended": round(match.updated, 3), "link": f"/g/{match.id}",
            "replay": match.rules.replay_path(match.moves)}


def against_bot(match: Match) -> bool:
    """Whether a bot sits in the game."""
    return any(is_bot_player(p) for p in match.seats.values())


def person_on_move(match: Match) -> bool:
    """Whether a person is on move against a bot, in a game between them (who waits)."""
    turn = match.turn
    return (match.mode == "friend" and turn is not None and not bot_on_move(match)
            and match.seats.get(turn) not in (None, AI) and against_bot(match))


def with_deadline(before: Match | None, after: Match, seconds: float,
                  person_seconds: float | None = None) -> Match:
    """`after` with the bot on move given its deadline (`seconds`), or the person on move
    against a bot given theirs (`person_seconds`, when given), when this change put that side
    on move (or filled the last open seat).

    A change that keeps the same side on move (a name, a presence change) keeps its deadline;
    a game clock that runs out sooner stays as it is.
    """
    if not all(after.seats.values()) or after.is_over:
        return after  # an open seat: a link's bot waits for its person
    if bot_on_move(after):
        wait = seconds
    elif person_seconds is not None and person_on_move(after):
        wait = person_seconds
    else:
        return after
    turned = (before is None or len(before.moves) != len(after.moves)
              or before.seats != after.seats or before.turn != after.turn)
    if not turned and after.deadline is not None:
        return after
    due = after.updated + wait
    if after.deadline is not None and after.deadline <= due:
        return after
    return after.but(deadline=due)


def unplayed_time_out(before: Match, after: Match) -> bool:
    """Whether this change ended a game against a bot on the time of a person who had not
    made a first move in it (no clock of the game's own): called off, not lost."""
    turn = before.turn
    return (after.is_over and not before.is_over and after.finish is not None
            and after.finish.termination == Termination.TIME and before.clock is None
            and turn is not None and person_on_move(before)
            and not any((i % 2 == 0) == (turn == "X")
                        for i in range(before.start, len(before.moves))))


class BotRules:
    """Bot deadlines, casual games and bot-versus-bot ratings: the rules the master applies
    to every write (ttt.master.services.Services.write); nothing else changes."""

    def __init__(self, book: Book, move_seconds: float = MOVE_SECONDS,
                 person_seconds: float = PERSON_SECONDS) -> None:
        self.book = book
        self.move_seconds = move_seconds
        self.person_seconds = person_seconds

    def created(self, match: Match) -> Match:
        """A new game with its first deadline, if a bot or a person against one is on move."""
        return with_deadline(None, match, self.move_seconds, self.person_seconds)

    def rewrite(self, match: Match, update: Update) -> Update:
        """A change of `match` as the house lands it: a person's unplayed time-out called off,
        the result credited (a time-out against the AI too) unless the game is casual, the
        deadline of whoever is now on move. Inside the store's transaction: no I/O but the
        book's casual mark, read only when a game that credits has a bot in it."""
        if update.match.rev == match.rev:
            return update
        if unplayed_time_out(match, update.match):  # no result: called off
            update = update._replace(match=match.changed(
                update.match.updated, finish=ending(Termination.NO_START), deadline=None),
                credits=())
        if not update.credits:  # a time-out against the AI counts in the record too
            update = update._replace(credits=tuple(results(match, update.match)))
        if update.credits and self._casual(update.match):  # practice: no record
            update = update._replace(credits=())
        made = update.create and self.created(update.create)
        return update._replace(match=with_deadline(match, update.match, self.move_seconds,
                                                   self.person_seconds), create=made or None)

    def ended(self, before: Match, after: Match) -> None:
        """After a write that ended a game: each bot's history line, and a game between two
        bots (of different makers, both having moved) rated once."""
        if not after.is_over or before.is_over:
            return
        self._remember(after)
        if (after.status != "aborted" and after.mode == "friend" and after.start == 0
                and not after.opening
                and all(is_bot_player(after.seats[m]) for m in ("X", "O"))
                and not self._same_maker(after.seats["X"], after.seats["O"])):
            self.book.rate(after.id, after.seats["X"], after.seats["O"], after.winner,
                           after.variant)

    def _remember(self, match: Match) -> None:
        """Each bot seat's line in its history (PROTOCOL v5): whom it played, how it ended."""
        rated = not self._casual(match) and match.start == 0
        for side in SIDES:
            player = match.seats.get(side)
            if is_bot_player(player):
                self.book.remember(player, history_entry(match, side, rated, self.book))

    def _same_maker(self, x: str | None, o: str | None) -> bool:
        """Whether one person made both bots (on the site: the same `maker`), so their games
        rate nothing. Bots made on the command line (no maker) are the operator's own."""
        one, two = self.book.by_player(x or ""), self.book.by_player(o or "")
        return (one is None or two is None
                or bool(one.maker) and one.maker == two.maker)

    def _casual(self, match: Match) -> bool:
        """Whether a game a bot sits in was started casual (`"rated": false`)."""
        return (any(is_bot_player(p) for p in match.seats.values())
                and self.book.casual(match.id))
