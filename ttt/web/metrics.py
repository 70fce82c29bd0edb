"""Prometheus figures of one process, served at /metrics to the operator only.

Each process keeps and serves its own (gunicorn runs one worker per port, so no
multiprocess mode): Prometheus scrapes every process (deploy/prometheus.yml) and sums.
`/metrics` is off by default. `TTT_METRICS_TOKEN` opens it to `Authorization: Bearer
<token>`; `TTT_METRICS_BIND` (`host:port`) serves it on a separate address instead, which
the public front never reaches. A stranger gets 404 (off, or on its own address) or 401.

The AI worker pool reports through `observe_search(seconds)`; its queue is read at each scrape.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Iterator
from typing import Any

from flask import Flask, Response, abort, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ttt.store import StoreUnavailable, as_update

log = logging.getLogger("ttt.metrics")

# Event latency in seconds: a move on loopback takes about a millisecond; an Ultimate AI
# reply or a store under load, up to seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# Process-wide, outside any app: the AI (or its worker pool) reports here whatever app it serves.
AI_SEARCH = Histogram("ttt_ai_search_seconds", "Time the AI spent choosing one move.",
                      buckets=LATENCY_BUCKETS, registry=None)
AI_QUEUE = Gauge("ttt_ai_queue_depth", "AI searches waiting for a worker.", registry=None)


def observe_search(seconds: float) -> None:
    """Count one AI search that took `seconds`."""
    AI_SEARCH.observe(seconds)


def watch_queue(thinker: Any) -> None:
    """Read the AI queue's depth from this thinker whenever the figures are scraped."""
    AI_QUEUE.set_function(thinker.waiting)


class Metrics:
    """One app's figures and the registry that serves them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        # Collected first, so a store error while reading the live games shows in this very
        # scrape's ttt_store_errors_total, not the next one's.
        self._live = _Live(self)
        r.register(self._live)
        self.events = _Labelled("ttt_events", "Socket.IO events handled, by name and result code "
                              "(ok or the refusal's code).", ["event", "result"], registry=r)
        self.latency = Histogram("ttt_event_seconds", "Time to answer one event.", ["event"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        self.started = Counter("ttt_games_started", "Games this process created.",
                               ["mode", "variant"], registry=r)
        self.finished = Counter("ttt_games_finished", "Games that ended by a change this "
                                "process made.", ["mode", "variant"], registry=r)
        self.store_errors = Counter("ttt_store_errors", "Store calls that failed (store "
                                    "unreachable), by operation.", ["operation"], registry=r)
        self.draining = Gauge("ttt_draining", "1 while this process drains before it exits.",
                              registry=r)
        r.register(_Collected(lambda: (AI_SEARCH, AI_QUEUE)))

    def watch_live(self, connections: Callable[[], tuple[int, int]],
                   live: Callable[[], dict[tuple[str, str], int]]) -> None:
        """Read the live figures when scraped: (connections, players) here; live games per
        (mode, variant) in the store."""
        self._live.connections, self._live.live = connections, live

    def exposition(self) -> bytes:
        """The text format."""
        return generate_latest(self.registry)


class _Labelled(Counter):
    """A counter whose children are kept by their label values in a plain dict: counted on
    every event, it skips prometheus_client's lock and label checks after the first time
    (issue 28). Children are never removed here, so the dict never goes stale."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._known: dict[tuple, Any] = {}

    def labels(self, *values: Any, **named: Any) -> Any:
        if named or not values:
            return super().labels(*values, **named)
        child = self._known.get(values)
        if child is None:
            child = self._known[values] = super().labels(*values)
        return child


class _Collected(Collector):
    """Collect metrics that live outside this registry."""

    def __init__(self, metrics: Callable[[], tuple]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        for metric in self.metrics():
            yield from metric.collect()


class _Live(Collector):
    """Figures read at scrape time: connections and players here, live games in the store."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.connections: Callable[[], tuple[int, int]] | None = None  # set by watch_live
        self.live: Callable[[], dict[tuple[str, str], int]] | None = None

    def describe(self) -> Iterator[Any]:
        return iter(())  # read at scrape time only: nothing to check at registration

    def collect(self) -> Iterator[Any]:
        if self.connections is None or self.live is None:
            return
        sockets, players = self.connections()
        yield GaugeMetricFamily("ttt_connections", "Socket.IO connections open on this "
                                "process.", value=sockets)
        yield GaugeMetricFamily("ttt_connected_players", "Players with at least one connection "
                                "on this process.", value=players)
        try:
            counts = self.live()
        except StoreUnavailable:  # no live figure this time; the rest is served
            self.metrics.store_errors.labels("count_live_by_kind").inc()
            return
        # The shared store's counts, the same on every process: `max by (mode, variant)`
        # across processes, `sum` across kinds for the total. Every kind, zeros included.
        live = GaugeMetricFamily("ttt_live_games", "Games in play in the store, by mode and "
                                 "variant.", labels=["mode", "variant"])
        for (mode, variant), count in counts.items():
            live.add_metric([mode, variant], count)
        yield live


class MeteredStore:
    """A store that counts games started and finished here, and calls that failed."""

    def __init__(self, store: Any, metrics: Metrics) -> None:
        self._store, self._metrics = store, metrics

    @property
    def wrapped(self) -> Any:
        """The store whose calls are counted."""
        return self._store

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if not callable(attribute):
            return attribute
        errors, store = self._metrics.store_errors, self._store

        def counted(*args: Any, **kwargs: Any) -> Any:
            try:  # looked up at each call: a store's method replaced later is the one called
                return getattr(store, name)(*args, **kwargs)
            except StoreUnavailable:
                errors.labels(name).inc()
                raise

        # Kept on the instance: the next call finds it at once (issue 28: every store call
        # went through this lookup and built a new function). Not create and update: the
        # methods below call this for the plain call, and must stay in front.
        if not hasattr(type(self), name):
            self.__dict__[name] = counted
        return counted

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._store, name)(*args)
        except StoreUnavailable:
            self._metrics.store_errors.labels(name).inc()
            raise

    def create(self, match: Any, caps: Any = None) -> None:
        self._call("create", match, caps)
        self._metrics.started.labels(match.mode, match.variant).inc()

    def update(self, game_id: str, change: Callable) -> Any:
        last: list = []

        def remembered(match: Any) -> Any:
            last[:] = [as_update(change(match))]  # a retried change: only the last one landed
            return last[0]

        changed = self._call("update", game_id, remembered)
        if changed and last:
            before, after = changed
            if not before.is_over and after.is_over:
                self._metrics.finished.labels(after.mode, after.variant).inc()
            made = last[0].create
            if made is not None and after.rev != before.rev:
                self._metrics.started.labels(made.mode, made.variant).inc()
        return changed


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



def serve_apart(app: Flask) -> None:
    """Serve /metrics on its own address when TTT_METRICS_BIND says so (a served process)."""
    bind = app.config.get("TTT_METRICS_BIND")
    if bind:
        host, _, port = bind.rpartition(":")
        start_http_server(int(port), host or "127.0.0.1",
                          registry=app.extensions["ttt_metrics"].registry)
        log.info("metrics served on %s", bind)
