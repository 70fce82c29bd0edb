"""What the bot web layer's blueprints share: the request's bot book, hub and master, a
refusal as JSON with its HTTP status, the one reader of a JSON body, and one event run through
the table as the socket adapter runs it (PROTOCOL "Bots (version 3)").

Its own module so the API (`api`), the bot pages (`botpages`, `botmaking`) and the ladder
(`ladder`) import it and none imports another's blueprint (tests/test_import_cycles.py).
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from flask import Response, current_app, jsonify, request

from ttt.bots import Bot, BotError, bot_answer, check_name, plays
from ttt.bots.book import Book
from ttt.bots.caps import room_for as room_in_caps
from ttt.game.match import SIDES, MatchError
from ttt.game.variants import VARIANTS, record_key
from ttt.master.replies import Push, refusal
from ttt.master.table import Table
from ttt.runtime.translation import N_
from ttt.store import StoreUnavailable
from ttt.web.bots.hub import Hub, bot_room
from ttt.web.extensions import get_hub, get_publisher
from ttt.web.realtime.events import client_address

log = logging.getLogger("ttt.bots")

STATUS = {"bad_request": 400, "unauthorized": 401, "spectator": 403, "not_found": 404,
          "conflict": 409, "rate_limited": 429, "internal": 500, "unavailable": 503,
          "busy": 503}



STORE_AWAY = "the game store is unavailable; retry"



MAX_BODY = 4096

MAX_DEPTH = 8      # arrays and objects inside each other; nothing a bot sends goes past 3

NOT_JSON = "a body must be JSON, sent with 'Content-Type: application/json'"



def hub() -> Hub:
    return get_hub()



def book() -> Book:
    return current_app.extensions["ttt_bots_book"]



def table() -> Table:
    return current_app.extensions["ttt_table"]



def answer(body: dict[str, Any]) -> Response | tuple[Response, int]:
    """JSON, with the HTTP status a refusal's code maps to."""
    if body.get("ok") is False:
        code = body.get("error", {}).get("code", "internal")
        return jsonify(body), STATUS.get(code, 409)
    return jsonify(bot_answer(body))



def guarded(view, *args: Any, **kwargs: Any):
    """The view's answer, or its refusal as JSON with its HTTP status."""
    try:
        return view(*args, **kwargs)
    except (BotError, MatchError) as error:
        return answer(refusal(error.code, error.message))
    except StoreUnavailable:
        return answer(refusal("unavailable", STORE_AWAY))
    except Exception:  # a bug: one line in the log (never the request's headers)
        log.exception("bot call %s failed", request.path.rsplit("/", 1)[-1])
        return answer(refusal("internal", "something went wrong on the server"))



def payload() -> dict[str, Any]:
    """The request's JSON object: every JSON endpoint reads its body here, and only here.

    Refused as `bad_request` before any parsing can raise: a body over MAX_BODY bytes (4 KiB;
    nothing a bot sends needs more), one not sent as application/json, one nested deeper than
    MAX_DEPTH (the parser recurses: 4,000 `[` raised RecursionError and logged a traceback
    per request), one that is not valid UTF-8 JSON, or not an object. No body reads as {}.
    """
    if (request.content_length or 0) > MAX_BODY:
        raise BotError("bad_request", f"a body has at most {MAX_BODY} bytes")
    raw = request.stream.read(MAX_BODY + 1)  # chunked bodies have no Content-Length
    if len(raw) > MAX_BODY:
        raise BotError("bad_request", f"a body has at most {MAX_BODY} bytes")
    if not raw.strip():
        return {}
    if request.mimetype != "application/json":
        raise BotError("bad_request", f"{NOT_JSON}, not {request.mimetype or 'no type'}")
    if nesting(raw) > MAX_DEPTH:
        raise BotError("bad_request", f"a body nests at most {MAX_DEPTH} arrays or objects")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise BotError("bad_request", "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BotError("bad_request", "the body must be a JSON object")
    return body



def nesting(raw: bytes) -> int:
    """How deep arrays and objects nest in a JSON text (brackets inside strings not counted;
    an unbalanced text is the parser's to refuse)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:    # backslash
                escaped = True
            elif byte == 0x22:    # closing quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest



def connect(bot: Bot) -> str:
    """The bot's pseudo-connection for this request's client address."""
    return hub().connection(bot, client_address(current_app.config["TTT_TRUSTED_PROXIES"]))



def run(sid: str, event: str, body: dict[str, Any], limited: bool = True) -> dict[str, Any]:
    """One event through the table, as the socket adapter runs it (rate limit, AI's `then`)."""
    if limited and not table().presence.take_token(sid, current_app.config["TTT_RATE_LIMIT"]):
        return refusal("rate_limited", "slow down")
    publisher = get_publisher()
    step = functools.partial(table().handle, event, sid, body)
    while True:
        reply = step()
        publisher.send(publisher.prepare(reply.pushes, sid))
        if reply.then is None:
            return reply.answer
        step = reply.then



def seat_from(answer_: dict[str, Any], bot: Bot) -> None:
    """Tell the process holding the bot's stream to listen to the game an answer put the bot
    in (through the message queue when there are several), and show everyone the seat."""
    game = answer_.get("game")
    if answer_.get("ok") and isinstance(game, dict) and game.get("you") in SIDES:
        match = table().store.get(game["id"])
        if match is not None:
            get_publisher().publish([Push("seat", bot_room(bot.player), {"game": match.id}),
                                     *table().game_pushes(match)])



def room_for(bot: Bot, against: str | None = None) -> None:
    """Refuse a new game to a bot at its cap of live games against people (`against` None),
    or against bots, or against that bot (ttt.bots.caps: no bot squats another)."""
    room_in_caps(table().store, bot.player, bot.name, current_app.config["TTT_BOT_MAX_GAMES"],
                 against)



def check_plays(bot: Bot, variant: Any) -> None:
    """Refuse a game of a variant the bot does not say it plays, naming what it plays."""
    if isinstance(variant, str) and variant in VARIANTS and variant not in bot.variants:
        # Translators: {name} a bot's name; {plays} "classic only", "classic and ultimate"; {variant
        raise BotError("not_allowed", N_("{name} plays {plays}, not {variant}"),
                       name=bot.name, plays=plays(bot.variants), variant=variant)



def opponent_bot(text: str, variant: str | None = None, by: str | None = None) -> Bot:
    """The online bot named by 'bot:<name>' (that plays `variant`, when given), with room for
    a game against `by` (a bot's player id; None: a person)."""
    other = book().by_name(check_name(text.removeprefix("bot:")))
    if other is None or other.revoked:
        raise BotError("not_found", N_("no such bot"))
    check_plays(other, variant)
    if not hub().online(other.player):
        # Translators: {name} a bot's name
        raise BotError("not_allowed", N_("{name} is not online"), name=other.name)
    room_for(other, by)
    return other



def card(bot: Bot) -> dict[str, Any]:
    """A bot as the ladder shows it."""
    record = table().store.record(bot.player)
    vs_ai: dict[str, dict[str, dict[str, int]]] = {}
    for name, rules in VARIANTS.items():
        vs_ai[name] = {level: record.get(record_key(name, level),
                                         {"wins": 0, "draws": 0, "losses": 0})
                       for level in rules.levels}
    return {**bot.public(), "vs_ai": vs_ai, "online": hub().online(bot.player)}
