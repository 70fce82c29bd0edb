"""The bot API (PROTOCOL "Bots (version 3)"): HTTP in, the same Table methods as the sockets.

Each call authenticates a bearer token, then runs the event on the bot's pseudo-connection
through `Table.handle`, emits the pushes as the socket adapter does, and answers JSON. The
token is read from the Authorization header only; nothing here logs a header or a body.
"""

from __future__ import annotations

import functools
import logging
import secrets
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from flask_socketio import SocketIO

from ttt.bots import Bot, BotError, bot_answer, check_name, hash_token
from ttt.bots.book import Book, open_book
from ttt.bots.caps import opponent_in
from ttt.bots.caps import room_for as room_in_caps
from ttt.bots.referee import MOVE_SECONDS, Referee
from ttt.match import SIDES, MatchError
from ttt.store import StoreUnavailable
from ttt.table import Push, Table, refusal
from ttt.variants import VARIANTS
from ttt.web.events import client_address, emit_all
from ttt.web.hub import Hub, bot_room

bp = Blueprint("bots_api", __name__)
log = logging.getLogger("ttt.bots")

STATUS = {"bad_request": 400, "unauthorized": 401, "spectator": 403, "not_found": 404,
          "conflict": 409, "rate_limited": 429, "internal": 500, "unavailable": 503,
          "busy": 503}
ACTIONS = ("move", "resign", "abort", "claim", "rematch", "decline", "react")
MAX_GAMES = 10   # live games a bot may sit in at once


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
        bot = book().by_token(hash_token(token.strip())) if scheme == "Bearer" and token else None
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
        return answer(refusal("unavailable", "the game store is unavailable; retry"))
    except Exception:  # a bug: one line in the log (never the request's headers)
        log.exception("bot call %s failed", request.path.rsplit("/", 1)[-1])
        return answer(refusal("internal", "something went wrong on the server"))


MAX_BODY = 4096


def payload() -> dict[str, Any]:
    """The request's JSON object (at most 4 KiB; nothing a bot sends needs more)."""
    if (request.content_length or 0) > MAX_BODY:
        raise BotError("bad_request", f"a body has at most {MAX_BODY} bytes")
    body = request.get_json(silent=True) if request.content_length else {}
    if not isinstance(body, dict):
        raise BotError("bad_request", "the body must be a JSON object")
    return body


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


def room_for(bot: Bot, against: str | None = None) -> None:
    """Refuse a new game to a bot at its cap of live games against people (`against` None),
    or against bots, or against that bot (ttt.bots.caps: no bot squats another)."""
    room_in_caps(table().store, bot.player, bot.name, current_app.config["TTT_BOT_MAX_GAMES"],
                  against)


def opponent_bot(text: str, by: str | None = None) -> Bot:
    """The online bot named by 'bot:<name>', with room for a game against `by` (a bot's
    player id; None: a person)."""
    other = book().by_name(check_name(text.removeprefix("bot:")))
    if other is None or other.revoked:
        raise BotError("not_found", "no such bot")
    if not hub().online(other.player):
        raise BotError("not_allowed", f"{other.name} is not online")
    room_for(other, by)
    return other


@bp.get("/api/bot/stream")
@authenticated
def stream(bot: Bot):
    connect(bot)
    lines = hub().lines(hub().open(bot))
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
    if you is None:
        you = secrets.choice(SIDES)
    if not isinstance(opponent, str):
        raise BotError("bad_request", "opponent must be 'ai:<level>', 'bot:<name>' or 'link'")
    sid = connect(bot)
    if not opponent.startswith("bot:"):  # against a bot: counted once it is known, below
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
    other = opponent_bot(opponent, bot.player) if opponent.startswith("bot:") else None
    if other is not None and other.player == bot.player:
        raise BotError("bad_request", "a bot cannot challenge itself")
    if other is not None:
        room_for(bot, other.player)
    made = run(sid, "new_game", event)
    seat_from(made, bot)
    if other is not None and made.get("ok"):
        game_id = made["game"]["id"]
        book().offer(game_id, other.player)
        emit_all(current_app.extensions["ttt_socketio"], [Push(
            "challenge", bot_room(other.player), {"id": game_id, "from": bot.name,
                                                  "variant": variant, "clock": clock})])
    return answer(made)


@bp.post("/api/bot/challenge/<game_id>/<verb>")
@authenticated
def reply_challenge(bot: Bot, game_id: str, verb: str):
    if verb == "accept":
        # Before the challenge is taken: a full bot may accept it later.
        room_for(bot, opponent_in(table().store, game_id, bot.player))
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
        room_for(bot, opponent_in(table().store, game_id, bot.player))
    done = run(connect(bot), action, body)
    if action == "rematch" and done.get("started"):
        seat_from(done, bot)
    return answer(done)


@bp.get("/api/bot/account")
@authenticated
def account(bot: Bot):
    """Which bot the token belongs to."""
    return jsonify({"ok": True, "bot": card(bot)})


@bp.get("/api/bots")
def bots():
    """Every bot with its record against each AI level, against bots, its rating and whether
    it is online (its stream open, in any process)."""
    return jsonify({"ok": True, "bots": [card(b) for b in book().all()]})


def card(bot: Bot) -> dict[str, Any]:
    """A bot as the ladder shows it."""
    record = table().store.record(bot.player)
    vs_ai: dict[str, dict[str, dict[str, int]]] = {}
    for name, rules in VARIANTS.items():
        vs_ai[name] = {level: record.get(level if name == "classic" else f"{name}-{level}",
                                         {"wins": 0, "draws": 0, "losses": 0})
                       for level in rules.levels}
    return {**bot.public(), "vs_ai": vs_ai, "online": hub().online(bot.player)}
