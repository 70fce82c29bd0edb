"""Issue 45: the catch-up push after a message-queue outage is retried until the store answers
(after Redis came back: "could not resend game ...: Redis is loading the dataset", and those
players missed their catch-up push)."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from ttt.master.replies import Push
from ttt.store import StoreUnavailable
from ttt.web.bots.hub import Hub
from ttt.web.realtime import catchup


class FlakyStore:
    """Fails the first `failures` reads (as Redis does while it loads its dataset)."""

    def __init__(self, games: dict, failures: int) -> None:
        self.games, self.failures, self.reads = games, failures, 0

    def get(self, game_id):
        self.reads += 1
        if self.reads <= self.failures:
            raise StoreUnavailable("LOADING Redis is loading the dataset in memory")
        return self.games.get(game_id)


def hub_over(store, rooms: dict) -> tuple[Hub, list, list]:
    """A Hub with only what resend reads: this process's rooms, the store, the emit."""
    emitted, slept = [], []
    manager = SimpleNamespace(rooms={"/": rooms}, _handle_emit=emitted.append)
    table = SimpleNamespace(store=store, game_pushes=lambda match: [
        Push("game", f"g:{match}:X", {"id": match}), Push("game", f"g:{match}:O", {"id": match})])
    hub = Hub.__new__(Hub)
    hub.socketio = SimpleNamespace(server=SimpleNamespace(manager=manager), sleep=slept.append)
    hub.table, hub._rooms = table, {}
    return hub, emitted, slept


def test_a_store_that_fails_n_times_then_answers_gets_the_push_sent(caplog):
    store = FlakyStore({"abc": "abc"}, failures=3)
    hub, emitted, slept = hub_over(store, {"g:abc:X": {"sid1": "e1"}})
    with caplog.at_level(logging.INFO, "ttt.hub"):
        assert hub.resend() == 1
    assert store.reads == 4
    assert slept == [0.25, 0.5, 1.0]  # a growing wait, no busy loop
    # Once, to the room this process holds (the other side's room is elsewhere).
    assert [(m["room"], m["data"]) for m in emitted] == [("g:abc:X", [{"id": "abc"}])]
    lines = [r.getMessage() for r in caplog.records]
    assert len([x for x in lines if x.startswith("could not resend")]) == 1, lines
    assert "loading the dataset" in lines[0]
    assert any(x.startswith("store back: the catch-up push resent after 3 tries") for x in lines)


def test_a_store_that_answers_at_once_sends_without_a_wait_or_a_warning(caplog):
    hub, emitted, slept = hub_over(FlakyStore({"abc": "abc", "def": None}, failures=0),
                                   {"g:abc:X": {"s": "e"}, "g:def:O": {"t": "e"}, "lobby": {}})
    with caplog.at_level(logging.INFO, "ttt.hub"):
        assert hub.resend() == 1  # "def" is gone from the store: nothing to send
    assert slept == [] and len(emitted) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_game_nobody_here_shows_any_more_is_no_longer_tried():
    rooms = {"g:abc:X": {"sid1": "e1"}}
    store = FlakyStore({"abc": "abc"}, failures=10)
    hub, emitted, slept = hub_over(store, rooms)
    hub.socketio.sleep = lambda seconds: rooms.clear()  # the player left while we waited
    assert hub.resend() == 0
    assert store.reads == 1 and emitted == []


def test_it_gives_up_with_one_line_when_the_store_never_answers(caplog):
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    def send(game):
        raise StoreUnavailable("Connection refused")

    with caplog.at_level(logging.INFO, "ttt.hub"):
        sent = catchup.resend_until_answered(["a", "b"], send, lambda g: True, sleep=sleep,
                                             clock=lambda: now[0], give_up=60)
    assert sent == 0 and 60 <= now[0] < 80
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and lines[1].startswith("gave up resending 2 games after"), lines
