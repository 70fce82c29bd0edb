"""The AI pool's figures, read from the thinker at each scrape: the crowd,
searches failed by cause, live workers, local restarts and remote workers refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

# Why an AI search failed (ttt.pool.thinker.Scheduler.failed): its worker died (it is tried again),
# it was given up after its retries, or it raised.
SEARCH_FAILURES = ("worker_lost", "gave_up", "error")


class _Crowd(Collector):
    """The thinker's crowd figures, read at scrape time."""

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
    """The pool's own figures (ttt.pool.workers.figures): its workers alive, restarted and
    refused, and the search trees they keep between a game's moves."""
    from ttt.pool import workers

    for kind, name, text, labels, samples in workers.figures(thinker):
        family = (GaugeMetricFamily if kind == "gauge" else CounterMetricFamily)(
            name, text, labels=labels)
        for values, value in samples:
            family.add_metric(values, value)
        yield family


AI_CROWD = _Crowd()
