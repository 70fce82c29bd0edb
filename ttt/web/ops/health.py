"""Health per part: the store and the message queue, each checked on its own.

`/healthz` answers 503 naming the part that is down; `/readyz` may call `parts`
too; `ttt_part_up{part}` reads the same checks at each scrape.

- store: the store's `ping` (SQLite also tries a write after a write failed: a full or
  read-only disk reads fine and writes nothing).
- queue: with a Redis message queue, its Redis answers a PING and this process's listener is
  subscribed (not cut and retrying). Without a queue, there is no such part.
- ai: with remote AI workers (TTT_AI_QUEUE), at least one listens on the queue (else, the
  last one gone, /healthz stays green while every AI game waits). Not a reason for /readyz to
  refuse: classic games are served meanwhile. Local workers are started again on demand.

The store's own identity is checked on every probe: a wiped Redis or a replaced or
deleted SQLite file is the store down, and `lost` says why (ttt_store_lost).
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask

from ttt.runtime import loglines
from ttt.web.transport import engine_hooks

log = logging.getLogger("ttt.health")

PARTS = ("store", "queue", "ai")


def parts(app: Flask) -> dict[str, bool]:
    """Each part this process depends on, up (True) or down."""
    found = {"store": _store_up(app)}
    queue = _queue_up(app)
    if queue is not None:
        found["queue"] = queue
    ai = _ai_up(app)
    if ai is not None:
        found["ai"] = ai
    return found


def lost(app: Flask) -> bool:
    """Whether the store's last probe found another store (its data gone), not an outage."""
    return bool(getattr(app.extensions["ttt_store"], "lost", False))


def _ai_up(app: Flask) -> bool | None:
    from ttt.pool import workers

    live = workers.live_workers(app.extensions["ttt_table"].thinker)
    if live is None or "remote" not in live:
        return None
    return live["remote"] > 0


def report(app: Flask) -> tuple[dict[str, Any], int]:
    """/healthz's body and status: 503 when any part is down, naming it."""
    found = parts(app)
    down = [name for name, up in found.items() if not up]
    body: dict[str, Any] = {"ok": not down,
                            "parts": {name: "up" if up else "down" for name, up in found.items()}}
    if down:
        body["down"] = down
        body["error"] = " and ".join(down) + " unavailable"  # "store unavailable", as before
        if "store" in down and lost(app):
            body["store"] = "lost its data: wiped, replaced or deleted (docs/runbook.md)"
    return body, 503 if down else 200


def _store_up(app: Flask) -> bool:
    """The store's ping; its outage logged once, then a line a minute, then "back"."""
    fold = _folds(app)["store"]
    try:
        up = bool(app.extensions["ttt_store"].ping())
        error: Any = "its ping says down"
    except Exception as raised:  # a ping that raises is a store that is down
        up, error = False, raised
    if up:
        fold.ok()
    else:
        fold.failed(error)
    return up


def _folds(app: Flask) -> dict[str, Any]:
    folds = app.extensions.get("ttt_health_folds")
    if folds is None:
        folds = app.extensions["ttt_health_folds"] = {
            "store": loglines.Fold(log, "store down"),
            "queue": loglines.Fold(log, "message queue ping failed")}
    return folds


_clients: dict[str, Any] = {}


def _queue_up(app: Flask) -> bool | None:
    url = app.config.get("TTT_MESSAGE_QUEUE")
    if not url:
        return None
    watch = engine_hooks.queue_watch(app.extensions["ttt_socketio"].server)
    if watch is not None and not watch.up:
        return False  # the listener is cut: pushes from other processes are lost meanwhile
    if not url.startswith(("redis", "unix")):
        return True  # a queue of another kind: not checked here
    try:
        client = _clients.get(url)
        if client is None:
            import redis

            client = _clients[url] = redis.Redis.from_url(
                url, socket_timeout=1, socket_connect_timeout=1)
        up = bool(client.ping())
    except Exception as error:
        _folds(app)["queue"].failed(error)
        return False
    _folds(app)["queue"].ok()
    return up
