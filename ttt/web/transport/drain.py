"""Graceful restarts: finish the events in flight, send every client elsewhere, then exit.

On SIGTERM the server stops accepting connections (gunicorn closes its listener; `python
app.py` closes Werkzeug's), then `Drain.run` closes each Engine.IO session as soon as no
event of it is in flight. Closing the transport, not the Socket.IO namespace, is what makes
clients reconnect by themselves: through nginx they land on another process (or on this one
once restarted) and `join`, as they do after any reconnect. An event arriving on a session
already being closed is refused unplayed ("unavailable"): its answer could not reach the
client, which finds the game as it was after its reconnect and plays again. So no move is
answered twice or lost, and a timed game's clock runs on only for as long as the reconnect.

`watch` wraps each event handler: it counts the event in flight, and gives the metrics and
the log line (ttt.web.ops.logs.access) of each event.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from ttt.master.payloads import valid_id
from ttt.master.replies import refusal
from ttt.runtime import jsonlog
from ttt.web.ops import logs
from ttt.web.ops.metrics import Metrics
from ttt.web.transport import engine_hooks

log = logging.getLogger("ttt.drain")


class Drain:
    """The events in flight per connection, and closing every connection once it is idle."""

    def __init__(self, socketio: Any, metrics: Metrics) -> None:
        self.socketio, self.metrics = socketio, metrics
        self.busy: set[str] = set()       # sids with an event in flight
        self.closing: set[str] = set()    # sids being closed: their events are refused
        self.draining = False
        self.serving = False              # set once the process serves (housekeeping runs)
        self.stopping = False             # set by the SIGTERM handler, before the drain runs
        # The connection of a sid (presence's), for the player's hash in the event's line.
        self.who: Callable[[str], Any] = lambda sid: None

    @property
    def state(self) -> str:
        """For /readyz: "starting", "serving" or "draining"."""
        if self.draining or self.stopping:
            return "draining"
        return "serving" if self.serving else "starting"

    def watch(self, name: str, handler: Callable[..., dict]) -> Callable[..., dict]:
        """The handler, counted in flight, measured and logged.

        No lock on this path (every event takes it): a connection's events run one after another
        (`async_handlers=False`), so `busy` is a set, and the event and the drain each mark
        first and look second (the event: busy, then closing; the drain: closing, then busy).
        Whichever looks last sees the other's mark: an event never runs on a connection the
        drain closes. (When both look last, the event is refused and the drain waits a turn.)
        """
        latency = self.metrics.latency.labels(name)
        counted: dict[str, Any] = {}  # result -> its counter child, found once
        busy, closing, who = self.busy, self.closing, self.who
        environ = self.socketio.server.get_environ

        def watched(sid: str, payload: Any = None, *rest: Any) -> dict:
            started = time.perf_counter()
            busy.add(sid)
            try:
                answer = (handler(sid, payload, *rest) if sid not in closing
                          else refusal("unavailable", "the server is restarting; reconnect"))
            finally:
                busy.discard(sid)
            seconds = time.perf_counter() - started
            result = "ok" if answer.get("ok") is not False else _result(answer)
            counter = counted.get(result)
            if counter is None:
                counter = counted[result] = self.metrics.events.labels(name, result)
            counter.inc()
            latency.observe(seconds)
            game = answer.get("game")  # the answer's game: an id the server made
            # The front's id of the request that opened this connection (its handshake, or
            # the websocket's upgrade), or of the HTTP call (a bot's): the key to nginx's line.
            front = logs.connection_request(environ(sid)) or jsonlog.REQUEST_ID.get()
            logs.access(name, game["id"] if type(game) is dict and "id" in game
                        else _game_id(payload, answer), result, seconds, sid, payload, answer,
                        who(sid), **({"request": front} if front else {}))
            return answer

        return watched

    def run(self, timeout: float = 20.0, linger: bool = False) -> int:
        """Close every session here, each once idle (or all at the timeout); how many.

        `linger`: go on closing sessions that open later, until the timeout (gunicorn stops
        accepting up to a second after the signal, and exits by itself once idle).
        """
        self.draining = True
        self.metrics.draining.set(1)
        server = self.socketio.server
        deadline = time.monotonic() + timeout
        closed, told = 0, -1
        log.info("draining: closing every connection so that its client reconnects")
        while True:
            sessions = engine_hooks.sessions(server)
            late = time.monotonic() > deadline
            named = engine_hooks.connections_by_session(server)
            waiting = forced = 0
            for eio_sid in sessions:
                sid = named.get(eio_sid)
                if sid is not None:
                    self.closing.add(sid)  # marked first, then looked: see `watch`
                    if sid in self.busy:
                        if not late:
                            self.closing.discard(sid)
                            waiting += 1
                            continue  # an event in flight: close it once answered
                        forced += 1
                closed += engine_hooks.drop(server, eio_sid)
            if not waiting and told != closed:
                log.info("drained: %d connections closed", closed)
                told = closed
            if forced:
                log.warning("drain timed out: %d connections closed with events in flight",
                            forced)
            if late or (not waiting and not linger):
                break
            self.socketio.sleep(0.05)
        return closed


def _result(answer: Any) -> str:
    if isinstance(answer, dict) and answer.get("ok") is False:
        error = answer.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        return code if isinstance(code, str) else "refused"
    return "ok"


def _game_id(payload: Any, answer: Any) -> str | None:
    """The game an event was about: its answer's, else the payload's if it is a game id."""
    game = answer.get("game") if isinstance(answer, dict) else None
    if isinstance(game, dict) and valid_id(game.get("id")):
        return game["id"]
    given = payload.get("game") if isinstance(payload, dict) else None
    return given if valid_id(given) else None  # never a client's raw bytes in the log


def on_gunicorn_worker(worker: Any, timeout: float) -> None:
    """In a gunicorn gevent worker: on SIGTERM, drain while gunicorn stops accepting."""
    import signal

    import gevent

    app = worker.wsgi
    drain: Drain = app.extensions["ttt_drain"]

    def on_term(signum: int, frame: Any) -> None:
        worker.alive = False  # gunicorn's own handler: close the listener, wait for requests
        drain.stopping = True  # /readyz says "draining" from now on
        if not drain.draining:
            gevent.spawn(drain.run, timeout, True)

    signal.signal(signal.SIGTERM, on_term)


def _live_by_kind(app: Any) -> dict[tuple[str, str], int]:
    """The store's live games per kind, asked of the store itself, not of its MeteredStore:
    the metrics count a failed read once, not twice."""
    store = app.extensions["ttt_store"]
    return getattr(store, "wrapped", store).count_live_by_kind()


def install(app: Any, socketio: Any) -> Drain:
    """Metrics, /metrics, the drain and the log set-up of one app; the drain."""
    from ttt.web.ops.metrics import serve

    metrics: Metrics = app.extensions["ttt_metrics"]
    metrics.watch_live(functools.partial(engine_hooks.connection_counts, socketio.server),
                       functools.partial(_live_by_kind, app))
    serve(app, metrics)
    drain = app.extensions["ttt_drain"] = Drain(socketio, metrics)
    drain.who = app.extensions["ttt_presence"].connection
    jsonlog.key_players(app.config["SECRET_KEY"])
    return drain
