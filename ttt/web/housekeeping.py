"""The server's own rounds, started explicitly by whoever serves the app (app.py, wsgi.py):
timed games' clocks, seat leases, purges, waiting AI turns, the metrics' own address.

Building an app starts none of them (flaskr's shape): a test's app, or a command that only
reads the store, runs no thread behind anyone's back.
"""

from __future__ import annotations

import logging
import time

from flask import Flask

from ttt.table import Table
from ttt.web.events import emit_all
from ttt.web.metrics import serve_apart
from ttt.web.presence import LEASE_SECONDS

log = logging.getLogger("ttt.housekeeping")


def start(app: Flask) -> None:
    """Start the background loops of a served app."""
    socketio = app.extensions["ttt_socketio"]
    table: Table = app.extensions["ttt_table"]
    serve_apart(app)
    try:  # before any event is served: clocks get back the time the server was down
        table.resume_clocks()
    except Exception as error:  # the store is out of reach: the clock loop tries again
        log.warning("clocks not resumed yet: %s", error)
    socketio.start_background_task(_clocks, app)
    socketio.start_background_task(_leases_and_purges, app)
    socketio.start_background_task(_waiting_ai_turns, app)


def _clocks(app: Flask) -> None:
    """End timed games whose clock ran out. Every process ticks (and stamps the store as up);
    the store's compare-and-set lets exactly one end a game."""
    socketio, table = app.extensions["ttt_socketio"], app.extensions["ttt_table"]
    while True:
        socketio.sleep(app.config["TTT_TICK"])
        try:
            emit_all(socketio, table.tick())
        except Exception as error:  # a store outage must not end the loop
            log.warning("timed games not checked: %s", error)


def _leases_and_purges(app: Flask) -> None:
    """Renew this process's seat leases; now and then purge finished and abandoned games."""
    socketio, config = app.extensions["ttt_socketio"], app.config
    presence, store = app.extensions["ttt_presence"], app.extensions["ttt_store"]
    last_purge = 0.0
    while True:
        socketio.sleep(LEASE_SECONDS / 3)
        try:
            presence.renew()
            now = time.time()
            if now - last_purge >= config["TTT_PURGE_EVERY"]:
                last_purge = now
                # A closed tab does not escape the leaving rule: an AI game left untouched
                # ends by it (a loss from the person's second move), before any purge.
                table: Table = app.extensions["ttt_table"]
                if left := table.leave_idle(now - config["TTT_AI_LEFT_AFTER"]):
                    emit_all(socketio, left)
                    log.info("ended the AI games left untouched for TTT_AI_LEFT_AFTER")
                gone = store.purge(now - config["TTT_FINISHED_TTL"],
                                   now - config["TTT_IDLE_TTL"],
                                   now - config["TTT_UNTOUCHED_TTL"])
                if gone:
                    log.info("purged %d finished or abandoned games", gone)
                if hasattr(store, "checkpoint"):  # SQLite: keep the WAL from growing
                    store.checkpoint()
        except Exception as error:  # a store outage must not end the loop
            log.warning("housekeeping failed: %s", error)


def _waiting_ai_turns(app: Flask) -> None:
    """Ask again for the AI moves a stopped process left waiting; pushed when found."""
    try:
        if (asked := app.extensions["ttt_table"].resume()):
            log.info("asked again for %d AI moves left waiting", asked)
    except Exception as error:  # a store outage: a join still plays a stuck turn
        log.warning("waiting AI moves not resumed: %s", error)
