"""The web layer: the Flask app factory, pages and Socket.IO events. The only room with Flask."""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from flask_socketio import SocketIO
from socketio import packet as socketio_packet

from ttt import workers
from ttt.limits import open_limiter
from ttt.store import Store, open_store
from ttt.table import Limits, Table
from ttt.web import logs
from ttt.web.admission import Admission
from ttt.web.metrics import MeteredStore, Metrics, observe_search, watch_queue
from ttt.web.presence import LEASE_SECONDS, MemorySeats, Presence, RedisSeats

ROOT = Path(__file__).resolve().parents[2]
#: Engine.IO requests (each websocket is one) a process keeps in flight by default: what one
#: process holds with an honest player's p99 still low (bench.flood, README "Floods"). A
#: threaded websocket costs about four threads, so the threaded server stops at fewer.
OPEN_CONNECTIONS = {"threading": 500, "gevent": 2000}


def _env_config() -> dict[str, Any]:
    env = os.environ
    config: dict[str, Any] = {}
    for key in ("TTT_STORE", "TTT_MESSAGE_QUEUE", "TTT_PUBLIC_URL", "TTT_AI_QUEUE",
                "TTT_METRICS_TOKEN", "TTT_METRICS_BIND"):
        if env.get(key):
            config[key] = env[key]
    if env.get("TTT_ASYNC_MODE"):
        config["TTT_ASYNC_MODE"] = env["TTT_ASYNC_MODE"]
    for key in ("TTT_RATE_LIMIT", "TTT_CLAIM_AFTER", "TTT_CREATE_RATE", "TTT_BOT_MOVE_SECONDS"):
        if env.get(key):
            config[key] = float(env[key])
    for key in ("TTT_MAX_LIVE_PER_PLAYER", "TTT_MAX_LIVE_PER_ADDRESS", "TTT_MAX_LIVE_GAMES",
                "TTT_BOT_MAX_GAMES", "TTT_AI_WORKERS", "TTT_AI_QUEUE_MAX",
                "TTT_MAX_CONNECTIONS", "TTT_MAX_CONNECTIONS_PER_ADDRESS",
                "TTT_MAX_OPEN_CONNECTIONS"):
        if env.get(key):
            config[key] = int(env[key])
    if env.get("TTT_TRUSTED_PROXIES"):
        config["TTT_TRUSTED_PROXIES"] = env["TTT_TRUSTED_PROXIES"]
    if env.get("TTT_SECRET_KEY"):
        config["SECRET_KEY"] = env["TTT_SECRET_KEY"]
    if env.get("TTT_COOKIE_SECURE"):
        config["SESSION_COOKIE_SECURE"] = env["TTT_COOKIE_SECURE"].lower() in ("1", "true", "yes")
    return config


def _secret_key(instance: Path) -> str:
    """The key kept in instance/secret_key, made once with owner-only permissions."""
    path = instance / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    instance.mkdir(parents=True, exist_ok=True)
    key = secrets.token_hex(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


class TextPacket(socketio_packet.Packet):
    """A Socket.IO packet that is never binary: the server sends only JSON, so the walk over
    every payload looking for bytes (python-socketio's default) is skipped."""

    uses_binary_events = False

    def decode(self, encoded_packet: Any) -> int:
        """Decode a client's packet; refuse an event whose name is not a string.

        A packet like `42[["move"],{}]` makes python-socketio hash a list as the event name
        and die with a traceback; raised here, it is one log line (`_NoClientTracebacks`).
        """
        attachments = super().decode(encoded_packet)
        if self.packet_type in (socketio_packet.EVENT, socketio_packet.BINARY_EVENT) and not (
                isinstance(self.data, list) and self.data and isinstance(self.data[0], str)):
            raise ValueError("an event with no name")
        return attachments


class _NoClientTracebacks(logging.Filter):
    """A malformed packet from a client is the client's fault: one line, never a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and str(record.msg).endswith("handler error"):
            error = record.exc_info[1]
            record.msg = "refused a malformed packet: %s: %.200s"
            record.args = (type(error).__name__, error)
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


def _quiet_client_errors() -> None:
    for name in ("engineio.server", "socketio.server"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _NoClientTracebacks) for f in logger.filters):
            logger.addFilter(_NoClientTracebacks())


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Build the app: defaults, then the environment, then `config` (tests)."""
    app = Flask(__name__, instance_path=str(ROOT / "instance"),
                template_folder=str(ROOT / "templates"), static_folder=str(ROOT / "static"))
    app.config.from_mapping(
        TTT_STORE=None,
        TTT_MESSAGE_QUEUE=None,
        TTT_PUBLIC_URL=None,               # e.g. https://ttt.example: the share links' origin
        TTT_RATE_LIMIT=20.0,
        TTT_ASYNC_MODE="threading",        # or "gevent" under gunicorn -k gevent
        TTT_MAX_MESSAGE_BYTES=4096,
        TTT_MAX_LIVE_PER_PLAYER=50,
        TTT_MAX_LIVE_GAMES=100_000,
        TTT_MAX_LIVE_PER_ADDRESS=500,
        TTT_MAX_CONNECTIONS=8,             # per player, all processes: a few tabs, not 40
        TTT_MAX_CONNECTIONS_PER_ADDRESS=200,  # all processes: a school behind one NAT fits
        TTT_MAX_OPEN_CONNECTIONS=None,     # in flight in this process (see OPEN_CONNECTIONS)
        TTT_CREATE_RATE=30.0,              # new games a minute per player and per address
        TTT_CLAIM_AFTER=60.0,              # seconds away before the opponent may claim
        TTT_TRUSTED_PROXIES="",            # addresses whose X-Forwarded-For is believed
        TTT_UNTOUCHED_TTL=6 * 3600,        # a game nobody moved in or joined
        TTT_TICK=0.25,                     # how often timed games are checked
        TTT_FINISHED_TTL=7 * 24 * 3600,    # finished games stay replayable for a week
        TTT_IDLE_TTL=30 * 24 * 3600,       # a game nobody touched for 30 days is abandoned
        TTT_PURGE_EVERY=600,
        TTT_AI_WORKERS=None,               # search processes: None, the cores but one; 0 inline
        TTT_AI_QUEUE=None,                 # redis://...: searches go to `python -m ttt worker`s
        TTT_AI_QUEUE_MAX=None,             # queued evaluations before `busy` (4 per worker)
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=False,
        PERMANENT_SESSION_LIFETIME=400 * 24 * 3600,
    )
    app.config.update(_env_config())
    app.config.update(config or {})
    if app.config["SESSION_COOKIE_SECURE"] and app.config["SESSION_COOKIE_NAME"] == "session":
        # Over HTTPS the __Host- prefix keeps a sibling site from planting its own cookie.
        app.config["SESSION_COOKIE_NAME"] = "__Host-ttt"
    if app.config["TTT_ASYNC_MODE"] not in ("threading", "gevent"):
        raise ValueError("TTT_ASYNC_MODE must be 'threading' or 'gevent'")
    if not app.config["TTT_MAX_OPEN_CONNECTIONS"]:
        app.config["TTT_MAX_OPEN_CONNECTIONS"] = OPEN_CONNECTIONS[app.config["TTT_ASYNC_MODE"]]
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(Path(app.instance_path))
    if not app.config["TTT_STORE"]:
        Path(app.instance_path).mkdir(parents=True, exist_ok=True)
        app.config["TTT_STORE"] = f"sqlite:///{Path(app.instance_path) / 'ttt.sqlite3'}"

    if not app.testing:
        logs.configure()  # the one place a served process sets up its logging
    app.extensions["ttt_metrics"] = metrics = Metrics()
    app.extensions["ttt_store"] = open_store(app.config["TTT_STORE"],
                                             finished_ttl=app.config["TTT_FINISHED_TTL"],
                                             idle_ttl=app.config["TTT_IDLE_TTL"],
                                             untouched_ttl=app.config["TTT_UNTOUCHED_TTL"])
    # Counts games started and finished here, and store calls that failed (ttt.web.metrics).
    app.extensions["ttt_store"] = MeteredStore(app.extensions["ttt_store"], metrics)
    shared = app.config["TTT_MESSAGE_QUEUE"] or (
        app.config["TTT_STORE"] if app.config["TTT_STORE"].startswith("redis") else None)
    presence = Presence(RedisSeats(shared) if shared else MemorySeats(),
                        max_connections=app.config["TTT_MAX_CONNECTIONS"],
                        per_address=app.config["TTT_MAX_CONNECTIONS_PER_ADDRESS"],
                        limiter=open_limiter(shared))
    app.extensions["ttt_presence"] = presence
    trusted = app.config["TTT_TRUSTED_PROXIES"]
    if isinstance(trusted, str):
        app.config["TTT_TRUSTED_PROXIES"] = frozenset(a.strip() for a in trusted.split(",")
                                                      if a.strip())
    from ttt.web import api

    app.extensions["ttt_table"] = Table(api.referee(app, app.extensions["ttt_store"]),
                                        presence, limits=Limits(
        claim_after=float(app.config["TTT_CLAIM_AFTER"]),
        live_per_player=app.config["TTT_MAX_LIVE_PER_PLAYER"],
        live_per_address=app.config["TTT_MAX_LIVE_PER_ADDRESS"],
        live_total=app.config["TTT_MAX_LIVE_GAMES"],
        # TTT_RATE_LIMIT=0 is for benchmarks and trusted bots: no limit on creations either.
        creations_per_minute=(float(app.config["TTT_CREATE_RATE"])
                              if app.config["TTT_RATE_LIMIT"] > 0 else 0.0),
        renames_per_minute=10.0 if app.config["TTT_RATE_LIMIT"] > 0 else 0.0),
        salt=hashlib.sha256(str(app.config["SECRET_KEY"]).encode()).digest(),
        thinker=workers.build(app.config))
    app.extensions["ttt_table"].searched = observe_search
    watch_queue(app.extensions["ttt_table"].thinker)

    from ttt.web import drain, events, pages, transport

    app.register_blueprint(pages.bp)
    socketio = SocketIO(
        app,
        # Explicit, never auto-detected: eventlet must not be picked up by accident.
        async_mode=app.config["TTT_ASYNC_MODE"],
        message_queue=app.config["TTT_MESSAGE_QUEUE"],
        max_http_buffer_size=app.config["TTT_MAX_MESSAGE_BYTES"],
        ping_interval=10,
        ping_timeout=10,
        serializer=TextPacket,
        # One connection's events are handled in order on the thread (or greenlet) that reads
        # its websocket, not on a new thread each: that spawn was a tenth of a move's server
        # CPU. A slow handler (the ultimate AI thinking) delays only its own connection;
        # other players' games are guarded by the store's compare-and-set as before.
        async_handlers=False,
        # cors_allowed_origins left at its default: same origin only.
    )
    events.register(socketio, app.extensions["ttt_table"], app.config,
                    watch=drain.install(app, socketio).watch)
    transport.install(app, socketio)  # refuses to start unguarded (engine_hooks.HookMissing)
    api.install(app, socketio, app.extensions["ttt_table"])
    # Outermost: a flood is refused before the guard or Engine.IO does any work for it.
    table = app.extensions["ttt_table"]
    app.wsgi_app = app.extensions["ttt_admission"] = Admission(  # type: ignore[method-assign]
        app.wsgi_app, trusted=app.config["TTT_TRUSTED_PROXIES"],
        per_address=app.config["TTT_MAX_CONNECTIONS_PER_ADDRESS"],
        max_open=app.config["TTT_MAX_OPEN_CONNECTIONS"],
        held=presence.connections_of, origin=table.origin)
    _quiet_client_errors()
    app.extensions["ttt_socketio"] = socketio
    if not app.testing:
        _start_housekeeping(app, socketio)
    return app


def _start_housekeeping(app: Flask, socketio: SocketIO) -> None:
    """Background loops: end timed games whose clock ran out; renew seat leases and purge."""
    import time

    from ttt.web.events import emit_all

    log = logging.getLogger("ttt.housekeeping")
    presence, store = app.extensions["ttt_presence"], app.extensions["ttt_store"]
    table: Table = app.extensions["ttt_table"]
    config = app.config

    try:  # before any event is served: clocks get back the time the server was down
        table.resume_clocks()
    except Exception as error:  # the store is out of reach: the clock loop tries again
        log.warning("clocks not resumed yet: %s", error)

    def clocks() -> None:
        # Every process ticks (and stamps the store as up); the store's compare-and-set lets
        # exactly one end a game.
        while True:
            socketio.sleep(config["TTT_TICK"])
            try:
                emit_all(socketio, table.tick())
            except Exception as error:  # a store outage must not end the loop
                log.warning("timed games not checked: %s", error)

    def loop() -> None:
        last_purge = 0.0
        while True:
            socketio.sleep(LEASE_SECONDS / 3)
            try:
                presence.renew()
                now = time.time()
                if now - last_purge >= config["TTT_PURGE_EVERY"]:
                    last_purge = now
                    gone = store.purge(now - config["TTT_FINISHED_TTL"],
                                       now - config["TTT_IDLE_TTL"],
                                       now - config["TTT_UNTOUCHED_TTL"])
                    if gone:
                        log.info("purged %d finished or abandoned games", gone)
                    if hasattr(store, "checkpoint"):  # SQLite: keep the WAL from growing
                        store.checkpoint()
            except Exception as error:  # a store outage must not end the loop
                log.warning("housekeeping failed: %s", error)

    def resume() -> None:
        try:  # the AI moves a stopped process left waiting: asked again, pushed when found
            if (asked := table.resume()):
                log.info("asked again for %d AI moves left waiting", asked)
        except Exception as error:  # a store outage: a join still plays a stuck turn
            log.warning("waiting AI moves not resumed: %s", error)

    socketio.start_background_task(clocks)
    socketio.start_background_task(loop)
    socketio.start_background_task(resume)


def get_store() -> Store:
    """The store of the current app."""
    return current_app.extensions["ttt_store"]


def get_socketio(app: Flask | None = None) -> SocketIO:
    """The SocketIO object of an app."""
    return (app or current_app).extensions["ttt_socketio"]


def get_table(app: Flask | None = None) -> Table:
    """The master of an app."""
    return (app or current_app).extensions["ttt_table"]
