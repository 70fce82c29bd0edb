"""The house rules for bots, laid over a game store: move deadlines and the bots' ladder.

`Referee(store, book)` is the store the table writes through. Every change that puts a bot
on move gives it a deadline (`move_seconds`, or the game's own clock when that is
shorter), written in the same transaction as the change, so the match clock the table
already runs (`Table.tick`, the store's `due`) ends a bot's game on time like a person's.
Every change that ends a game between two bots rates it once, in its variant; a game a bot
started casual (`"rated": false`) counts in no record and no rating. Nothing else changes.
"""

from __future__ import annotations

from typing import Any

from ttt.bots import is_bot_player
from ttt.bots.book import Book
from ttt.match import AI, SIDES, Match, other, results
from ttt.store import Caps, Change, Update, as_update

MOVE_SECONDS = 10.0


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


def with_deadline(before: Match | None, after: Match, seconds: float) -> Match:
    """`after` with the bot on move given its deadline, when this change put it on move
    (or filled the last open seat).

    A change that keeps the same bot on move (a name, a presence change) keeps its deadline;
    a game clock that runs out sooner stays as it is.
    """
    if not bot_on_move(after) or not all(after.seats.values()):
        return after  # nobody to wait for, or an open seat: a link's bot waits for its person
    turned = (before is None or len(before.moves) != len(after.moves)
              or before.seats != after.seats or not bot_on_move(before))
    if not turned and after.deadline is not None:
        return after
    due = after.updated + seconds
    if after.deadline is not None and after.deadline <= due:
        return after
    return after.but(deadline=due)


class Referee:
    """A game store with bot deadlines and bot-versus-bot ratings; the rest passes through."""

    def __init__(self, store: Any, book: Book, move_seconds: float = MOVE_SECONDS) -> None:
        self._store = store
        self.book = book
        self.move_seconds = move_seconds

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if callable(attribute) and not hasattr(type(self), name):
            # Kept on the instance: the next call finds it at once, not through a missed
            # lookup and this method (issue 28: every store call of an event came here).
            self.__dict__[name] = attribute
        return attribute

    def create(self, match: Match, caps: Caps | None = None) -> None:
        self._store.create(with_deadline(None, match, self.move_seconds), caps)

    def update(self, game_id: str, change: Change) -> tuple[Match, Match] | None:
        def timed(match: Match) -> Match | Update:
            update = as_update(change(match))
            if update.match.rev == match.rev:
                return update
            if not update.credits:  # a time-out against the AI counts in the record too
                update = update._replace(credits=tuple(results(match, update.match)))
            if update.credits and self._casual(update.match):  # practice: no record
                update = update._replace(credits=())
            made = update.create and with_deadline(None, update.create, self.move_seconds)
            return update._replace(match=with_deadline(match, update.match, self.move_seconds),
                                   create=made or None)

        done = self._store.update(game_id, timed)
        if done is not None:
            before, after = done
            if after.is_over and not before.is_over:
                self._remember(after)
            if (after.is_over and not before.is_over and after.status != "aborted"
                    and after.mode == "friend" and after.start == 0
                    and all(is_bot_player(after.seats[m]) for m in ("X", "O"))):
                self.book.rate(after.id, after.seats["X"], after.seats["O"], after.winner,
                               after.variant)
        return done

    def _remember(self, match: Match) -> None:
        """Each bot seat's line in its history (PROTOCOL v5): whom it played, how it ended."""
        rated = not self._casual(match) and match.start == 0
        for side in SIDES:
            player = match.seats.get(side)
            if is_bot_player(player):
                self.book.remember(player, history_entry(match, side, rated, self.book))

    def _casual(self, match: Match) -> bool:
        """Whether a game a bot sits in was started casual (`"rated": false`)."""
        return (any(is_bot_player(p) for p in match.seats.values())
                and self.book.casual(match.id))
