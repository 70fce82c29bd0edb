"""The bots' pages: the ladder (/bots), a bot's card (/bot/<name>) and playing one.

A person plays a bot through an ordinary friend game: made on the person's own account
(their caps and creation rate), its empty seat then taken by the bot through the same
`join` a person's link takes. Pages are Jinja with autoescaping and no inline script.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from flask import (
    Blueprint,
    abort,
    current_app,
    jsonify,
    make_response,
    redirect,
    render_template,
    request,
    send_file,
)
from flask_babel import gettext as _

from ttt.bots import Bot, BotError, bundle, check_name
from ttt.bots.book_rules import HISTORY_PAGE
from ttt.game.match import SIDES
from ttt.master.payloads import valid_id
from ttt.master.replies import refusal
from ttt.runtime.translation import N_
from ttt.store import StoreUnavailable
from ttt.web.bots.kit import (
    NOT_JSON,
    answer,
    book,
    card,
    connect,
    opponent_bot,
    payload,
    run,
    seat_from,
    table,
)
from ttt.web.http.pages import GAME_ID, ensure_player, from_this_site, site_url
from ttt.web.i18n import isolate, said
from ttt.web.realtime.events import client_address

bp = Blueprint("bots_pages", __name__)


def bot_or_404(name: str) -> Bot:
    """The bot of that name, or a 404 page (none, or revoked)."""
    try:
        found = book().by_name(check_name(name))
    except BotError:
        found = None
    if found is None or found.revoked:
        abort(404, description=_("There is no bot of that name."))
    return found


@bp.get("/bots")
def ladder():
    cards = sorted((card(b) for b in book().all() if not b.revoked),
                   key=lambda c: (-c["rating"], c["name"].lower()))
    return render_template("bots.html", bots=cards)


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "bots"
SERVED_EXAMPLES = ("minimax.py", "random_ultimate.py")  # the guide links these


SDK_DEFAULT = 'DEFAULT_SERVER = "http://127.0.0.1:5000"'


def stamped_sdk(site: str) -> str:
    """The SDK's one file with this site's address as its default `--server`."""
    text = bundle.build()
    if SDK_DEFAULT not in text:  # the line moved: serve it as it is rather than break it
        return text
    return text.replace(SDK_DEFAULT, f"DEFAULT_SERVER = {json.dumps(site)}", 1)


@bp.get("/bots/sdk.py")
def sdk():
    """The bot client, one standard-library file, with this site as its default server:
    `python3 sdk.py mybot.py --token-file F` plays here."""
    response = make_response(stamped_sdk(site_url()))
    response.mimetype = "text/x-python"
    response.headers["Content-Disposition"] = 'attachment; filename="sdk.py"'
    response.headers["Cache-Control"] = "public, max-age=300"
    response.headers["Vary"] = "Host"  # the address written in is the Host asked for
    return response


@bp.get("/bots/guide")
def guide():
    """How to write a bot, for learners: a page in the site's style (operators read
    docs/deploy.md)."""
    config = current_app.config
    return render_template("bot_guide.html", site=site_url(),
                           move_seconds=f"{float(config.get('TTT_BOT_MOVE_SECONDS', 10)):g}",
                           max_games=config["TTT_BOT_MAX_GAMES"])


@bp.get("/bots/examples/<name>")
def example(name: str):
    """An example bot the guide links, as text a browser shows (and `curl -O` saves)."""
    path = EXAMPLES / name
    if name not in SERVED_EXAMPLES or not path.is_file():
        abort(404, description=_("There is no example of that name."))
    return send_file(path, mimetype="text/plain", max_age=300)


@bp.get("/bot/<name>")
def bot_page(name: str):
    person = ensure_player()
    bot = bot_or_404(name)
    mine = bool(bot.maker) and bot.maker == person
    return render_template("bot.html", bot=card(bot), error=None, mine=mine,
                           **history_of(bot, mine))


def history_of(bot: Any, mine: bool = False) -> dict[str, Any]:
    """A page of the bot's finished games (PROTOCOL v5), from `?before=<id>`: the games, the
    id the next page starts after (None on the last), and whether this is the first page."""
    before = request.args.get("before") or None
    if before is not None and not GAME_ID.fullmatch(before):
        before = None
    try:
        games = book().history(bot.player, before, HISTORY_PAGE + 1)
    except StoreUnavailable:
        games = []
    for game in games:
        game["date"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime(game.get("ended") or 0))
    more = len(games) > HISTORY_PAGE
    games = games[:HISTORY_PAGE]
    if mine:  # its maker sees why its program resigned
        try:
            noted = book().failures(bot.player, [game["id"] for game in games])
        except StoreUnavailable:
            noted = {}
        for game in games:
            game["failure"] = noted.get(game["id"])
    return {"games": games, "older": games[-1]["id"] if more else None,
            "newest": before is not None}


def give_seat(person: str, game_id: str, opponent: str) -> dict:
    """The open seat of a person's friend game given to an online bot; the bot's answer."""
    match = table().store.get(game_id)
    if match is None:
        raise BotError("not_found", N_("no such game"))
    if match.role(person) not in SIDES or match.mode != "friend":
        raise BotError("spectator", N_("only a player of a friend game can invite a bot"))
    if match.is_over or None not in match.seats.values():
        raise BotError("not_allowed", N_("this game has no empty seat"))
    bot = opponent_bot(opponent, match.variant)
    joined = run(connect(bot), "join", {"game": game_id}, limited=False)
    seat_from(joined, bot)
    return joined


@bp.post("/bot/<name>/play")
def play(name: str):
    """'Play this bot': a friend game made for this person, the bot in the other seat."""
    if not from_this_site():
        abort(403, description=said(N_("this form is only taken from this site's own pages")))
    bot = bot_or_404(name)
    person = ensure_player()
    variant = request.form.get("variant", "classic")
    you = request.form.get("you", "X")
    if variant not in bot.variants:  # the page offers only those: a stale or forged form
        what = {("classic",): _("classic only"), ("ultimate",): _("ultimate only")}.get(
            tuple(bot.variants), _("classic and ultimate"))
        # Translators: %(name)s a bot's name; %(variants)s "classic only", "classic and ultimate"
        wrong = _("%(name)s plays %(variants)s.", name=isolate(bot.name), variants=what)
        return render_template("bot.html", bot=card(bot), error=wrong), 409
    presence = table().presence
    sid = f"web:{person}:{id(request)}"
    address = client_address(current_app.config["TTT_TRUSTED_PROXIES"])
    if not presence.connect(sid, person, address):
        return render_template("bot.html", bot=card(bot), error=_("Too many tabs open.")), 429
    try:
        made = run(sid, "new_game", {"mode": "friend", "you": you, "variant": variant,
                                    "from": None},  # no game of the person is left
                   limited=False)
        if not made.get("ok"):
            return render_template("bot.html", bot=card(bot),
                                   error=said(made["error"]["message"])), 409
        try:
            joined, why = give_seat(person, made["game"]["id"], f"bot:{bot.name}"), None
        except BotError as error:
            joined, why = refusal(error.code, error.message), said(error)
        if not joined.get("ok"):
            run(sid, "abort", {"game": made["game"]["id"]}, limited=False)
            return render_template("bot.html", bot=card(bot),
                                   error=why or said(joined["error"]["message"])), 409
    finally:
        presence.disconnect(sid)
    return redirect(f"/g/{made['game']['id']}", code=303)


@bp.post("/api/game/<game_id>/opponent")
def opponent(game_id: str):
    """A friend game's empty seat given to a bot: {"opponent": "bot:<name>"} from the page."""
    if not request.is_json:  # a cross-site form cannot send JSON without a preflight
        return answer(refusal("bad_request", NOT_JSON))
    try:
        target = payload().get("opponent")
    except BotError as error:
        return answer(refusal(error.code, error.message))
    if not valid_id(game_id) or not isinstance(target, str) or not target.startswith("bot:"):
        return answer(refusal("bad_request", "opponent must be 'bot:<name>'"))
    try:
        joined = give_seat(ensure_player(), game_id, target)
    except BotError as error:
        return answer(refusal(error.code, error.message))
    if not joined.get("ok"):
        return answer(joined)
    return jsonify({"ok": True, "link": f"/g/{game_id}"})
