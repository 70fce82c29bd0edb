"""What a /metrics scrape costs the store with many live games: `python -m bench.scrape`.

Fills a throwaway SQLite file and a throwaway Redis (or `--redis URL`, which is FLUSHED) with
`--games` live games of every kind (mode, variant) and `--finished` ended ones, then times,
`--repeat` times each: the counts per kind (`count_live_by_kind`, what a scrape reads), the
old total (`count_live`), the whole exposition of one process, and the pass over every live
game the split would cost without the kind columns and indexes (SQLite: json_extract over the
live rows' bodies; Redis: every live body read and parsed). Checks that the counts are exact.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ttt.game.match import Match, create
from ttt.store import KINDS, open_store
from ttt.store.codec import from_json

NOW = time.time()
BATCH = 2000


def games(live: int, finished: int) -> Iterator[Match]:
    """`live` live games then `finished` ended ones, the kinds dealt in turn, each its own
    players (fresh matches: no AI opening is searched)."""
    from ttt.game.endings import abort, resign

    for n in range(live + finished):
        mode, variant = KINDS[n % len(KINDS)]
        match = create(mode, f"p{n}", NOW, level="easy" if mode == "ai" else None,
                       variant=variant, think=False, game_id=f"g{n:021d}")
        if n >= live:
            match = (abort if mode == "local" else resign)(match, f"p{n}", NOW)
        yield match


def expected(live: int) -> dict[tuple[str, str], int]:
    return dict(Counter(KINDS[n % len(KINDS)] for n in range(live)))


def timed(call: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Milliseconds a call takes: p50, p99 (of `repeat`) and max."""
    call()  # warm: caches, connections, the scripts
    took = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        took.append((time.perf_counter() - start) * 1000)
    took.sort()
    return {"p50": round(took[len(took) // 2], 3),
            "p99": round(took[min(len(took) - 1, int(0.99 * len(took)))], 3),
            "max": round(took[-1], 3)}


def exposition(store: Any) -> Callable[[], bytes]:
    """One process's whole /metrics text, its live games read from `store`."""
    from ttt.web.ops.metrics import Metrics

    metrics = Metrics()
    metrics.watch_live(lambda: (0, 0), store.count_live_by_kind)
    return metrics.exposition


def fill_sqlite(store: Any, live: int, finished: int) -> None:
    """Insert the games as the store's create does, many to a transaction (quicker to fill)."""
    with store._conn() as conn:
        batch: list[tuple] = []
        for match in games(live, finished):
            batch.append((*store._row(match), match.id))
            if len(batch) == BATCH:
                conn.executemany(store._INSERT, batch)
                batch.clear()
        conn.executemany(store._INSERT, batch)


def fill_redis(store: Any, live: int, finished: int) -> None:
    """Write the games as the store's create does (`_write`), many to a pipeline."""
    pipe = store.redis.pipeline(transaction=False)
    for n, match in enumerate(games(live, finished), 1):
        store._write(pipe, match, fresh=True)
        if n % BATCH == 0:
            pipe.execute()
    pipe.execute()


def sqlite_by_bodies(store: Any) -> Callable[[], list]:
    """The split without the kind columns: json_extract over every live row's body."""
    sql = ("SELECT json_extract(body, '$.mode'), json_extract(body, '$.variant'), COUNT(*) "
           "FROM games WHERE live = 1 GROUP BY 1, 2")

    def count() -> list:
        with store._conn() as conn:
            return conn.execute(sql).fetchall()

    return count


def redis_by_bodies(store: Any) -> Callable[[], Counter]:
    """The split without the kind indexes: every live game's body read and parsed."""
    from ttt.store.redis_keys import LIVE, game_key

    def count() -> Counter:
        ids, kinds = store.redis.zrange(LIVE, 0, -1), Counter()
        for start in range(0, len(ids), BATCH):
            for body in store.redis.mget([game_key(g) for g in ids[start:start + BATCH]]):
                if body:
                    match = from_json(json.loads(body))
                    kinds[match.mode, match.variant] += 1
        return kinds

    return count


def measure(name: str, store: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Fill one store, check its counts, time them."""
    start = time.perf_counter()
    (fill_sqlite if name == "sqlite" else fill_redis)(store, args.games, args.finished)
    print(f"  [{name}] filled in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    counts = store.count_live_by_kind()
    exact = ({k: n for k, n in counts.items() if n} == expected(args.games)
             and sum(counts.values()) == store.count_live() == args.games)
    slow = sqlite_by_bodies(store) if name == "sqlite" else redis_by_bodies(store)
    return {"store": name, "live": args.games, "finished": args.finished, "exact": exact,
            "by_kind_ms": timed(store.count_live_by_kind, args.repeat),
            "total_ms": timed(store.count_live, args.repeat),
            "exposition_ms": timed(exposition(store), args.repeat),
            "by_bodies_ms": timed(slow, max(3, args.repeat // 10))}


@contextlib.contextmanager
def redis_url(given: str | None, workdir: Path) -> Iterator[str]:
    """The Redis to fill: the one given (flushed), else a throwaway redis-server."""
    if given:
        import redis

        redis.Redis.from_url(given).flushdb()
        yield given
        return
    from bench.ai_load import redis_server

    started = redis_server(workdir)
    if started is None:
        raise SystemExit("bench.scrape: needs redis-server, or --redis URL")
    proc, url = started
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        if "sqlite" in args.only:
            store = open_store(f"sqlite:///{Path(workdir) / 'scrape.sqlite3'}")
            results.append(measure("sqlite", store, args))
            store.close()
        if "redis" in args.only:
            with redis_url(args.redis, Path(workdir)) as url:
                store = open_store(url)
                results.append(measure("redis", store, args))
                store.redis.flushdb()
                store.close()
    return results


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| store | live / finished games | counts exact | per kind p50 / p99 ms "
             "| total p50 ms | whole /metrics p50 ms | every live body p50 ms |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['store']} | {r['live']:,} / {r['finished']:,} | "
                     f"{'yes' if r['exact'] else 'NO'} | {r['by_kind_ms']['p50']} / "
                     f"{r['by_kind_ms']['p99']} | {r['total_ms']['p50']} | "
                     f"{r['exposition_ms']['p50']} | {r['by_bodies_ms']['p50']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100_000, help="live games")
    parser.add_argument("--finished", type=int, default=20_000, help="ended games beside them")
    parser.add_argument("--repeat", type=int, default=50, help="timed calls of each kind")
    parser.add_argument("--only", default="sqlite,redis", help="sqlite, redis or both")
    parser.add_argument("--redis", help="a Redis URL to use instead (its database is FLUSHED)")
    parser.add_argument("--json", action="store_true", help="print JSON, not a table")
    args = parser.parse_args(argv)
    args.only = set(args.only.split(","))
    results = run(args)
    print(json.dumps(results, indent=1) if args.json else table(results))
    return 0 if all(r["exact"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
