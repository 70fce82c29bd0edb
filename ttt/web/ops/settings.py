"""The app's settings: the defaults, then the environment, then what the caller gives."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from flask import Flask

#: Engine.IO requests (each websocket is one) a process keeps in flight by default: what one
#: process holds with an honest player's p99 still low (bench.flood; docs/benchmarks.md,
#: "Floods"). A threaded websocket costs about four threads, so the threaded server stops at fewer.
OPEN_CONNECTIONS = {"threading": 500, "gevent": 2000}

#: Descriptors a process keeps for itself, whatever its clients: the listener, the store's
#: and the message queue's connections, SQLite's files, the AI workers' pipes, the logs.
RESERVED_DESCRIPTORS = 64
#: Of the descriptors left past the reserve, the share Socket.IO connections may take: the
#: rest stays free for plain requests (/healthz, /readyz, pages) while a flood is refused.
SOCKET_SHARE = 0.75


def descriptor_limit() -> int:
    """This process's soft RLIMIT_NOFILE (a large number when unlimited)."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 1 << 20 if soft == resource.RLIM_INFINITY else int(soft)


def open_connection_cap(nofile: int, mode: str) -> int:
    """Socket.IO requests in flight a process takes with `nofile` descriptors: what it holds
    well (OPEN_CONNECTIONS), or fewer when the descriptors would run out first. Each request
    in flight holds one descriptor (its socket; behind nginx, nginx holds the other end)."""
    return max(1, min(OPEN_CONNECTIONS[mode],
                      int((nofile - RESERVED_DESCRIPTORS) * SOCKET_SHARE)))


def connection_cap(nofile: int) -> int:
    """Connections of every kind the threaded server holds open (and gunicorn's
    worker_connections at most): the descriptors past the reserve."""
    return max(1, nofile - RESERVED_DESCRIPTORS)


#: The shortest operator token taken: "CHANGE-ME" left in the env template is refused.
MIN_OPERATOR_TOKEN = 16


#: Every setting and its default; the environment (TTT_...) and the caller override them.
DEFAULTS: dict[str, Any] = dict(
    TTT_STORE=None,
    TTT_MESSAGE_QUEUE=None,
    TTT_QUEUE_BY_ROOM=True,            # a push goes only to the processes holding its room
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
    TTT_EVENTS_PER_ADDRESS=100.0,      # events a second per address prefix (transport.budgets)
    TTT_PAGES_PER_ADDRESS=20.0,        # rendered pages a second per address prefix
    TTT_UNJOINED_PER_PLAYER=10,        # friend links waiting for a friend, per person
    TTT_UNJOINED_PER_ADDRESS=60,       # such links made per half hour from one address
    TTT_CLAIM_AFTER=60.0,              # seconds away before the opponent may claim
    TTT_BLIP=5.0,                      # a seat gone for less is not announced (PROTOCOL v5)
    TTT_TRUSTED_PROXIES="",            # addresses whose X-Forwarded-For is believed
    TTT_UNTOUCHED_TTL=1800,            # a game nobody moved in or joined (a link unshared)
    TTT_TICK=0.25,                     # how often timed games are checked
    TTT_FINISHED_TTL=7 * 24 * 3600,    # finished games stay replayable for a week
    TTT_IDLE_TTL=30 * 24 * 3600,       # a game nobody touched for 30 days is abandoned
    TTT_PURGE_EVERY=600,
    TTT_AI_LEFT_AFTER=24 * 3600,       # an AI game untouched this long is left (PROTOCOL v4)
    TTT_AI_WORKERS=None,               # search processes: None, the cores but one; 0 inline
    TTT_AI_QUEUE=None,                 # redis://...: searches go to `python -m ttt worker`s
    TTT_AI_QUEUE_MAX=None,             # queued evaluations before `busy` (4 per worker)
    TTT_BOT_CREATE_RATE=10.0,          # bots made on the site an hour, per person and address
    TTT_BOT_MAX_PER_PERSON=5,          # live (unrevoked) bots a person may have made there
    TTT_OPERATOR_TOKEN=None,           # bearer token of the operator's endpoints (ladder)
    SESSION_COOKIE_HTTPONLY=True,
    SESSION_COOKIE_SAMESITE="Lax",
    SESSION_COOKIE_SECURE=False,
    PERMANENT_SESSION_LIFETIME=400 * 24 * 3600,
    # The cookie only in answers that change it (ttt.web.http.pages.ensure_player).
    SESSION_REFRESH_EACH_REQUEST=False,
)


def init_app(app: Flask, config: dict[str, Any] | None = None) -> None:
    """Settle the app's config: defaults, the environment, then `config` (tests)."""
    app.config.from_mapping(DEFAULTS)
    app.config.update(_env_config())
    app.config.update(config or {})
    if app.config["SESSION_COOKIE_SECURE"] and app.config["SESSION_COOKIE_NAME"] == "session":
        # Over HTTPS the __Host- prefix keeps a sibling site from planting its own cookie.
        app.config["SESSION_COOKIE_NAME"] = "__Host-ttt"
    if app.config["TTT_ASYNC_MODE"] not in ("threading", "gevent"):
        raise ValueError("TTT_ASYNC_MODE must be 'threading' or 'gevent'")
    if not app.config["TTT_MAX_OPEN_CONNECTIONS"]:  # derived from the descriptors it has
        app.config["TTT_MAX_OPEN_CONNECTIONS"] = open_connection_cap(
            descriptor_limit(), app.config["TTT_ASYNC_MODE"])
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _secret_key(Path(app.instance_path))
    if not app.config["TTT_STORE"]:
        Path(app.instance_path).mkdir(parents=True, exist_ok=True)
        app.config["TTT_STORE"] = f"sqlite:///{Path(app.instance_path) / 'ttt.sqlite3'}"

    operator = app.config["TTT_OPERATOR_TOKEN"]
    if operator and len(operator) < MIN_OPERATOR_TOKEN:  # a placeholder left in, or a guess
        raise ValueError(f"TTT_OPERATOR_TOKEN must have at least {MIN_OPERATOR_TOKEN} "
                         "characters (python3 -c 'import secrets; print(secrets.token_hex(32))')")

    trusted = app.config["TTT_TRUSTED_PROXIES"]
    if isinstance(trusted, str):
        app.config["TTT_TRUSTED_PROXIES"] = frozenset(a.strip() for a in trusted.split(",")
                                                      if a.strip())


def _env_config() -> dict[str, Any]:
    env = os.environ
    config: dict[str, Any] = {}
    for key in ("TTT_STORE", "TTT_MESSAGE_QUEUE", "TTT_PUBLIC_URL", "TTT_AI_QUEUE",
                "TTT_METRICS_TOKEN", "TTT_METRICS_BIND", "TTT_OPERATOR_TOKEN"):
        if env.get(key):
            config[key] = env[key]
    if env.get("TTT_ASYNC_MODE"):
        config["TTT_ASYNC_MODE"] = env["TTT_ASYNC_MODE"]
    for key in ("TTT_RATE_LIMIT", "TTT_CLAIM_AFTER", "TTT_BLIP", "TTT_CREATE_RATE",
                "TTT_BOT_MOVE_SECONDS", "TTT_BOT_CREATE_RATE", "TTT_AI_LEFT_AFTER",
                "TTT_EVENTS_PER_ADDRESS", "TTT_PAGES_PER_ADDRESS", "TTT_BOT_PERSON_SECONDS"):
        if env.get(key):
            config[key] = float(env[key])
    for key in ("TTT_MAX_LIVE_PER_PLAYER", "TTT_MAX_LIVE_PER_ADDRESS", "TTT_MAX_LIVE_GAMES",
                "TTT_BOT_MAX_GAMES", "TTT_BOT_MAX_PER_PERSON", "TTT_AI_WORKERS", "TTT_AI_QUEUE_MAX",
                "TTT_MAX_CONNECTIONS", "TTT_MAX_CONNECTIONS_PER_ADDRESS",
                "TTT_MAX_OPEN_CONNECTIONS", "TTT_UNJOINED_PER_PLAYER", "TTT_UNJOINED_PER_ADDRESS"):
        if env.get(key):
            config[key] = int(env[key])
    if env.get("TTT_TRUSTED_PROXIES"):
        config["TTT_TRUSTED_PROXIES"] = env["TTT_TRUSTED_PROXIES"]
    if env.get("TTT_SECRET_KEY"):
        config["SECRET_KEY"] = env["TTT_SECRET_KEY"]
    if env.get("TTT_QUEUE_BY_ROOM"):
        config["TTT_QUEUE_BY_ROOM"] = env["TTT_QUEUE_BY_ROOM"].lower() in ("1", "true", "yes")
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
