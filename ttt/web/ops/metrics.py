"""Prometheus figures of one process, served at /metrics to the operator only.

Each process keeps and serves its own (gunicorn runs one worker per port, so no
multiprocess mode): Prometheus scrapes every process (deploy/prometheus.yml) and sums.
`/metrics` is off by default. `TTT_METRICS_TOKEN` opens it to `Authorization: Bearer
<token>`; `TTT_METRICS_BIND` (`host:port`) serves it on a separate address instead, which
the public front never reaches. A stranger gets 404 (off, or on its own address) or 401.

The AI worker pool reports through `observe_search(seconds)` and `observe_wait(seconds)`; its
queue is read at each scrape. Refused connections (`refused_connection(reason)`) and unhandled
errors (`unhandled(where)`) are counted process-wide, wherever they happen.

Cost on the hot path (issue 32): a store call is timed into `ttt_store_seconds{operation}`,
one perf_counter pair and one observation into a child looked up once per operation name
(about a microsecond a call; `python -m bench.metrics_cost` measures it). The event and store
histograms are `_Timings`: an observation is one deque append, folded into the buckets in
batches and at each scrape (issue 28).
"""

from __future__ import annotations

import hmac
import logging
import math
import time
from bisect import bisect_left
from collections import deque
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
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ttt import build, loglines
from ttt.store import KINDS, StoreUnavailable

log = logging.getLogger("ttt.metrics")

# No `<name>_created` sample beside each counter and histogram child: nothing reads them
# (rate() and increase() need no start time) and they were a third of a scrape's lines; the
# counters at zero from start-up (issue 45) would have doubled them.
disable_created_metrics()
GAMES = logging.getLogger("ttt.games")  # one line per game ended by this process

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
# One name with the connection cap of issue 27 (the same counter, by reason).
REFUSED = Counter("ttt_connections_refused", "Connections refused before they were served, "
                  "by reason (full: the process's cap; address: one address's cap; session: "
                  "no session cookie; player: too many tabs of one player).", ["reason"],
                  registry=None)
UNHANDLED = Counter("ttt_unhandled_errors", "Exceptions no handler expected (a bug), by event "
                    "or route; the player got 'internal' or a 500.", ["where"], registry=None)
SERVER_ERRORS = Counter("ttt_http_server_errors", "HTTP answers with a 5xx status, by route "
                        "and status (the health probes' 503s apart, in "
                        "ttt_probe_failures_total).", ["route", "status"], registry=None)
# A probe's 503 says a part is down (ttt_part_up says which): not a server error (issue 45).
PROBES = ("/healthz", "/readyz")
PROBE_FAILURES = Counter("ttt_probe_failures", "Health probes answered 503 (a part down, "
                         "starting or draining), by probe.", ["probe"], registry=None)
REFUSAL_REASONS = ("full", "address", "session", "player")
# Why an AI search failed (ttt.thinker.Scheduler.failed): its worker died (it is tried again),
# it was given up after its retries, or it raised.
SEARCH_FAILURES = ("worker_lost", "gave_up", "error")


class _Crowd(Collector):
    """The thinker's crowd figures, read at scrape time (issue 33)."""

    thinker: Any = None

    def describe(self) -> Iterator[Any]:
        return iter(())

    def collect(self) -> Iterator[Any]:
        if self.thinker is None:
            return
        yield CounterMetricFamily("ttt_ai_reduced_budgets", "AI moves searched for less than "
                                  "their level's time (a crowd).",
                                  value=getattr(self.thinker, "reduced", 0))
        yield CounterMetricFamily("ttt_ai_busy_new_games", "New AI games refused busy past the "
                                  "AI's capacity.",
                                  value=getattr(self.thinker, "crowded_refusals", 0))
        capacity = getattr(self.thinker, "capacity", None)
        if capacity is not None:
            yield GaugeMetricFamily("ttt_ai_capacity", "Address prefixes the AI's rotation "
                                    "holds within its reply bound.", value=capacity())
        failed = getattr(self.thinker, "failed", None)
        if failed is not None:
            family = CounterMetricFamily("ttt_ai_searches_failed", "AI searches that failed, "
                                         "by cause (worker_lost: its worker died, tried again; "
                                         "gave_up: after its retries; error: it raised).",
                                         labels=["cause"])
            for cause in SEARCH_FAILURES:
                family.add_metric([cause], failed.get(cause, 0))
            yield family
        yield from _workers(self.thinker)


def _workers(thinker: Any) -> Iterator[Any]:
    """The pool's own figures (ttt.workers.figures): its workers alive and restarted, and the
    search trees they keep between a game's moves."""
    from ttt import workers

    for kind, name, text, labels, samples in workers.figures(thinker):
        family = (GaugeMetricFamily if kind == "gauge" else CounterMetricFamily)(
            name, text, labels=labels)
        for values, value in samples:
            family.add_metric(values, value)
        yield family


AI_CROWD = _Crowd()


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
        self._live = _Live(self)
        r.register(self._live)
        self.events = _Labelled("ttt_events", "Socket.IO events handled, by name and result code "
                              "(ok or the refusal's code).", ["event", "result"], registry=r)
        self.latency = _Timings("ttt_event_seconds", "Time to answer one event.", ["event"],
                                 buckets=LATENCY_BUCKETS, registry=r)
        # Counted on every new game and every game's end: batched as the events are.
        self.started = _Labelled("ttt_games_started", "Games this process created.",
                                 ["mode", "variant"], registry=r)
        self.finished = _Labelled("ttt_games_finished", "Games that ended by a change this "
                                  "process made.", ["mode", "variant"], registry=r)
        self.store_errors = Counter("ttt_store_errors", "Store calls that failed (store "
                                    "unreachable), by operation.", ["operation"], registry=r)
        self.draining = Gauge("ttt_draining", "1 while this process drains before it exits.",
                              registry=r)
        self.store_seconds = _Timings("ttt_store_seconds", "Time of one store call, by "
                                       "operation (failed calls included).", ["operation"],
                                       buckets=STORE_BUCKETS, registry=r)
        self.store_timers: dict[str, Any] = {}  # operation -> its histogram child
        Info("ttt_build", "The running code: package version and git commit.",
             registry=r).info({"version": build.version(), "commit": build.commit()})
        # What an on-call engineer looks for first: memory, CPU, open files, GC, the python.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        r.register(_Collected(lambda: (AI_SEARCH, AI_QUEUE, AI_WAIT, AI_CROWD, REFUSED,
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


class _Batched:
    """Amounts that wait in a deque and are folded into the metric in batches (`_add`): at
    every scrape (`_child_samples`, so a scrape sees every amount queued before it) and every
    `FOLD_AT` amounts (so the deque stays small with nobody scraping). Safe across threads:
    deque's append and popleft are atomic, so two folds never take one amount twice and an
    append during a fold is taken by it or by the next one; the folded sums go through the
    library's own locked `inc`. Issue 28: an event's count and timings are one append each."""

    FOLD_AT = 256
    _pending: deque | None = None  # a labelled parent has none: it counts nothing itself

    def _metric_init(self) -> None:
        super()._metric_init()  # type: ignore[misc]
        self._pending = deque()

    def _queue(self, amount: float) -> None:
        pending = self._pending
        pending.append(amount)  # type: ignore[union-attr]
        if len(pending) >= self.FOLD_AT:  # type: ignore[arg-type]
            self._fold()

    def _fold(self) -> None:
        pending, taken = self._pending, []
        if not pending:
            return
        try:
            while True:
                taken.append(pending.popleft())
        except IndexError:  # emptied (by this fold or one in another thread)
            pass
        if taken:
            self._add(taken)

    def _add(self, amounts: list[float]) -> None:
        raise NotImplementedError

    def _child_samples(self) -> Any:
        self._fold()
        return super()._child_samples()  # type: ignore[misc]


class _Labelled(_Batched, Counter):
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

    def inc(self, amount: float = 1, exemplar: dict[str, str] | None = None) -> None:
        """One append (`_Batched`): a child's count is folded into its value in batches."""
        if self._pending is None or exemplar or amount < 0:
            super().inc(amount, exemplar)  # a parent raises, as the library's
            return
        self._queue(amount)

    def _add(self, amounts: list[float]) -> None:
        self._value.inc(sum(amounts))


class _Timings(_Batched, Histogram):
    """A histogram whose observation is one append (issue 28: every event and every store
    call is timed, and prometheus_client's `observe` takes two locks and walks the buckets).
    The observations are folded into the buckets in batches (`_Batched`); exemplars take the
    library's path."""

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        if self._pending is None or exemplar:
            super().observe(amount, exemplar)  # a parent raises, as the library's
            return
        self._queue(amount)

    def _add(self, amounts: list[float]) -> None:
        bounds = self._upper_bounds
        counts = [0] * len(bounds)
        for amount in amounts:
            # The first bucket with amount <= bound, as Histogram.observe picks it.
            at = bisect_left(bounds, amount)
            if at < len(counts):
                counts[at] += 1
        self._sum.inc(sum(amounts))
        for at, count in enumerate(counts):
            if count:
                self._buckets[at].inc(count)


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
        # The last counts read: served again (NaN before any) while the store is unreachable,
        # so the series never vanish from a dashboard during an outage; ttt_store_up says so.
        self.last: dict[tuple[str, str], float] = dict.fromkeys(KINDS, math.nan)

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
        up = 1
        try:
            self.last = {**self.last, **self.live()}
        except StoreUnavailable:  # the last figures this time; the rest is served
            self.metrics.store_errors.labels("count_live_by_kind").inc()
            up = 0
        yield GaugeMetricFamily("ttt_store_up", "1 when this scrape could read the store, 0 "
                                "when it could not (ttt_live_games then repeats its last "
                                "value).", value=up)
        # The shared store's counts, the same on every process: `max by (mode, variant)`
        # across processes, `sum` across kinds for the total. Every kind, zeros included.
        live = GaugeMetricFamily("ttt_live_games", "Games in play in the store, by mode and "
                                 "variant.", labels=["mode", "variant"])
        for (mode, variant), count in self.last.items():
            live.add_metric([mode, variant], count)
        yield live


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
        timer = self._metrics.store_timer(name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:  # looked up at each call: a store's method replaced later is the one called
                return getattr(store, name)(*args, **kwargs)
            except StoreUnavailable:
                errors.labels(name).inc()
                raise
            finally:
                timer.observe(time.perf_counter() - started)

        # Kept on the instance: the next call finds it at once (issue 28: every store call
        # went through this lookup and built a new function). Not create and update: the
        # methods below call this for the plain call, and must stay in front.
        if not hasattr(type(self), name):
            self.__dict__[name] = counted
        return counted

    def cached(self, game_id: str) -> Any:
        """The store's cached copy (ttt.store.sqlite), or None: no store call, so not timed."""
        peek = getattr(self._store, "cached", None)
        return peek(game_id) if peek is not None else None

    def _call(self, name: str, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return getattr(self._store, name)(*args)
        except StoreUnavailable:
            self._metrics.store_errors.labels(name).inc()
            raise
        finally:
            self._metrics.store_timer(name).observe(time.perf_counter() - started)

    def create(self, match: Any, caps: Any = None) -> None:
        self._call("create", match, caps)
        self._metrics.started.labels(match.mode, match.variant).inc()

    def update(self, game_id: str, change: Callable) -> Any:
        changed = self._call("update", game_id, change)
        if changed:
            before, after = changed
            if not before.is_over and after.is_over:
                self._metrics.finished.labels(after.mode, after.variant).inc()
                loglines.info(GAMES, "game over game=%s status=%s winner=%s", after.id,
                              after.status, after.winner or "-", game=after.id, mode=after.mode,
                              variant=after.variant, status=after.status, winner=after.winner,
                              rev=after.rev)
            if after.rematch_id is not None and before.rematch_id is None:
                # The change made the rematch (ttt.endings.rematch: the same mode and
                # variant) in its transaction: a game started.
                self._metrics.started.labels(after.mode, after.variant).inc()
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
    """Give every counter an alert reads its known label values at 0, now (issue 45: a series
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
