"""What the store-latency histogram costs a store call: `python -m bench.metrics_cost`.

The same MeteredStore over an in-memory store (the cheapest call there is, so the ratio is
the worst case) with the per-call timing on and off, interleaved rounds; the difference per
call in microseconds. An SQLite move costs about a millisecond: compare with that.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ttt.store.memory import MemoryStore
from ttt.web.ops.metered import MeteredStore
from ttt.web.ops.metrics import Metrics


class _Off:
    def observe(self, seconds: float) -> None:
        pass


def _round(store: MeteredStore, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        store.get("nosuchgameatall00000a")
    return (time.perf_counter() - started) / calls * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    on_metrics, off_metrics = Metrics(), Metrics()
    off_metrics.store_timers["get"] = _Off()
    on, off = MeteredStore(MemoryStore(), on_metrics), MeteredStore(MemoryStore(), off_metrics)
    with_timer, without = [], []
    for _ in range(args.rounds):
        with_timer.append(_round(on, args.calls))
        without.append(_round(off, args.calls))
    a, b = statistics.median(with_timer), statistics.median(without)
    print(f"store.get through MeteredStore: {b:.2f} us untimed, {a:.2f} us timed: "
          f"+{a - b:.2f} us a call (median of {args.rounds} rounds of {args.calls})")


if __name__ == "__main__":
    main()
