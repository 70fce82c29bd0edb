"""The work one event costs the server, counted, not timed: a budget CI holds (issue 28).

For a move against the AI (and one that ends the game), a friend's move with a watcher, a
friend joining by the link, and new games (by a player with 40 live games too: issue 44, not
one read per live game), on the SQLite store and on Redis (store, presence and limits all in
Redis), the test counts what the event makes the server do:

- sql: statements SQLite ran (its trace callback, BEGIN and COMMIT included);
- store_calls: calls on the game store (each one a connection taken, a round trip on Redis);
- redis_commands: commands Redis ran (its INFO commandstats, script bodies' calls included)
  and redis_round_trips: requests the client sent (a pipeline or a script is one);
- log_records: log records made (the access line is one);
- emits: room emits, packets: Socket.IO packets sent (acks included), views: Game views built;
- locks: the project's own locks taken (the store's write lock, presence, limiter; the
  drain takes none since issue 28).

The budgets are data: tests/support/budget.json. A count over its budget fails and names the count.
Raising a budget is a deliberate change: edit budget.json in the same commit and say in the
commit message why the event must now do more. A count under its budget passes (lower the
budget then, so it holds the gain). Timings are printed by the benches, never asserted here.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ttt.store.sqlite_pool import Connections
from ttt.web import create_app, get_socketio

BUDGET_FILE = Path(__file__).resolve().parents[2] / "support" / "budget.json"
BUDGETS: dict[str, dict[str, dict[str, int]]] = json.loads(BUDGET_FILE.read_text())


class CountingLock:
    """A lock that counts how often it is taken (the project's locks, swapped in by the test)."""

    def __init__(self, counts: Counter, lock: Any = None) -> None:
        self._lock = lock or threading.Lock()
        self._counts = counts

    def acquire(self, *args: Any, **kwargs: Any) -> bool:
        self._counts["locks"] += 1
        return self._lock.acquire(*args, **kwargs)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *_: Any) -> None:
        self.release()


class _Records(logging.Handler):
    def __init__(self, counts: Counter) -> None:
        super().__init__(logging.DEBUG)
        self.counts = counts

    def emit(self, record: logging.LogRecord) -> None:
        self.counts["log_records"] += 1


class Meter:
    """Everything counted while `measuring`; the app built on `store_url`."""

    def __init__(self, store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter = Counter()
        self.on = False
        counts = self.counts
        meter = self

        real_open = Connections._open

        def traced_open(pool: Connections) -> sqlite3.Connection:
            conn = real_open(pool)
            conn.set_trace_callback(lambda _sql: meter.on and counts.update(["sql"]))
            return conn

        monkeypatch.setattr(Connections, "_open", traced_open)
        self.app = create_app({"TESTING": True, "SECRET_KEY": "budget", "TTT_STORE": store_url,
                               "TTT_RATE_LIMIT": 10})
        self.socketio = get_socketio(self.app)
        self.table = self.app.extensions["ttt_table"]
        # The raw store under the metrics and the referee: each public call counted.
        raw = self.app.extensions["ttt_store"].wrapped
        self.raw = raw
        for name in dir(type(raw)):
            if name.startswith("_") or not callable(getattr(raw, name)):
                continue
            monkeypatch.setattr(raw, name, self._counted("store_calls", getattr(raw, name)))
        if hasattr(raw, "_write_lock"):
            raw._write_lock = CountingLock(self._live_counts())
        presence = self.table.presence
        presence._lock = CountingLock(self._live_counts())
        for limiter in {id(presence.limiter): presence.limiter,
                        id(self.table.limiter): self.table.limiter}.values():
            if hasattr(limiter, "_lock"):
                limiter._lock = CountingLock(self._live_counts())
        # Views are built by the table's Views (ttt/master/views.py) since the table was split:
        # counted there, where every view (answers and pushes alike) is made.
        views = getattr(self.table, "views", self.table)
        monkeypatch.setattr(views, "view", self._counted("views", views.view))
        manager = self.socketio.server.manager
        monkeypatch.setattr(manager, "emit", self._counted("emits", manager.emit))
        self.redis = getattr(raw, "redis", None)
        if self.redis is not None:
            import redis

            real_send = redis.connection.AbstractConnection.send_packed_command

            def sent(conn: Any, *args: Any, **kwargs: Any) -> Any:
                if meter.on:
                    counts["redis_round_trips"] += 1
                return real_send(conn, *args, **kwargs)

            monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", sent)
        self._records = _Records(self.counts)
        logging.getLogger().addHandler(self._records)
        self._level = logging.getLogger().level
        logging.getLogger().setLevel(logging.INFO)  # as a served process logs (ttt.web.ops.logs)

    def _live_counts(self) -> Counter:
        return _Gate(self)  # type: ignore[return-value]

    def _counted(self, key: str, function: Callable) -> Callable:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if self.on:
                self.counts[key] += 1
            return function(*args, **kwargs)

        return counted

    def player(self) -> Any:
        flask_client = self.app.test_client()
        flask_client.get("/")
        sio = self.socketio.test_client(self.app, flask_test_client=flask_client)
        assert sio.is_connected()
        return sio

    def _packets(self) -> None:
        """Count what goes on the wire: an ack or a packet to one client (the test client's
        stand-ins for Engine.IO, installed when the clients were made)."""
        server = self.socketio.server
        for name in ("_send_packet", "_send_eio_packet"):
            send = getattr(server, name)
            if not getattr(send, "_budget", False):
                counted = self._counted("packets", send)
                counted._budget = True  # type: ignore[attr-defined]
                setattr(server, name, counted)

    def _redis_calls(self) -> int:
        stats = self.redis.info("commandstats")
        return sum(v["calls"] for k, v in stats.items() if k != "cmdstat_info")

    def measure(self, event: Callable[[], Any]) -> dict[str, int]:
        """The counts of one call of `event` (which sends one Socket.IO event)."""
        self._packets()
        self.counts.clear()
        before = self._redis_calls() if self.redis is not None else 0
        self.on = True
        try:
            answer = event()
        finally:
            self.on = False
        assert answer.get("ok") is True, answer
        counts = dict(self.counts)
        if self.redis is not None:
            counts["redis_commands"] = self._redis_calls() - before
        return counts

    def close(self) -> None:
        logging.getLogger().removeHandler(self._records)
        logging.getLogger().setLevel(self._level)
        self.table.thinker.close()
        self.app.extensions["ttt_store"].close()


class _Gate:
    """The counter CountingLock writes to, counting only while the meter is on."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter

    def __getitem__(self, key: str) -> int:
        return self.meter.counts[key]

    def __setitem__(self, key: str, value: int) -> None:
        if self.meter.on:
            self.meter.counts[key] = value


@pytest.fixture(params=["sqlite", "redis"])
def meter(request, tmp_path, monkeypatch) -> Iterator[Meter]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    else:
        url = request.getfixturevalue("redis_url")
    made = Meter(url, monkeypatch)
    made.kind = request.param
    yield made
    made.close()


def _first_empty(game: dict) -> int:
    return game["board"].index(".")


def scenario_move_vs_ai(meter: Meter) -> dict[str, int]:
    """A move against the perfect classic AI (its reply in the same write), mid-game."""
    me = meter.player()
    game = me.emit("new_game", {"mode": "ai", "you": "X", "level": "perfect"},
                   callback=True)["game"]
    return meter.measure(lambda: me.emit("move", {"game": game["id"], "cell": 4},
                                         callback=True))


def scenario_last_move_vs_ai(meter: Meter) -> dict[str, int]:
    """A move against the AI that ends the game (the AI's reply wins): the record credited,
    and pushed to the player."""
    me = meter.player()
    game = me.emit("new_game", {"mode": "ai", "you": "X", "level": "perfect"},
                   callback=True)["game"]
    for cell in (0, 8):  # the AI takes the centre, then a corner: X at 0 and 8 block nothing
        game = me.emit("move", {"game": game["id"], "cell": cell}, callback=True)["game"]
    free = [i for i, c in enumerate(game["board"]) if c == "."]
    return meter.measure(lambda: me.emit("move", {"game": game["id"], "cell": free[-1]},
                                         callback=True))


def _friend_game(meter: Meter) -> tuple[Any, Any, dict]:
    host, friend = meter.player(), meter.player()
    game = host.emit("new_game", {"mode": "friend", "you": "X"}, callback=True)["game"]
    return host, friend, game


def scenario_friend_move_watched(meter: Meter) -> dict[str, int]:
    """X's move in a friend game, O online and one spectator watching."""
    host, friend, game = _friend_game(meter)
    assert friend.emit("join", {"game": game["id"]}, callback=True)["you"] == "O"
    watcher = meter.player()
    assert watcher.emit("join", {"game": game["id"]}, callback=True)["you"] == "spectator"
    return meter.measure(lambda: host.emit("move", {"game": game["id"], "cell": 0},
                                           callback=True))


def scenario_join(meter: Meter) -> dict[str, int]:
    """A friend opening the link: takes the open seat, the host is told."""
    _, friend, game = _friend_game(meter)
    return meter.measure(lambda: friend.emit("join", {"game": game["id"]}, callback=True))


def scenario_new_game_vs_ai(meter: Meter) -> dict[str, int]:
    """A new game against the perfect AI, the player's first game over (as a page's
    "New game" after a finished one)."""
    me = meter.player()
    game = me.emit("new_game", {"mode": "ai", "you": "X", "level": "perfect"},
                   callback=True)["game"]
    assert me.emit("resign", {"game": game["id"]}, callback=True)["ok"]
    return meter.measure(lambda: me.emit("new_game", {"mode": "ai", "you": "X",
                                                      "level": "perfect", "from": game["id"]},
                                         callback=True))


def _with_live_games(meter: Meter, count: int) -> Any:
    """A player with `count` live friend games (made in the store: a person would need hours
    of creations), both seats taken."""
    import time

    from ttt.game.match import create, take_seat

    me = meter.player()
    player = list(meter.table.presence._conns.values())[-1].player
    # A player who has played (as the other scenarios' new games), their first game over.
    game = me.emit("new_game", {"mode": "ai", "you": "X", "level": "perfect"},
                   callback=True)["game"]
    assert me.emit("move", {"game": game["id"], "cell": 4}, callback=True)["ok"]
    assert me.emit("resign", {"game": game["id"]}, callback=True)["ok"]
    for _ in range(count):
        made = create("friend", player, time.time(), you="X")
        meter.raw.create(take_seat(made, "f" * 22, time.time()))
    assert len(meter.raw.live_games(player)) == count
    return me


def scenario_new_game_40_live(meter: Meter) -> dict[str, int]:
    """A new friend game by a player with 40 live games: the same work as with none (issue 44:
    each live game was one read, one round trip on Redis)."""
    me = _with_live_games(meter, 40)
    return meter.measure(lambda: me.emit("new_game", {"mode": "friend", "you": "X"},
                                         callback=True))


def scenario_new_game_vs_ai_40_live(meter: Meter) -> dict[str, int]:
    """A new game against the AI by a player with 40 live friend games."""
    me = _with_live_games(meter, 40)
    return meter.measure(lambda: me.emit("new_game", {"mode": "ai", "you": "X",
                                                      "level": "perfect"}, callback=True))


SCENARIOS = {"move_vs_ai": scenario_move_vs_ai,
             "last_move_vs_ai": scenario_last_move_vs_ai,
             "new_game_40_live": scenario_new_game_40_live,
             "new_game_vs_ai_40_live": scenario_new_game_vs_ai_40_live,
             "new_game_vs_ai": scenario_new_game_vs_ai,
             "friend_move_watched": scenario_friend_move_watched,
             "join": scenario_join}


def over_budget(kind: str, scenario: str, counts: dict[str, int]) -> list[str]:
    """The counts above their budget, each said in words (empty: within budget)."""
    budget = BUDGETS[kind][scenario]
    lines = []
    for key in sorted(set(budget) | set(counts)):
        got, allowed = counts.get(key, 0), budget.get(key)
        if allowed is None:
            lines.append(f"{kind}/{scenario}: '{key}' = {got} has no budget")
        elif got > allowed:
            lines.append(f"{kind}/{scenario}: '{key}' grew to {got} (budget {allowed})")
    return lines


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_one_event_stays_within_its_work_budget(meter, scenario):
    counts = SCENARIOS[scenario](meter)
    print(f"{meter.kind}/{scenario}: {json.dumps(counts, sort_keys=True)}")
    over = over_budget(meter.kind, scenario, counts)
    assert not over, (
        "the work of one event grew:\n  " + "\n  ".join(over) + "\n"
        f"Raising a budget is a deliberate change: edit {BUDGET_FILE.name} in the same commit "
        "and say in its message why the event must do more (counts now: "
        f"{json.dumps(counts, sort_keys=True)}).")
    # Something was counted: a broken meter would pass every budget.
    assert counts.get("store_calls", 0) > 0 and counts.get("packets", 0) > 0
    assert counts.get("sql", 0) > 0 or counts.get("redis_commands", 0) > 0


def test_the_same_event_counts_the_same_twice(meter):
    """The counts are deterministic: the same move in two fresh games costs the same."""
    assert scenario_move_vs_ai(meter) == scenario_move_vs_ai(meter)


def test_a_grown_count_is_named():
    budget = BUDGETS["sqlite"]["move_vs_ai"]
    grown = {**budget, "sql": budget["sql"] + 1}
    assert over_budget("sqlite", "move_vs_ai", grown) == [
        f"sqlite/move_vs_ai: 'sql' grew to {budget['sql'] + 1} (budget {budget['sql']})"]
    assert over_budget("sqlite", "move_vs_ai", {**budget, "new": 1}) == [
        "sqlite/move_vs_ai: 'new' = 1 has no budget"]


def test_the_access_line_is_one_record_with_its_fields_in_both_formats():
    """The cheap access line (ttt.web.ops.logs) says what it said, and takes more fields."""
    import io

    from ttt.web.ops import logs

    stream = io.StringIO()
    handler = logs._Ours(stream)
    access = logging.getLogger("ttt.access")
    level, propagate = access.level, access.propagate
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False
    try:
        handler.setFormatter(logs.TextFormatter())
        logs.access("move", None, "ok", 0.0015)
        handler.setFormatter(logs.JsonFormatter())
        logs.access("join", "g" * 22, "not_found", 0.25, seat="O")
        access.setLevel(logging.WARNING)
        logs.access("move", None, "ok", 0.001)  # off: nothing written
    finally:
        access.removeHandler(handler)
        access.setLevel(level)
        access.propagate = propagate
    text, line = stream.getvalue().splitlines()
    assert text.endswith(" INFO ttt.access event=move game=- result=ok ms=1.5"), text
    record = json.loads(line)
    assert record["message"] == f"event=join game={'g' * 22} result=not_found ms=250.0 seat=O"
    assert (record["event"], record["game"], record["result"], record["ms"], record["seat"]) \
        == ("join", "g" * 22, "not_found", 250.0, "O")
    assert record["time"].endswith("Z") and record["level"] == "INFO"
