"""The bot API (PROTOCOL "Bots (version 3)"): HTTP in, the same Table methods as the sockets.

Each call authenticates a bearer token, then runs the event on the bot's pseudo-connection
through `Table.handle`, emits the pushes as the socket adapter does, and answers JSON. The
token is read from the Authorization header only; nothing here logs a header or a body.
"""

from __future__ import annotations

import functools
import secrets
from typing import Any

from flask import Blueprint, Response, jsonify, request

from ttt.bots import Bot, BotError, check_variants, hash_token
from ttt.bots.book_rules import HISTORY_PAGE
from ttt.bots.caps import opponent_in
from ttt.game.match import SIDES
from ttt.master.replies import Push, refusal
from ttt.store import StoreUnavailable
from ttt.web.bots.hub import bot_room, peer_gone
from ttt.web.bots.kit import (
    STORE_AWAY,
    answer,
    book,
    card,
    connect,
    guarded,
    hub,
    opponent_bot,
    payload,
    room_for,
    run,
    seat_from,
    table,
)
from ttt.web.extensions import get_publisher
from ttt.web.http.pages import error_page

bp = Blueprint("bots_api", __name__)

ACTIONS = ("move", "resign", "abort", "claim", "rematch", "decline", "react")


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


def check_rated(body: dict[str, Any]) -> bool:
    rated = body.get("rated", True)
    if not isinstance(rated, bool):
        raise BotError("bad_request", "rated must be true or false")
    return rated


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
    if not opponent.startswith("bot:"):  # against a bot: counted once it is known, below
        room_for(bot)
    # A bot plays many games at once: a new one leaves none of them (PROTOCOL v4 `from`).
    event: dict[str, Any] = {"you": you, "variant": variant, "from": None}
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
    other = opponent_bot(opponent, variant, bot.player) if opponent.startswith("bot:") else None
    if other is not None and other.player == bot.player:
        raise BotError("bad_request", "a bot cannot challenge itself")
    if other is not None:
        room_for(bot, other.player)
    made = run(sid, "new_game", event)
    if made.get("ok") and not rated:  # before anyone can end it: never counted
        book().mark_casual(made["game"]["id"])
    seat_from(made, bot)
    if made.get("ok"):
        made = {**made, "rated": rated}
    if other is not None and made.get("ok"):
        game_id = made["game"]["id"]
        book().offer(game_id, other.player)
        get_publisher().publish([Push(
            "challenge", bot_room(other.player), {"id": game_id, "from": bot.name,
                                                  "variant": variant, "clock": clock,
                                                  "rated": rated})])
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
    failure = body.pop("failure", None)  # why the bot's SDK resigns (its owner's history)
    if action == "rematch":
        room_for(bot, opponent_in(table().store, game_id, bot.player))
    done = run(connect(bot), action, body)
    if done.get("ok") and action in ("resign", "abort") and isinstance(failure, dict):
        book().note_failure(bot.player, game_id, {
            "kind": str(failure.get("kind", ""))[:80], "text": str(failure.get("text", ""))[:4000]})
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
    """The seconds a bot has for a move (the house's rules; a game's clock may be shorter)."""
    return table().services.bot_seconds


@bp.app_errorhandler(405)
def wrong_method(error):
    """A wrong method on the API: JSON as every other answer, not an HTML page (a routing
    error reaches no blueprint's own handler, hence the app's, for /api/ paths only)."""
    if not request.path.startswith("/api/"):
        return error_page(error)
    allowed = getattr(error, "valid_methods", None) or []
    response = jsonify(refusal("bad_request", f"{request.method} is not allowed here"
                                              + (f": use {', '.join(allowed)}" if allowed
                                                 else "")))
    response.status_code = 405
    if allowed:
        response.headers["Allow"] = ", ".join(allowed)
    return response


def owner_asks(bot: Bot) -> bool:
    """Whether the request carries this bot's own token."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return scheme == "Bearer" and bool(token) and hash_token(token.strip()) == bot.token_hash


@bp.get("/api/bots/<name>/games")
def bot_games(name: str):
    """A bot's finished games, newest first (PROTOCOL v5): `before` a game id to page on,
    `limit` at most 100."""
    def listed():
        bot = book().by_name(name)
        if bot is None:
            raise BotError("not_found", "no such bot")
        before = request.args.get("before") or None
        try:
            limit = min(100, max(1, int(request.args.get("limit", HISTORY_PAGE))))
        except ValueError:
            raise BotError("bad_request", "limit must be a whole number") from None
        games = book().history(bot.player, before, limit)
        more = len(games) == limit and bool(book().history(bot.player, games[-1]["id"], 1))
        if owner_asks(bot):  # its own token: each game's failure too
            noted = book().failures(bot.player, [g["id"] for g in games])
            for game in games:
                game["failure"] = noted.get(game["id"])
        return jsonify({"ok": True, "bot": bot.name, "games": games,
                        "next": games[-1]["id"] if more else None})

    return guarded(listed)


@bp.get("/api/bots")
def bots():
    """Every bot with its record against each AI level, against bots, its rating and whether
    it is online (its stream open, in any process)."""
    return guarded(lambda: jsonify({"ok": True, "bots": [card(b) for b in book().all()]}))


