"""The bot API (PROTOCOL "Bots (version 3)"): HTTP in, the same Table methods as the sockets.

Each call authenticates a bearer token, then runs the event on the bot's pseudo-connection
through `Table.handle`, emits the pushes as the socket adapter does, and answers JSON. The
token is read from the Authorization header only; nothing here logs a header or a body.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from flask_socketio import SocketIO

from ttt.bots import Bot, BotError, bot_answer, check_name, check_variants, hash_token, plays
from ttt.bots.book import Book, open_book
from ttt.bots.referee import MOVE_SECONDS, Referee
from ttt.match import SIDES, MatchError
from ttt.store import StoreUnavailable
from ttt.table import Push, Table, refusal
from ttt.variants import VARIANTS
from ttt.web.events import client_address, emit_all
from ttt.web.hub import Hub, bot_room, peer_gone

bp = Blueprint("bots_api", __name__)
log = logging.getLogger("ttt.bots")

STATUS = {"bad_request": 400, "unauthorized": 401, "spectator": 403, "not_found": 404,
          "conflict": 409, "rate_limited": 429, "internal": 500, "unavailable": 503,
          "busy": 503}
ACTIONS = ("move", "resign", "abort", "claim", "rematch", "decline", "react")
MAX_GAMES = 10   # live games a bot may sit in at once
STORE_AWAY = "the game store is unavailable; retry"


def referee(app: Flask, store: Any) -> Referee:
    """The game store with bot deadlines and ratings; its book kept in the app."""
    book = open_book(store)
    app.extensions["ttt_bots_book"] = book
    seconds = float(app.config.get("TTT_BOT_MOVE_SECONDS", MOVE_SECONDS))
    return Referee(store, book, seconds)


def install(app: Flask, socketio: SocketIO, table: Table) -> Hub:
    """Register the API and the bot pages; hand every push to the bots' hub."""
    from ttt.web import botmaking, botpages, ladder

    hub = Hub(socketio, table, app.extensions["ttt_bots_book"])
    socketio.ttt_bots = hub  # emit_all hands pushes to it
    app.extensions["ttt_bots"] = hub
    app.config.setdefault("TTT_BOT_MAX_GAMES", MAX_GAMES)
    app.register_blueprint(bp)
    app.register_blueprint(botpages.bp)
    app.register_blueprint(botmaking.bp)
    app.register_blueprint(ladder.bp)
    return hub


def hub() -> Hub:
    return current_app.extensions["ttt_bots"]


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


def authenticated(view):
    """Run the view with the bot whose bearer token came; 401 without one."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any):
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        try:
            bot = (book().by_token(hash_token(token.strip()))
                   if scheme == "Bearer" and token else None)
        except StoreUnavailable:  # before `guarded`: its answer, not an HTML 500
            return answer(refusal("unavailable", STORE_AWAY))
        if bot is None or bot.revoked:
            return answer(refusal("unauthorized", "no valid bot token: send "
                                                  "'Authorization: Bearer <token>'"))
        return guarded(view, bot, *args, **kwargs)

    return wrapper


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


MAX_BODY = 4096
MAX_DEPTH = 8      # arrays and objects inside each other; nothing a bot sends goes past 3
NOT_JSON = "a body must be JSON, sent with 'Content-Type: application/json'"


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
    config = current_app.config
    return hub().connection(bot, client_address(config["TTT_TRUSTED_PROXIES"]),
                            config["TTT_RATE_LIMIT"])


def run(sid: str, event: str, body: dict[str, Any], limited: bool = True) -> dict[str, Any]:
    """One event through the table, as the socket adapter runs it (rate limit, AI's `then`)."""
    if limited and not table().presence.take_token(sid, current_app.config["TTT_RATE_LIMIT"]):
        return refusal("rate_limited", "slow down")
    socketio = current_app.extensions["ttt_socketio"]
    step = functools.partial(table().handle, event, sid, body)
    while True:
        reply = step()
        emit_all(socketio, reply.pushes, sid)
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
            emit_all(current_app.extensions["ttt_socketio"],
                     [Push("seat", bot_room(bot.player), {"game": match.id}),
                      *table().game_pushes(match)])


def room_for(bot: Bot) -> None:
    """Refuse a new game to a bot already at its cap of live games."""
    if table().store.count_live(bot.player) >= current_app.config["TTT_BOT_MAX_GAMES"]:
        raise BotError("not_allowed", f"{bot.name} sits in too many unfinished games")


def check_plays(bot: Bot, variant: Any) -> None:
    """Refuse a game of a variant the bot does not say it plays, naming what it plays."""
    if isinstance(variant, str) and variant in VARIANTS and variant not in bot.variants:
        raise BotError("not_allowed", f"{bot.name} plays {plays(bot.variants)}, "
                                      f"not {variant}")


def check_rated(body: dict[str, Any]) -> bool:
    rated = body.get("rated", True)
    if not isinstance(rated, bool):
        raise BotError("bad_request", "rated must be true or false")
    return rated


def opponent_bot(text: str, variant: str | None = None) -> Bot:
    """The online bot named by 'bot:<name>' (that plays `variant`, when given)."""
    other = book().by_name(check_name(text.removeprefix("bot:")))
    if other is None or other.revoked:
        raise BotError("not_found", "no such bot")
    check_plays(other, variant)
    if not hub().online(other.player):
        raise BotError("not_allowed", f"{other.name} is not online")
    room_for(other)
    return other


@bp.get("/api/bot/stream")
@authenticated
def stream(bot: Bot):
    connect(bot)
    sock = request.environ.get("werkzeug.socket") or request.environ.get("gunicorn.socket")
    lines = hub().lines(hub().open(bot), lambda: peer_gone(sock))
    return Response(lines, mimetype="application/x-ndjson",
                    headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


@bp.post("/api/bot/challenge")
@authenticated
def challenge(bot: Bot):
    body = payload()
    opponent = body.get("opponent")
    variant = body.get("variant", "classic")
    clock = body.get("clock")
    you = body.get("you")
    rated = check_rated(body)
    if you is None:
        you = secrets.choice(SIDES)
    if not isinstance(opponent, str):
        raise BotError("bad_request", "opponent must be 'ai:<level>', 'bot:<name>' or 'link'")
    sid = connect(bot)
    room_for(bot)
    event: dict[str, Any] = {"you": you, "variant": variant}
    if clock is not None:
        event["clock"] = clock
    if opponent.startswith("ai:"):
        event.update(mode="ai", level=opponent.removeprefix("ai:"))
        if clock is not None:
            raise BotError("bad_request", "a game against the AI has no clock")
    elif opponent == "link" or opponent.startswith("bot:"):
        event["mode"] = "friend"
    else:
        raise BotError("bad_request", "opponent must be 'ai:<level>', 'bot:<name>' or 'link'")
    other = opponent_bot(opponent, variant) if opponent.startswith("bot:") else None
    if other is not None and other.player == bot.player:
        raise BotError("bad_request", "a bot cannot challenge itself")
    made = run(sid, "new_game", event)
    if made.get("ok") and not rated:  # before anyone can end it: never counted
        book().mark_casual(made["game"]["id"])
    seat_from(made, bot)
    if made.get("ok"):
        made = {**made, "rated": rated}
    if other is not None and made.get("ok"):
        game_id = made["game"]["id"]
        book().offer(game_id, other.player)
        emit_all(current_app.extensions["ttt_socketio"], [Push(
            "challenge", bot_room(other.player), {"id": game_id, "from": bot.name,
                                                  "variant": variant, "clock": clock,
                                                  "rated": rated})])
    return answer(made)


@bp.post("/api/bot/challenge/<game_id>/<verb>")
@authenticated
def reply_challenge(bot: Bot, game_id: str, verb: str):
    if verb == "accept":
        room_for(bot)  # before the challenge is taken: a full bot may accept it later
    if verb not in ("accept", "decline") or not book().answer(game_id, bot.player):
        raise BotError("not_found", "no such challenge")
    sid = connect(bot)
    if verb == "decline":
        match = table().store.get(game_id)
        challenger = book().by_player(next((s for s in match.seats.values() if s), "")
                                      ) if match else None
        if challenger is not None:
            run(connect(challenger), "abort", {"game": game_id}, limited=False)
        match = table().store.get(game_id)
        if match is None:
            raise BotError("not_found", "no such game")
        return answer({"ok": True, "game": table().view(match, "spectator")})
    joined = run(sid, "join", {"game": game_id})
    if joined.get("ok") and joined.get("you") not in SIDES:
        return answer(refusal("not_allowed", "the challenge is no longer open"))
    seat_from(joined, bot)
    return answer(joined)


@bp.post("/api/bot/game/<game_id>/<action>")
@authenticated
def act(bot: Bot, game_id: str, action: str):
    if action not in ACTIONS:
        raise BotError("not_found", "no such action")
    body = {**payload(), "game": game_id}
    if action == "rematch":
        room_for(bot)
    done = run(connect(bot), action, body)
    if action == "rematch" and done.get("started"):
        seat_from(done, bot)
    return answer(done)


@bp.get("/api/bot/account")
@authenticated
def account(bot: Bot):
    """Which bot the token belongs to, and the move deadline it plays to."""
    return jsonify({"ok": True, "bot": card(bot), "move_seconds": move_seconds()})


@bp.post("/api/bot/account")
@authenticated
def set_account(bot: Bot):
    """{"variants": [...]}: what the bot plays (the SDK sends its program's VARIANTS)."""
    body = payload()
    if "variants" in body:
        changed = book().set_variants(bot.player, check_variants(body["variants"]))
        bot = changed or bot
    return jsonify({"ok": True, "bot": card(bot), "move_seconds": move_seconds()})


def move_seconds() -> float:
    """The seconds a bot has for a move (the referee's; a game's clock may be shorter)."""
    return float(getattr(table().store, "move_seconds", MOVE_SECONDS))


@bp.app_errorhandler(405)
def wrong_method(error):
    """A wrong method on the API: JSON as every other answer, not an HTML page (a routing
    error reaches no blueprint's own handler, hence the app's, for /api/ paths only)."""
    if not request.path.startswith("/api/"):
        return error
    allowed = getattr(error, "valid_methods", None) or []
    response = jsonify(refusal("bad_request", f"{request.method} is not allowed here"
                                              + (f": use {', '.join(allowed)}" if allowed
                                                 else "")))
    response.status_code = 405
    if allowed:
        response.headers["Allow"] = ", ".join(allowed)
    return response


@bp.get("/api/bots")
def bots():
    """Every bot with its record against each AI level, against bots, its rating and whether
    it is online (its stream open, in any process)."""
    return guarded(lambda: jsonify({"ok": True, "bots": [card(b) for b in book().all()]}))


def card(bot: Bot) -> dict[str, Any]:
    """A bot as the ladder shows it."""
    record = table().store.record(bot.player)
    vs_ai: dict[str, dict[str, dict[str, int]]] = {}
    for name, rules in VARIANTS.items():
        vs_ai[name] = {level: record.get(level if name == "classic" else f"{name}-{level}",
                                         {"wins": 0, "draws": 0, "losses": 0})
                       for level in rules.levels}
    return {**bot.public(), "vs_ai": vs_ai, "online": hub().online(bot.player)}
