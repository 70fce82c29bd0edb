"""Page routes: the game page, share links, QR codes, replays, the health check."""

from __future__ import annotations

import io
import re
import secrets

import segno
from flask import Blueprint, abort, jsonify, render_template, request, session

from ttt.players import AI_LEVELS
from ttt.web import get_store

bp = Blueprint("pages", __name__)

GAME_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
PLAYER_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; manifest-src 'self'; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def ensure_player() -> str:
    """The visitor's player id, made and put in the signed session cookie on first visit."""
    player = session.get("pid")
    if not isinstance(player, str) or not PLAYER_ID.match(player):
        player = secrets.token_urlsafe(16)
        session["pid"] = player
    session.permanent = True
    return player


@bp.after_app_request
def security_headers(response):
    """Headers on every answer: a strict CSP and friends."""
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers.setdefault("Cache-Control", "no-cache")
    return response


@bp.get("/")
def index():
    ensure_player()
    return render_template("index.html", game_id=None, levels=AI_LEVELS)


@bp.get("/g/<game_id>")
def game(game_id: str):
    if not GAME_ID.match(game_id):
        abort(404)
    ensure_player()
    return render_template("index.html", game_id=game_id, levels=AI_LEVELS)


@bp.get("/g/<game_id>/qr.svg")
def qr(game_id: str):
    if not GAME_ID.match(game_id):
        abort(404)
    out = io.BytesIO()
    segno.make(f"{request.host_url}g/{game_id}", error="m").save(
        out, kind="svg", scale=6, border=2, xmldecl=False, svgns=True, dark="#111", light="#fff")
    return out.getvalue(), 200, {"Content-Type": "image/svg+xml",
                                 "Cache-Control": "public, max-age=86400"}


@bp.get("/healthz")
def healthz():
    if get_store().ping():
        return jsonify(ok=True)
    return jsonify(ok=False, error="store unavailable"), 503
