"""Page routes: the game page, share links, QR codes, replays, the health check."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import re
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import segno
from flask import (
    Blueprint,
    abort,
    current_app,
    jsonify,
    make_response,
    render_template,
    request,
    session,
)
from flask_babel import force_locale, format_decimal
from flask_babel import gettext as _
from werkzeug.exceptions import (
    Forbidden,
    HTTPException,
    InternalServerError,
    MethodNotAllowed,
    NotFound,
    RequestEntityTooLarge,
    TooManyRequests,
)

from ttt.ai import analysis
from ttt.game.match import AI
from ttt.game.variants import VARIANTS
from ttt.rules.classic import Board, CellOccupied, GameOver
from ttt.rules.ultimate import WrongBoard
from ttt.web import i18n
from ttt.web.extensions import get_store, get_table
from ttt.web.http import assets, gzipping
from ttt.web.ops import health
from ttt.web.transport.admission import address_of

bp = Blueprint("pages", __name__)

# Whole-string matches over ASCII only: `$` would let a trailing newline through, and
# `isdigit()` is true for "²" and "٣".
GAME_ID = re.compile(r"[A-Za-z0-9_-]{16,64}", re.ASCII)
PLAYER_ID = re.compile(r"[A-Za-z0-9_-]{22}", re.ASCII)
CLASSIC_MOVES = re.compile(r"[0-8]{1,9}", re.ASCII)
# An ultimate replay link's moves: cells 0..80 separated by dots, at most 81 of them.
ULTIMATE_MOVES = re.compile(r"[0-9]{1,2}(\.[0-9]{1,2}){0,80}", re.ASCII)

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; manifest-src 'self'; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def ensure_player() -> str:
    """The visitor's player id, made and put in the signed session cookie on first visit.
    The cookie is sent again only when it changes (SESSION_REFRESH_EACH_REQUEST is off): at
    most once a day here, which starts its 400 days again. An answer that re-sent the cookie
    as its request brought it undid a change made meanwhile: a language chosen while the page
    before still fetched its files (the service worker's precache) was forgotten."""
    player = session.get("pid")
    if not isinstance(player, str) or not PLAYER_ID.fullmatch(player):
        player = secrets.token_urlsafe(16)
        session["pid"] = player
    day = int(time.time() // 86400)
    if session.get("day") != day:
        session["day"] = day
    if not session.permanent:  # setting it, even to what it is, marks the session changed
        session.permanent = True
    return player


def site_url() -> str:
    """This site's address for people to copy: TTT_PUBLIC_URL, else as the request reached us
    (the scheme a trusted proxy forwarded, the Host)."""
    public = current_app.config.get("TTT_PUBLIC_URL")
    if public:
        return public.rstrip("/")
    scheme = request.scheme
    if request.remote_addr in current_app.config["TTT_TRUSTED_PROXIES"]:
        scheme = request.headers.get("X-Forwarded-Proto", scheme).split(",")[0].strip()
    return f"{scheme}://{request.host}"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def from_this_site(required: bool = True) -> bool:
    """Whether a POST came from this site's own pages: its Origin (or, lacking one, its
    Referer) is this site's. Browsers send Origin with every form POST, so a cross-site form
    is refused; `required=False` lets a request with neither through (a script's JSON)."""
    source = request.headers.get("Origin") or request.headers.get("Referer")
    if not source:
        return not required
    return source != "null" and _origin(source) in {_origin(site_url()),
                                                      _origin(request.host_url)}


# Static answers that are never a document: the page's scripts, its stylesheet, its icons.
SUBRESOURCES = frozenset({"text/javascript", "application/javascript", "text/css", "image/png"})


@bp.after_app_request
def security_headers(response):
    """Headers on every answer: a strict CSP and friends."""
    if not (request.endpoint == "static" and response.mimetype in SUBRESOURCES):
        # A document's policies; a script, a stylesheet or a picture is no document (the
        # browser ignores them there), and a first load is two dozen of those.
        response.headers.setdefault("Content-Security-Policy",
                                    current_app.extensions.get("ttt_csp", CSP))
        response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers.setdefault("Cache-Control", "no-cache")
    if request.endpoint == "static":
        # send_file's Content-Disposition says nothing a script or a stylesheet needs, and its
        # Date comes again from the server: a first load is two dozen of these answers.
        response.headers.pop("Content-Disposition", None)
        response.headers.pop("Date", None)
    if request.endpoint == "static" and response.mimetype in SUBRESOURCES:
        # Nor their Accept-Ranges and Last-Modified (the ETag revalidates): ~70 bytes of each
        # of ~25 answers of a first load, where every language's catalog must fit (100 kB).
        for name in ("Accept-Ranges", "Last-Modified"):
            response.headers.pop(name, None)
    return gzipping.compress(response)


# Where a game page's id goes in its cached copy (ids are [A-Za-z0-9_-]: never this).
GAME_SLOT = "\x00game\x00"


def paced(view):
    """The view behind the address prefix's page budget (ttt.web.transport.budgets): past
    it, 429 with Retry-After and no rendering."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        budgets = current_app.extensions.get("ttt_budgets")
        if budgets is not None and budgets.pages:
            player = session.get("pid")
            address = address_of(request.environ, current_app.config["TTT_TRUSTED_PROXIES"])
            if not budgets.page(address, player if isinstance(player, str) else None):
                return ("too many pages from your address: wait a moment", 429,
                        {"Content-Type": "text/plain; charset=utf-8", "Retry-After": "1",
                         "Cache-Control": "no-store"})
        return view(*args, **kwargs)

    return wrapper


def _page(game_id: str | None):
    """The game page, rendered once per language (and kind: home or a game's link) in this
    process, which is one version of the app; a game's link gets its id put in. Nothing in
    it is per request: the CSP has no nonce, the cookie is a header (a render is
    ~17 ms of CPU: one cookie's 56 pages a second would take a process)."""
    pages = current_app.extensions.setdefault("ttt_pages", {})
    key = (i18n.current(), game_id is not None)
    page = pages.get(key)
    if page is None:
        # The page's words in the player's language only (a few kB), beside the game's choices.
        page = render_template("index.html", game_id=game_id,
                               config={**get_table().config(), "words": i18n.page_words()})
        # Only a GET's: the language menu of any other method's page links to the home page.
        if request.method == "GET" and len(pages) < 4 * len(i18n.LANGUAGES):
            pages[key] = page.replace(game_id, GAME_SLOT) if game_id else page
        return page
    if game_id:
        return page.replace(GAME_SLOT, game_id)
    response = current_app.response_class(page, mimetype="text/html")
    response.ttt_page_key = key  # type: ignore[attr-defined]  # compressed once too
    return response


@bp.get("/")
@paced
def index():
    ensure_player()
    return _page(None)


@bp.get("/api/config")
def config():
    """The choices the page offers (levels per variant, modes, clocks, reactions, claim delay)."""
    return jsonify(get_table().config())


@bp.get("/g/<game_id>")
@paced
def game(game_id: str):
    # A dead or expired link gets the friendly not-found page (still a 404) with a way on.
    if not GAME_ID.fullmatch(game_id) or get_store().get(game_id) is None:
        abort(404, description=_("This game link has expired, or it never existed."))
    ensure_player()
    return _page(game_id)


@bp.get("/g/<game_id>/qr.svg")
def qr(game_id: str):
    if not GAME_ID.fullmatch(game_id):
        abort(404)
    # The link in the picture is site_url(): TTT_PUBLIC_URL when the operator set it, else
    # built from the request's Host, which a client chooses: such an answer is never marked
    # public, so no shared cache hands one client's Host to everybody.
    out = io.BytesIO()
    segno.make(f"{site_url()}/g/{game_id}", error="m").save(
        out, kind="svg", scale=6, border=2, xmldecl=False, svgns=True, dark="#111", light="#fff")
    public = current_app.config.get("TTT_PUBLIC_URL")
    cache = "public, max-age=86400" if public else "private, max-age=86400"
    return out.getvalue(), 200, {"Content-Type": "image/svg+xml", "Cache-Control": cache}


def _unplayable(rules, cells: list[int]) -> str:
    """Why no game can be played as a replay link says, in the visitor's language: the first
    move the rules refuse, by its number, and what is wrong with it (the rules' own reason is
    English for programs)."""
    for index in range(len(cells)):
        try:
            rules.from_moves(cells[:index + 1])
        except GameOver:
            # Translators: %(n)s the move's number
            return _("No game can be played that way: move %(n)s comes after the game is over.",
                     n=format_decimal(index + 1))
        except CellOccupied:
            # Translators: %(n)s the move's number
            return _("No game can be played that way: move %(n)s is on a square already "
                     "taken.", n=format_decimal(index + 1))
        except WrongBoard:
            # Translators: %(n)s the move's number
            return _("No game can be played that way: move %(n)s is not in the board the "
                     "move before sent it to.", n=format_decimal(index + 1))
        except ValueError:
            # Translators: %(n)s the move's number
            return _("No game can be played that way: move %(n)s is not a square of the "
                     "board.", n=format_decimal(index + 1))
    return _("No game can be played that way.")


@bp.get("/r/<moves>")
@paced
def replay(moves: str):
    """A read-only replay of the game whose cells were played in this order (`/r/40812`)."""
    if not CLASSIC_MOVES.fullmatch(moves):
        abort(404, description=_("A replay link lists the cells played, each a digit from 0 to 8."))
    cells = [int(c) for c in moves]
    try:
        board = Board.from_moves(cells)
    except ValueError:
        abort(404, description=_unplayable(VARIANTS["classic"], cells))
    outcome = board.outcome()
    data = {"moves": cells, **analysis.review(cells),
            "winner": outcome.winner if outcome else None,
            "line": list(outcome.line) if outcome and outcome.line else None,
            "over": outcome is not None}
    return render_template("replay.html", replay=data, moves=moves, played=played_by(cells))


@bp.get("/r/u/<moves>")
@paced
def replay_ultimate(moves: str):
    """A read-only replay of an ultimate game, its cells (0..80) in order: `/r/u/40.36.4`."""
    if not ULTIMATE_MOVES.fullmatch(moves):
        abort(404, description=_("An ultimate replay link lists the cells played, each a number "
                                 "from 0 to 80, separated by dots."))
    rules = VARIANTS["ultimate"]
    cells = [int(part) for part in moves.split(".")]
    try:
        cells = rules.parse_moves(moves)
    except ValueError:
        abort(404, description=_unplayable(rules, cells))
    outcome = rules.from_moves(cells).outcome()
    data = {"moves": cells, **rules.review(cells),
            "winner": outcome.winner if outcome else None,
            "line": list(outcome.line) if outcome and outcome.line else None,
            "over": outcome is not None}
    return render_template("replay_ultimate.html", replay=data, played=played_by(cells))


def played_by(cells: list[int]) -> dict[str, Any] | None:
    """Who played the game `?g=<id>` names, and when it ended, for its replay:
    only while the game is stored and its moves are these (a link cannot name other players)."""
    game_id = request.args.get("g", "")
    match = get_store().get(game_id) if GAME_ID.fullmatch(game_id) else None
    if match is None or list(match.moves) != cells:
        return None

    levels = {"easy": _("Easy"), "medium": _("Medium"), "hard": _("Hard"),
              "perfect": _("Perfect")}

    def name(side: str) -> str:
        if match.seats.get(side) == AI:
            return _("AI · %(level)s", level=levels.get(match.level or "", match.level))
        return match.names.get(side) or (_("Player 1") if side == "X" else _("Player 2"))

    ended = time.strftime("%Y-%m-%d %H:%M", time.gmtime(match.updated))
    return {"X": name("X"), "O": name("O"), "date": ended, "id": match.id}


@bp.app_errorhandler(404)
def not_found(error):
    # Werkzeug's own description is English for any URL: the page says its own words instead.
    message = getattr(error, "description", "")
    if message == NotFound.description:
        message = ""
    return render_template("404.html", message=message), 404


# Werkzeug's own descriptions are English whatever the page's language: only a description
# the route gave (already in the visitor's language) is shown, else the page's own words.
WERKZEUG_WORDS = frozenset(getattr(kind, "description", None) for kind in
                           (Forbidden, MethodNotAllowed, RequestEntityTooLarge, TooManyRequests,
                            InternalServerError))


def error_page(error: HTTPException):
    """A refused page in the site's own shell and the visitor's language (not Werkzeug's
    English one): 403, 405, 413, 429, 500. Keeps the error's own headers (Allow, Retry-After)."""
    code = error.code or 500
    message = getattr(error, "description", "") or ""
    if message in WERKZEUG_WORDS or code == 500:
        message = ""
    response = make_response(render_template("error.html", code=code, message=message), code)
    for name in ("Allow", "Retry-After"):
        value = dict(error.get_headers()).get(name)
        if value:
            response.headers[name] = value
    return response


for _code in (403, 413, 429, 500):
    bp.app_errorhandler(_code)(error_page)


@bp.get("/manifest.webmanifest")
def manifest():
    """The install manifest in the page's language (`hl`, which the page's link names; else the
    request's): the installed app's name and description in the player's words."""
    code = i18n._known(request.args.get("hl")) or i18n.current()
    source = json.loads((Path(current_app.static_folder) / "manifest.webmanifest").read_bytes())
    with force_locale(code):
        source.update(name=f"{_('Tic-tac-toe')} · ttt", short_name=_("Tic-tac-toe"),
                      description=_("Tic-tac-toe in your browser: play an AI from easy to "
                                    "unbeatable, pass the phone to someone next to you, or send "
                                    "a friend a link."),
                      lang=i18n.html_lang(code), dir=i18n.direction(code))
    body = json.dumps(source, ensure_ascii=False, indent=1)
    return body, 200, {"Content-Type": "application/manifest+json; charset=utf-8"}


@bp.record_once
def _watch_parts(state) -> None:
    """ttt_part_up{part} reads the same checks as /healthz at each scrape; the static files
    fingerprinted (assets.py)."""
    app = state.app
    # The page's stylesheets inline, each allowed by its hash: nothing blocks the first paint.
    styles = " ".join(assets.install(app))
    app.extensions["ttt_csp"] = CSP.replace("style-src 'self'", f"style-src 'self' {styles}")
    app.extensions["ttt_metrics"].watch_parts(lambda: health.parts(app), lambda: health.lost(app))


# What the service worker keeps for the app to open offline: the page shell, the
# pages a visitor reads (the bots, the guide) and the static files a game or a replay needs:
# the bundled scripts (assets.py), each at its versioned address; the stylesheets
# are inside the pages. Not the large icons (the browser has them once installed).
PRECACHE_STATIC = ("icons/icon-192.png",)
PRECACHE_PAGES = ("/", "/manifest.webmanifest")
OPTIONAL_PAGES = ("/bots", "/bots/guide")  # kept if they load; an install never fails on them


def precache_paths(app) -> list[str]:
    """The URLs the service worker precaches: the pages and the static files, versioned."""
    bundles = sorted(name for name in app.extensions["ttt_assets"] if name.startswith("bundle/"))
    return [*PRECACHE_PAGES, *(assets.url(app, name) for name in (*PRECACHE_STATIC, *bundles))]


@functools.cache
def _service_worker(static_folder: str, paths: tuple[str, ...]) -> str:
    static = Path(static_folder)
    # The versions in the paths cover the static files; the pages change with them.
    digest = hashlib.sha256((static / "sw.js").read_bytes() + json.dumps(paths).encode())
    source = (static / "sw.js").read_text(encoding="utf-8")
    return (source.replace('"__VERSION__"', json.dumps(digest.hexdigest()[:16]))
            .replace("__PRECACHE__", json.dumps(list(paths)))
            .replace("__OPTIONAL__", json.dumps(list(OPTIONAL_PAGES))))


def service_worker(app) -> str:
    """static/sw.js with its VERSION (a hash of itself and of everything it precaches: a new
    release is a new worker) and its PRECACHE list filled in. Built once per process."""
    return _service_worker(app.static_folder, tuple(precache_paths(app)))


@bp.get("/sw.js")
def sw():
    """The service worker, at the root so that its scope is the whole site."""
    return service_worker(current_app._get_current_object()), 200, {
        "Content-Type": "application/javascript; charset=utf-8", "Cache-Control": "no-cache"}


@bp.get("/healthz")
def healthz():
    """Each part (store, message queue) up or down; 503 naming the ones down."""
    body, status = health.report(current_app)
    return jsonify(body), status


@bp.get("/readyz")
def readyz():
    """Readiness, apart from /healthz (liveness): 200 only while this process serves games;
    503 "starting" before, "draining" once SIGTERM came (deploy/rolling_restart.py waits on
    it before restarting the next process), "<part> unavailable" while a part is down."""
    state = current_app.extensions["ttt_drain"].state
    if state == "serving":
        down = [part for part, up in health.parts(current_app).items()
                if not up and part != "ai"]  # no AI worker: classic games are still served
        if down:
            state = f"{down[0]} unavailable"
    if state != "serving":
        answer = jsonify(ready=False, state=state)
        answer.headers["Retry-After"] = "1"
        answer.headers["Cache-Control"] = "no-store"
        return answer, 503
    answer = jsonify(ready=True)
    answer.headers["Cache-Control"] = "no-store"
    return answer
