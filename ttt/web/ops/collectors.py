"""The collectors behind an app's figures (`ttt.web.ops.metrics.Metrics`).

The batched counter and histogram of the hot path, and the figures read at scrape
time: the thinker's crowd, the live connections and games, the registry's outside metrics.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ttt.store import KINDS, StoreUnavailable


class Batched:
    """Amounts that wait in a deque and are folded into the metric in batches (`_add`): at
    every scrape (`_child_samples`, so a scrape sees every amount queued before it) and every
    `FOLD_AT` amounts (so the deque stays small with nobody scraping). Safe across threads:
    deque's append and popleft are atomic, so two folds never take one amount twice and an
    append during a fold is taken by it or by the next one; the folded sums go through the
    library's own locked `inc`. So an event's count and timings are one append each."""

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


class Labelled(Batched, Counter):
    """A counter whose children are kept by their label values in a plain dict: counted on
    every event, it skips prometheus_client's lock and label checks after the first time
    (it is on the hot path). Children are never removed here, so the dict never goes stale."""

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
        """One append (`Batched`): a child's count is folded into its value in batches."""
        if self._pending is None or exemplar or amount < 0:
            super().inc(amount, exemplar)  # a parent raises, as the library's
            return
        self._queue(amount)

    def _add(self, amounts: list[float]) -> None:
        self._value.inc(sum(amounts))


class Timings(Batched, Histogram):
    """A histogram whose observation is one append (every event and every store
    call is timed, and prometheus_client's `observe` takes two locks and walks the buckets).
    The observations are folded into the buckets in batches (`Batched`); exemplars take the
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


class Collected(Collector):
    """Collect metrics that live outside this registry."""

    def __init__(self, metrics: Callable[[], tuple]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        for metric in self.metrics():
            yield from metric.collect()


class Live(Collector):
    """Figures read at scrape time: connections and players here, live games in the store."""

    def __init__(self, metrics: Any) -> None:  # the app's Metrics: its store_errors
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
