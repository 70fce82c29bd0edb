"""Making and revoking a bot from the site: /bots/new, POST /api/bots, /bot/<name>/revoke.

A person (the signed-cookie player) makes a bot with a name and an about text; the token is
shown once, on the answer to the POST (never in a URL, never logged, `no-store`). The name
and about are checked by `ttt.bots` as the command line checks them, the bot is kept by
`ttt.bots.book.register` (the book decides a taken name and the person's cap of live bots
in one step), and making is rate-limited per person and per address through the table's
limiter (shared by every process on Redis). A form POST must come from this site's own
pages (its Origin); the JSON endpoint takes JSON only, which a cross-site form cannot send.
"""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    jsonify,
    make_response,
    redirect,
    render_template,
    request,
)
from flask_babel import gettext as _

from ttt.bots import PLAYABLE, Bot, BotError, check_about, check_name, check_variants
from ttt.bots.book import register
from ttt.master.replies import refusal
from ttt.runtime.translation import N_
from ttt.web.bots.kit import NOT_JSON, STATUS, answer, book, card, guarded, hub, payload, table
from ttt.web.bots.pages import bot_or_404
from ttt.web.http.pages import ensure_player, from_this_site, site_url
from ttt.web.i18n import said
from ttt.web.realtime.events import client_address

bp = Blueprint("bot_making", __name__)

CROSS_SITE = N_("this form is only taken from this site's own pages")


def take_making(person: str) -> None:
    """Count one bot made against the person's and the client address's hourly rate."""
    config = current_app.config
    per_hour = float(config["TTT_BOT_CREATE_RATE"])
    if config["TTT_RATE_LIMIT"] <= 0 or per_hour <= 0:  # every rate limit off
        return
    limiter, rate = table().limiter, per_hour / 3600
    origin = table().origin(client_address(config["TTT_TRUSTED_PROXIES"]))
    if not (limiter.take(f"botmake:p:{person}", rate, per_hour)
            and (origin is None or limiter.take(f"botmake:a:{origin}", rate, per_hour))):
        raise BotError("rate_limited", N_("too many bots made from here: try again later"))


def make_for(person: str, name: Any, about: Any, variants: Any = None) -> tuple[Bot, str]:
    """A bot made for this person (checked, rate-limited, capped): the bot and its token."""
    name, about = check_name(name), check_about("" if about is None else about)
    variants = check_variants(["classic"] if variants is None else variants)
    take_making(person)
    return register(book(), table().store, name, about,
                    owner=table().store.name(person) or "", maker=person,
                    limit=int(current_app.config["TTT_BOT_MAX_PER_PERSON"]), variants=variants)


def _form(error: str | BotError | None = None, status: int = 200, variants: Any = ("classic",),
          **values: str):
    return render_template("bot_new.html", error=said(error),
                           limit=current_app.config["TTT_BOT_MAX_PER_PERSON"],
                           name=values.get("name", ""), about=values.get("about", ""),
                           variants=list(variants)), status


@bp.get("/bots/new")
def new_bot():
    """The form: a name and an about text."""
    ensure_player()
    return _form()


@bp.post("/bots/new")
def made_bot():
    """Make the bot; its token on this answer only."""
    if not from_this_site():
        return _form(CROSS_SITE, 403)
    person = ensure_player()
    name, about = request.form.get("name", ""), request.form.get("about", "")
    variants = request.form.getlist("variants")[:4] or ["classic"]  # none ticked: classic
    try:
        bot, token = make_for(person, name, about, variants)
    except BotError as error:
        return _form(error, STATUS.get(error.code, 409),
                     [v for v in variants if v in PLAYABLE], name=name[:24], about=about[:280])
    page = render_template("bot_made.html", bot=bot, token=token, site=site_url())
    return _secret(make_response(page))


@bp.post("/api/bots")
def create():
    """{"name", "about"} from the page's cookie: {"ok", "bot", "token"}."""
    if not request.is_json:  # a cross-site form cannot send JSON without a preflight
        return answer(refusal("bad_request", NOT_JSON))
    if not from_this_site(required=False):
        return jsonify(refusal("not_allowed", CROSS_SITE)), 403
    return guarded(_create)


def _create() -> Response:
    body = payload()
    bot, token = make_for(ensure_player(), body.get("name"), body.get("about", ""),
                          body.get("variants"))
    return _secret(jsonify({"ok": True, "bot": card(bot), "token": token}))


def _secret(response: Response) -> Response:
    """An answer that carries a token: never kept by a cache or the browser's history."""
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post("/bot/<name>/revoke")
def revoke(name: str):
    """The owner revokes a bot made on the site, as `python -m ttt bot revoke` does."""
    if not from_this_site():
        abort(403, description=said(CROSS_SITE))
    bot = bot_or_404(name)
    if not bot.maker or bot.maker != ensure_player():
        abort(403, description=_("Only the person who made a bot can revoke it."))
    book().revoke(bot.name)
    hub().revoke(bot.player)  # its stream here closes now; in another process within a second
    return redirect("/bots", code=303)
