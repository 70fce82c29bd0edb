"""The AI pool's figures, read from the thinker at each scrape (issues 33 and 45): the crowd,
searches failed by cause, live workers, local restarts and remote workers refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

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
    """ttt_ai_workers{where}, ttt_ai_worker_restarts_total and ttt_ai_workers_refused_total,
    read from the pool."""
    from ttt import workers

    live = workers.live_workers(thinker)
    if live is None:
        return
    family = GaugeMetricFamily("ttt_ai_workers", "AI worker processes alive (local: this "
                               "process's; remote: on the queue, -1 when it cannot be read).",
                               labels=["where"])
    for where in ("local", "remote"):
        family.add_metric([where], live.get(where, 0))
    yield family
    yield CounterMetricFamily("ttt_ai_worker_restarts", "Local AI worker processes started "
                              "again after one died.", value=workers.restarts(thinker))
    refused = CounterMetricFamily("ttt_ai_workers_refused", "Remote AI workers seen on the "
                                  "queue's Redis and refused every search, by reason (build: "
                                  "another code fingerprint than this process's).",
                                  labels=["reason"])
    for reason, count in workers.REFUSED.items():
        refused.add_metric([reason], count)
    yield refused


AI_CROWD = _Crowd()
