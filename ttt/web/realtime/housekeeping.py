"""The server's own rounds, started explicitly by whoever serves the app (app.py, wsgi.py):
timed games' clocks, seat leases, purges, waiting AI turns, the metrics' own address.

Building an app starts none of them (flaskr's shape): a test's app, or a command that only
reads the store, runs no thread behind anyone's back.
"""

from __future__ import annotations

import logging
import time

from flask import Flask

from ttt.game.match import Match, ending
from ttt.master.presence import LEASE_SECONDS
from ttt.master.replies import Push
from ttt.master.table import Table
from ttt.rules.classic import Termination
from ttt.runtime import loglines
from ttt.web.extensions import get_publisher
from ttt.web.ops.metrics import serve_apart

log = logging.getLogger("ttt.housekeeping")

UNPLAYED_SECONDS = 3600.0  # a joined friend game with no move is called off after this


def end_unplayed(table: Table, now: float, after: float = UNPLAYED_SECONDS) -> list[Push]:
    """Call off the friend games both friends joined but nobody moved in for `after` seconds
    (a friend game nobody joined is purged sooner, by TTT_UNTOUCHED_TTL): live games nobody
    plays do not count against the caps for long. The pushes of the games ended."""
    pushes: list[Push] = []
    for game_id in table.store.live_ids():
        match = table.store.get(game_id)
        if match is None or not _unplayed(match, now, after):
            continue

        def call_off(current: Match) -> Match:
            if not _unplayed(current, now, after):  # a move got in first
                return current
            return current.changed(now, finish=ending(Termination.ABANDONED), deadline=None)

        changed = table.services.write(game_id, call_off)
        if changed and changed[1].rev != changed[0].rev:
            pushes += table.game_pushes(changed[1])
    return pushes


def _unplayed(match: Match, now: float, after: float) -> bool:
    return (match.mode == "friend" and not match.is_over and len(match.moves) <= match.start
            and match.updated < now - after)


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
    fold = loglines.Fold(log, "timed games not checked")  # every tick of an outage: folded
    while True:
        socketio.sleep(app.config["TTT_TICK"])
        try:
            get_publisher(app).publish(table.tick())
        except Exception as error:  # a store outage must not end the loop
            fold.failed(error)
        else:
            fold.ok()


def _leases_and_purges(app: Flask) -> None:
    """Renew this process's seat leases; now and then purge finished and abandoned games."""
    socketio, config = app.extensions["ttt_socketio"], app.config
    presence, store = app.extensions["ttt_presence"], app.extensions["ttt_store"]
    last_purge = 0.0
    fold = loglines.Fold(log, "housekeeping failed")
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
                    get_publisher(app).publish(left)
                    log.info("ended the AI games left untouched for TTT_AI_LEFT_AFTER")
                gone = store.purge(now - config["TTT_FINISHED_TTL"],
                                   now - config["TTT_IDLE_TTL"],
                                   now - config["TTT_UNTOUCHED_TTL"])
                if gone:
                    log.info("purged %d finished or abandoned games", gone)
                ended = end_unplayed(app.extensions["ttt_table"], now,
                                     config.get("TTT_UNPLAYED_TTL", UNPLAYED_SECONDS))
                if ended:
                    get_publisher(app).publish(ended)
                if hasattr(store, "checkpoint"):  # SQLite: keep the WAL from growing
                    store.checkpoint()
        except Exception as error:  # a store outage must not end the loop
            fold.failed(error)
        else:
            fold.ok()


def _waiting_ai_turns(app: Flask) -> None:
    """Ask again for the AI moves a stopped process left waiting; pushed when found."""
    try:
        if (asked := app.extensions["ttt_table"].resume()):
            log.info("asked again for %d AI moves left waiting", asked)
    except Exception as error:  # a store outage: a join still plays a stuck turn
        log.warning("waiting AI moves not resumed: %s", error)
