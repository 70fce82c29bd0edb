"""Prometheus figures of one process, served at /metrics to the operator only.

Each process keeps and serves its own (gunicorn runs one worker per port, so no
multiprocess mode): Prometheus scrapes every process (deploy/prometheus.yml) and sums.
`/metrics` is off by default. `TTT_METRICS_TOKEN` opens it to `Authorization: Bearer
<token>`; `TTT_METRICS_BIND` (`host:port`) serves it on a separate address instead, which
the public front never reaches. A stranger gets 404 (off, or on its own address) or 401.

The AI worker pool reports through `observe_search(seconds)` and `observe_wait(seconds)`; its
queue is read at each scrape. Refused connections (`refused_connection(reason)`) and unhandled
errors (`unhandled(where)`) are counted process-wide, wherever they happen.

Cost on the hot path: a store call is timed into `ttt_store_seconds{operation}`,
one perf_counter pair and one observation into a child looked up once per operation name
(about a microsecond a call; `python -m bench.metrics_cost` measures it). The event and store
histograms are `Timings` (ttt.web.ops.collectors): an observation is one deque append, folded
into the buckets in batches and at each scrape.
"""

from __future__ import annotations

import hmac
import logging
import math
from collections.abc import Callable, Iterator
from typing import Any

from flask import Flask, Response, abort, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ttt.pool.metrics import AI_CROWD
from ttt.runtime import fingerprint
from ttt.web.ops.collectors import Collected, Labelled, Live, Timings

log = logging.getLogger("ttt.metrics")

# No `<name>_created` sample beside each counter and histogram child: nothing reads them
# (rate() and increase() need no start time) and they were a third of a scrape's lines; the
# counters at zero from start-up would double them.
disable_created_metrics()

# Event latency in seconds: a move on loopback takes about a millisecond; an Ultimate AI
# reply or a store under load, up to seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# Process-wide, outside any app: the AI (or its worker pool) reports here whatever app it serves.
AI_SEARCH = Histogram("ttt_ai_search_seconds", "Time the AI spent choosing one move.",
                      buckets=LATENCY_BUCKETS, registry=None)
AI_QUEUE = Gauge("ttt_ai_queue_depth", "AI searches waiting for a worker.", registry=None)
AI_WAIT = Histogram("ttt_ai_queue_wait_seconds", "Time an AI search waited in the queue "
                    "before a worker took it.", buckets=LATENCY_BUCKETS, registry=None)
# Store calls: a cached read takes microseconds, a write a millisecond, a stalled store seconds.
STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                 0.5, 1.0, 2.5, 5.0)
# One name with the connection cap (the same counter, by reason).
REFUSED = Counter("ttt_connections_refused", "Connections refused before they were served, "
                  "by reason (full: the process's cap; address: one address's cap; session: "
                  "no session cookie; player: too many tabs of one player).", ["reason"],
                  registry=None)
UNHANDLED = Counter("ttt_unhandled_errors", "Exceptions no handler expected (a bug), by event "
                    "or route; the player got 'internal' or a 500.", ["where"], registry=None)
SERVER_ERRORS = Counter("ttt_http_server_errors", "HTTP answers with a 5xx status, by route "
                        "and status (the health probes' 503s apart, in "
                        "ttt_probe_failures_total).", ["route", "status"], registry=None)
# A probe's 503 says a part is down (ttt_part_up says which): not a server error.
PROBES = ("/healthz", "/readyz")
PROBE_FAILURES = Counter("ttt_probe_failures", "Health probes answered 503 (a part down, "
                         "starting or draining), by probe.", ["probe"], registry=None)
REFUSAL_REASONS = ("full", "address", "session", "player")


def observe_search(seconds: float) -> None:
    """Count one AI search that took `seconds`."""
    AI_SEARCH.observe(seconds)


def observe_wait(seconds: float) -> None:
    """Count one AI search that waited `seconds` in the queue."""
    AI_WAIT.observe(seconds)


def refused_connection(reason: str) -> None:
    """Count a connection refused for `reason` (a short fixed word, never a client's bytes)."""
    REFUSED.labels(reason).inc()


def unhandled(where: str) -> None:
    """Count an unexpected exception in an event or route."""
    UNHANDLED.labels(where).inc()


def watch_queue(thinker: Any) -> None:
    """Read the AI queue's depth from this thinker whenever the figures are scraped."""
    AI_QUEUE.set_function(thinker.waiting)
    AI_CROWD.thinker = thinker
    if hasattr(thinker, "on_wait"):
        thinker.on_wait = observe_wait


class Metrics:
    """One app's figures and the registry that serves them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        # Collected first, so a store error while reading the live games shows in this very
        # scrape's ttt_store_errors_total, not the next one's.
        self._live = Live(self)
        r.register(self._live)
        self.events = Labelled("ttt_events", "Socket.IO events handled, by name and result code "
                               "(ok or the refusal's code).", ["event", "result"], registry=r)
        self.latency = Timings("ttt_event_seconds", "Time to answer one event.", ["event"],
                                buckets=LATENCY_BUCKETS, registry=r)
        # Counted on every new game and every game's end: batched as the events are.
        self.started = Labelled("ttt_games_started", "Games this process created.",
                                ["mode", "variant"], registry=r)
        self.finished = Labelled("ttt_games_finished", "Games that ended by a change this "
                                 "process made.", ["mode", "variant"], registry=r)
        self.store_errors = Counter("ttt_store_errors", "Store calls that failed (store "
                                    "unreachable), by operation.", ["operation"], registry=r)
        self.draining = Gauge("ttt_draining", "1 while this process drains before it exits.",
                              registry=r)
        self.store_seconds = Timings("ttt_store_seconds", "Time of one store call, by "
                                      "operation (failed calls included).", ["operation"],
                                      buckets=STORE_BUCKETS, registry=r)
        self.store_timers: dict[str, Any] = {}  # operation -> its histogram child
        Info("ttt_build", "The running code: package version and git commit.",
             registry=r).info({"version": fingerprint.version(), "commit": fingerprint.commit()})
        # What an on-call engineer looks for first: memory, CPU, open files, GC, the python.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        r.register(Collected(lambda: (AI_SEARCH, AI_QUEUE, AI_WAIT, AI_CROWD, REFUSED,
                                       UNHANDLED, SERVER_ERRORS, PROBE_FAILURES)))
        self.connection_cap = Gauge("ttt_connections_max", "Socket.IO requests in flight this "
                                    "process takes before it refuses (TTT_MAX_OPEN_CONNECTIONS, "
                                    "from the descriptor limit unless set).", registry=r)
        self._parts = _Parts()
        r.register(self._parts)

    def store_timer(self, operation: str) -> Any:
        """The histogram child of one store operation (looked up once)."""
        timer = self.store_timers.get(operation)
        if timer is None:
            timer = self.store_timers[operation] = self.store_seconds.labels(operation)
        return timer

    def watch_live(self, connections: Callable[[], tuple[int, int]],
                   live: Callable[[], dict[tuple[str, str], int]]) -> None:
        """Read the live figures when scraped: (connections, players) here; live games per
        (mode, variant) in the store."""
        self._live.connections, self._live.live = connections, live

    def watch_parts(self, parts: Callable[[], dict[str, bool]],
                    lost: Callable[[], bool] | None = None) -> None:
        """Read each part's health (ttt.web.ops.health.parts) when scraped: ttt_part_up{part};
        and whether the store lost its data (ttt_store_lost)."""
        self._parts.parts, self._parts.lost = parts, lost

    def exposition(self) -> bytes:
        """The text format."""
        return generate_latest(self.registry)


class _Parts(Collector):
    """ttt_part_up{part}: 1 while that part (store, queue) answers, read at scrape time."""

    def __init__(self) -> None:
        self.parts: Callable[[], dict[str, bool]] | None = None
        self.lost: Callable[[], bool] | None = None

    def describe(self) -> Iterator[Any]:
        return iter(())

    def collect(self) -> Iterator[Any]:
        if self.parts is None:
            return
        up = GaugeMetricFamily("ttt_part_up", "1 while a part this process needs answers "
                               "(store; queue with a message queue), else 0.", labels=["part"])
        for part, ok in self.parts().items():
            up.add_metric([part], 1 if ok else 0)
        yield up
        if self.lost is not None:  # read after the parts: this very probe's finding
            yield GaugeMetricFamily("ttt_store_lost", "1 when the store's identity is gone or "
                                    "another (a wiped Redis, a replaced or deleted SQLite "
                                    "file): its data went with it.", value=1 if self.lost() else 0)


def _authorized(token: str) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                              token.encode())


def serve(app: Flask, metrics: Metrics) -> None:
    """Serve /metrics as the config says: behind a token, on its own address, or not at all."""
    token, bind = app.config.get("TTT_METRICS_TOKEN"), app.config.get("TTT_METRICS_BIND")

    @app.get("/metrics")
    def metrics_page():
        if bind or not token:
            abort(404)  # off the public site: nothing here says it exists
        if not _authorized(token):
            return Response("unauthorized\n", 401, {"WWW-Authenticate": 'Bearer realm="ttt"'},
                            mimetype="text/plain")
        return Response(metrics.exposition(), mimetype=CONTENT_TYPE_LATEST)

    from flask import got_request_exception

    def on_exception(sender: Any, exception: BaseException, **extra: Any) -> None:
        unhandled(_route())

    got_request_exception.connect(on_exception, app, weak=False)

    @app.after_request
    def count_server_errors(response: Response) -> Response:
        if response.status_code >= 500:
            route = _route()
            if route in PROBES:
                PROBE_FAILURES.labels(route).inc()
            else:
                SERVER_ERRORS.labels(route, str(response.status_code)).inc()
        return response


def count_from_zero(app: Flask, events: tuple[str, ...]) -> None:
    """Give every counter an alert reads its known label values at 0, now (a series
    born at its first count hides that count from `increase()`): errors by route and event,
    probes, refusals, store errors by operation; and the connection cap, exported."""
    from ttt.store.base import Store

    metrics: Metrics = app.extensions["ttt_metrics"]
    metrics.connection_cap.set(app.config["TTT_MAX_OPEN_CONNECTIONS"] or math.inf)
    routes = sorted({rule.rule for rule in app.url_map.iter_rules()} - set(PROBES))
    for where in ("socketio", *events, *routes):
        UNHANDLED.labels(where)
    for route in routes:
        SERVER_ERRORS.labels(route, "500")
    for probe in PROBES:
        PROBE_FAILURES.labels(probe)
    for reason in REFUSAL_REASONS:
        REFUSED.labels(reason)
    for operation in dir(Store):
        if not operation.startswith("_") and callable(getattr(Store, operation)):
            metrics.store_errors.labels(operation)


def _route() -> str:
    """The route's rule (never the client's path: its bytes would make a label each)."""
    rule = request.url_rule
    return rule.rule if rule is not None else "unmatched"


def serve_apart(app: Flask) -> None:
    """Serve /metrics on its own address when TTT_METRICS_BIND says so (a served process)."""
    bind = app.config.get("TTT_METRICS_BIND")
    if bind:
        host, _, port = bind.rpartition(":")
        start_http_server(int(port), host or "127.0.0.1",
                          registry=app.extensions["ttt_metrics"].registry)
        log.info("metrics served on %s", bind)
