"""The operator's ladder: games between two online bots, started from outside.

`POST /api/ladder/game` `{"x", "o", "variant"}` seats two online bots in a new game through
the same Table methods a bot's own challenge takes: X's bot makes the friend game (its caps,
its creation rate, its deadlines), O's bot takes the other seat with the `join` an accepted
challenge makes, and both streams get the game (`seat_from`), which their runners play like
any game they sit in. `GET /api/ladder` names the bots online and the live games a bot may
sit in at once; `GET /api/ladder/game/<id>` shows a game as a spectator sees it, so
`python -m ttt bot ladder --games N` can wait for its end. All three answer only
`Authorization: Bearer <TTT_OPERATOR_TOKEN>`: 404 while the setting is unset, 401 for any
other token (compared in constant time). Nothing here logs a header or a body.
"""

from __future__ import annotations

import functools
from typing import Any

from flask import Blueprint, current_app, jsonify, request

from ttt.bots import Bot, BotError, check_name, hash_token, same_hash
from ttt.bots.caps import ANY
from ttt.master.payloads import valid_id
from ttt.master.replies import refusal
from ttt.web.bots.kit import (
    answer,
    book,
    connect,
    guarded,
    hub,
    opponent_bot,
    payload,
    run,
    seat_from,
    table,
)

bp = Blueprint("ladder", __name__)


def operator(view):
    """Run the view for the operator's bearer token only (no such endpoint without one)."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any):
        expected = current_app.config.get("TTT_OPERATOR_TOKEN")
        if not expected:
            return answer(refusal("not_found", "no such endpoint"))
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        # Both hashed first: the comparison takes as long whatever the lengths.
        if scheme != "Bearer" or not same_hash(hash_token(token.strip()), hash_token(expected)):
            return answer(refusal("unauthorized", "the operator's token is needed"))
        return guarded(view, *args, **kwargs)

    return wrapper


def online_bot(name: Any, variant: Any = None) -> Bot:
    """The online bot of that name, playing that variant, with room for one more game
    (refusals as a challenge's)."""
    if not isinstance(name, str):
        raise BotError("bad_request", "x and o are bot names")
    return opponent_bot(f"bot:{check_name(name)}", variant, ANY)  # the round fills a bot to its cap


@bp.get("/api/ladder")
@operator
def online():
    """The bots online now, by name, what each plays, and a bot's cap of live games (a
    round's waves)."""
    bots = [b for b in book().all() if not b.revoked and hub().online(b.player)]
    return jsonify({"ok": True, "online": [b.name for b in bots],
                    "plays": {b.name: b.variants for b in bots},
                    "max_games": current_app.config["TTT_BOT_MAX_GAMES"]})


@bp.post("/api/ladder/game")
@operator
def start():
    """A game between two online bots, X's bot making it and O's bot taking the other seat."""
    body = payload()
    variant = body.get("variant", "classic")
    x, o = online_bot(body.get("x"), variant), online_bot(body.get("o"), variant)
    if x.player == o.player:
        raise BotError("bad_request", "a bot cannot play itself")
    made = run(connect(x), "new_game", {"mode": "friend", "you": "X", "from": None,
                                        "variant": body.get("variant", "classic")},
               limited=False)
    if not made.get("ok"):
        return answer(made)
    game_id = made["game"]["id"]
    seat_from(made, x)
    joined = run(connect(o), "join", {"game": game_id}, limited=False)
    if not joined.get("ok") or joined.get("you") != "O":
        run(connect(x), "abort", {"game": game_id}, limited=False)
        return answer(joined if not joined.get("ok")
                      else refusal("not_allowed", f"{o.name} could not take its seat"))
    seat_from(joined, o)
    return spectated(game_id)


@bp.get("/api/ladder/game/<game_id>")
@operator
def watch(game_id: str):
    """A game as a spectator sees it (its status, winner, names)."""
    if not valid_id(game_id):
        raise BotError("not_found", "no such game")
    return spectated(game_id)


def spectated(game_id: str):
    match = table().store.get(game_id)
    if match is None:
        raise BotError("not_found", "no such game")
    return answer({"ok": True, "game": table().view(match, "spectator")})
