"""The web layer: the Flask app factory, pages and Socket.IO events. The only room with Flask.

`create_app` builds an app from one `init_app` per part (flaskr's shape): settings, the store,
presence, the master, pages, the Socket.IO server. It starts no thread: whoever serves the app
calls `housekeeping.start(app)` (app.py and wsgi.py do).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from flask import Flask

from ttt.master.limits import Limits, open_limiter
from ttt.master.presence import MemorySeats, Presence, RedisSeats
from ttt.master.table import Table
from ttt.pool import workers
from ttt.store import open_store
from ttt.web.extensions import get_socketio, get_store, get_table  # noqa: F401 (re-exported)
from ttt.web.ops import logs, settings
from ttt.web.ops.metered import MeteredStore
from ttt.web.ops.metrics import Metrics, count_from_zero, observe_search, watch_queue
from ttt.web.realtime.publisher import Publisher

ROOT = Path(__file__).resolve().parents[2]


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Build the app: defaults, then the environment, then `config` (tests)."""
    app = Flask(__name__, instance_path=str(ROOT / "instance"),
                template_folder=str(ROOT / "templates"), static_folder=str(ROOT / "static"))
    settings.init_app(app, config)
    if not app.testing:
        logs.configure()  # the one place a served process sets up its logging
    _init_store(app)
    _init_presence(app)
    _init_table(app)
    from ttt.web import i18n
    from ttt.web.bots import site
    from ttt.web.http import pages
    from ttt.web.realtime import sockets
    from ttt.web.transport import budgets

    app.extensions["ttt_budgets"] = budgets.from_config(app.config)  # per address prefix
    app.before_request(budgets.bounded_headers)
    app.before_request(logs.follow_request)  # X-Request-Id: the front's id in our lines
    app.teardown_request(logs.forget_request)
    i18n.init_app(app)
    app.register_blueprint(pages.bp)
    socketio = sockets.init_app(app)
    # The HTTP side is wired here, by the factory: the real-time side below it never reaches
    # up into the pages (tests/test_layers.py, the rooms of ttt/web/).
    site.install(app, socketio, app.extensions["ttt_table"])
    count_from_zero(app, Table.EVENTS)  # every route is known now
    return app


def _shared(app: Flask) -> str | None:
    """The Redis that several processes share, if any (the message queue, else the store)."""
    store = app.config["TTT_STORE"]
    return app.config["TTT_MESSAGE_QUEUE"] or (store if store.startswith("redis") else None)


def _init_store(app: Flask) -> None:
    """The game store, counted by the metrics (games started and finished, failed calls)."""
    app.extensions["ttt_metrics"] = metrics = Metrics()
    store = open_store(app.config["TTT_STORE"], finished_ttl=app.config["TTT_FINISHED_TTL"],
                       idle_ttl=app.config["TTT_IDLE_TTL"],
                       untouched_ttl=app.config["TTT_UNTOUCHED_TTL"])
    app.extensions["ttt_store"] = MeteredStore(store, metrics)


def _init_presence(app: Flask) -> None:
    """Who is connected to which seat; shared through Redis when several processes serve."""
    shared = _shared(app)
    seats = RedisSeats(shared) if shared else MemorySeats()
    store = app.extensions["ttt_store"].wrapped
    if isinstance(seats, RedisSeats) and shared == getattr(store, "url", None):
        store.riders.append(seats.ride)  # a write's round trip brings its game's presence
    app.extensions["ttt_presence"] = Presence(
        seats,
        max_connections=app.config["TTT_MAX_CONNECTIONS"],
        per_address=app.config["TTT_MAX_CONNECTIONS_PER_ADDRESS"],
        limiter=open_limiter(shared), blip=float(app.config["TTT_BLIP"]))


def _init_table(app: Flask) -> None:
    """The master, with the house's limits, its rules for bots and the AI's thinker."""
    from ttt.web.bots import site

    config = app.config
    limited = config["TTT_RATE_LIMIT"] > 0  # 0: benchmarks and trusted bots, no limit at all
    store = app.extensions["ttt_store"]
    bots = site.rules(app, store)
    table = Table(store, app.extensions["ttt_presence"],
                  limits=Limits(
                      claim_after=float(config["TTT_CLAIM_AFTER"]),
                      live_per_player=config["TTT_MAX_LIVE_PER_PLAYER"],
                      live_per_address=config["TTT_MAX_LIVE_PER_ADDRESS"],
                      live_total=config["TTT_MAX_LIVE_GAMES"],
                      creations_per_minute=float(config["TTT_CREATE_RATE"]) if limited else 0.0,
                      unjoined_per_player=int(config["TTT_UNJOINED_PER_PLAYER"]),
                      unjoined_per_address=float(config["TTT_UNJOINED_PER_ADDRESS"]),
                      renames_per_minute=10.0 if limited else 0.0),
                  salt=hashlib.sha256(str(config["SECRET_KEY"]).encode()).digest(),
                  thinker=workers.build(config), rules=bots, bot_seconds=bots.move_seconds)
    table.searched = observe_search
    # The one door every push leaves by, the master's own (an AI move landing later) too.
    app.extensions["ttt_publisher"] = publisher = Publisher()
    table.publish = publisher.publish
    watch_queue(table.thinker)
    app.extensions["ttt_table"] = table

