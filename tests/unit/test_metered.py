"""The counted store is a store (issue 43): every method of `ttt.store.Store` written out on
`MeteredStore`, none found through `__getattr__`, and each call reaches the store."""

from __future__ import annotations

from ttt.game.match import create
from ttt.store.base import Store
from ttt.store.memory import MemoryStore
from ttt.web.ops.metered import MeteredStore
from ttt.web.ops.metrics import Metrics


def store_methods() -> set[str]:
    return {name for name in dir(Store)
            if not name.startswith("_") and callable(getattr(Store, name))}


def test_every_method_of_the_store_protocol_is_written_out_and_nothing_is_proxied():
    assert store_methods() <= set(vars(MeteredStore))
    assert "__getattr__" not in vars(MeteredStore)


def test_the_counted_store_passes_each_call_through_and_counts_a_game_started():
    inner = MemoryStore()
    metrics = Metrics()
    store = MeteredStore(inner, metrics)
    match = create("local", "p" * 22, 0.0)
    store.create(match)
    assert store.get(match.id) == inner.get(match.id) is not None
    assert store.url == inner.url and store.wrapped is inner and store.cached(match.id) is None
    assert store.live_games("p" * 22) == [match.id]
    assert "ttt_games_started" in metrics.exposition().decode()
