"""Attacks from issue 20 against real servers: floods, restarts, races, per-process limits.

Every client comes from 127.0.0.1; the servers trust it as a proxy, so each test speaks
from its own X-Forwarded-For addresses and no test's limits spend another's.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import redis as redis_client
import requests
import socketio
import websocket

from tests.support.servers import Remote, Remotes, Server
from tests.support.waiting import eventually

pytestmark = [pytest.mark.server]

HANDSHAKE = "/socket.io/?EIO=4&transport=polling"


def together(calls) -> list:
    """Run the calls at the same moment (a barrier), each on its own thread; their results."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(i, call):
        barrier.wait()
        results[i] = call()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def connects(remotes: Remotes, url: str, **kwargs) -> Remote | None:
    """A connected player, or None when the server refused the connection."""
    remote = Remote(url, connect=False, **kwargs)
    remotes.append(remote)
    try:
        remote.connect()
    except socketio.exceptions.ConnectionError:
        return None
    return remote


# --- one process ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def door(tmp_path_factory):
    """One threaded server with small caps, trusting 127.0.0.1's X-Forwarded-For."""
    tmp = tmp_path_factory.mktemp("door")
    server = Server({"TTT_STORE": f"sqlite:///{tmp / 'door.sqlite3'}", "TTT_SECRET_KEY": "door",
                     "TTT_TRUSTED_PROXIES": "127.0.0.1", "TTT_MAX_LIVE_PER_PLAYER": "3",
                     "TTT_MAX_LIVE_PER_ADDRESS": "4", "TTT_CREATE_RATE": "30",
                     "TTT_MAX_OPEN_CONNECTIONS": "20", "TTT_HELLO_SECONDS": "60"},
                    log=tmp / "server.log").start()
    yield server
    server.stop()
    assert "Traceback" not in (tmp / "server.log").read_text()


@pytest.fixture
def players(door):
    made = Remotes(door.url)
    yield made
    made.close()


def test_parallel_rematches_never_pass_the_live_game_cap(players):
    """8 parallel rematches let 10 live games through a per-player cap of 3."""
    first = players(address="10.20.0.1")
    tabs = [first] + [players(cookie=first.cookie, address="10.20.0.1") for _ in range(7)]
    finished = []
    for _ in range(8):
        game = first.call("new_game", {"mode": "ai", "you": "X", "level": "easy"})["game"]
        finished.append(first.call("resign", {"game": game["id"]})["game"]["id"])
    for _ in range(2):  # friend games stay on (a new pass-and-play game ends the last one)
        assert first.call("new_game", {"mode": "friend", "you": "X"})["ok"]
    answers = together([lambda t=t, g=g: t.call("rematch", {"game": g}, timeout=15)
                        for t, g in zip(tabs, finished, strict=True)])
    started = [a for a in answers if a["ok"] and a.get("started")]
    assert len(started) == 1, answers  # 2 live + 1 = the cap of 3
    refused = {a["error"]["code"] for a in answers if not a["ok"]}
    assert refused == {"not_allowed"}
    # Another tab's game (`from` null): the AI game just started is not left (PROTOCOL v4).
    again = first.call("new_game", {"mode": "friend", "you": "X", "from": None})
    assert again["error"]["code"] == "not_allowed"


def test_a_rematch_counts_against_the_starters_address_cap(players):
    """A rematch checked the per-player caps before its write and ignored the address's."""
    quinn = players(address="10.21.0.1")
    game = quinn.call("new_game", {"mode": "ai", "you": "X", "level": "easy"})["game"]
    quinn.call("resign", {"game": game["id"]})
    for _ in range(2):  # with a neighbour behind the same address: 4 live from it
        neighbour = players(address="10.21.0.1")
        for _ in range(2):
            assert neighbour.call("new_game", {"mode": "friend", "you": "X"})["ok"]
    answer = quinn.call("rematch", {"game": game["id"]})
    assert answer["error"]["code"] == "not_allowed", answer


def test_joining_many_games_is_capped_like_creating_them(players):
    """`join` took a seat in as many games as it was sent; now a seat is one more live game."""
    games = []
    for i in range(4):
        creator = players(address=f"10.22.0.{i + 1}")
        for _ in range(3):
            games.append(creator.call("new_game", {"mode": "friend", "you": "X"})["game"]["id"])
    bob = players(address="10.22.1.1")
    answers = [bob.call("join", {"game": g}) for g in games]
    seated = [a for a in answers if a["ok"] and a["you"] == "O"]
    assert len(seated) == 3, [a.get("you") or a["error"] for a in answers]
    assert {a["error"]["code"] for a in answers if not a["ok"]} == {"not_allowed"}


def test_invisible_and_swelling_names_are_refused_and_names_are_stored_normalised(players):
    alice = players(address="10.23.0.1")
    for name in ("\u3164", "\u2800\u2800", "\u200d", "\u3164\u200d\u2800", "\ufdfa" * 24,
                 "\ufdfa" * 2):
        answer = alice.call("set_name", {"name": name})
        assert answer["error"]["code"] == "bad_request", (name, answer)
    assert alice.call("set_name", {"name": "Ａｌｉｃｅ"})["name"] == "Alice"


def test_a_flood_of_held_websockets_is_refused_at_the_door_threads_stay_bounded(door):
    """750 × 8 websockets meant 12-14k threads; now a process holds at most its cap
    (TTT_MAX_OPEN_CONNECTIONS: 20 here)."""
    tasks = Path(f"/proc/{door.proc.pid}/task")
    before = len(list(tasks.iterdir()))
    held, refused = [], 0
    ws_url = door.url.replace("http", "ws") + "/socket.io/?EIO=4&transport=websocket"
    try:
        for i in range(100):  # each from its own address: only the process cap applies
            try:
                held.append(websocket.create_connection(
                    ws_url, timeout=5, header=[f"X-Forwarded-For: 10.24.{i // 250}.{i % 250}"]))
            except websocket.WebSocketBadStatusException as error:
                assert error.status_code == 503
                refused += 1
        threads = len(list(tasks.iterdir()))
        assert len(held) == 20 and refused == 80, (len(held), refused)
        # A held websocket costs the threaded server a few threads (its request, the
        # websocket's reader, Engine.IO's writer...): bounded by the cap, not by the flood.
        assert threads <= before + 5 * 20, (before, threads)
        # An honest player still gets in once the flood lets go of its slots.
    finally:
        for ws in held:
            ws.close()
    eventually(lambda: requests.get(door.url + HANDSHAKE, timeout=5).status_code == 200, 30,
               "the door stayed shut after the flood", interval=0.1)


# --- restarts ---------------------------------------------------------------------------------

def test_a_restart_does_not_count_as_absence_a_claim_waits_for_observed_absence(tmp_path):
    """Both seated over a minute, a restart: the claim was accepted at once after it."""
    env = {"TTT_STORE": f"sqlite:///{tmp_path / 'restart.sqlite3'}", "TTT_SECRET_KEY": "again",
           "TTT_CLAIM_AFTER": "6"}
    server = Server(env, log=tmp_path / "server.log").start()
    made = Remotes(server.url)
    try:
        alice, bob = made(), made()
        game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
        bob.call("join", {"game": game["id"]})
        seated = time.monotonic()
        assert alice.call("move", {"game": game["id"], "cell": 4})["ok"]
        assert bob.call("move", {"game": game["id"], "cell": 0})["ok"]  # v5: both have moved
        # Both seated longer than the claim delay: the product's own timer, what is tested,
        # already cut to 6 s through TTT_CLAIM_AFTER.
        time.sleep(max(0.0, seated + 7 - time.monotonic()))
        server.kill()
        server = Server(env, port=server.port, log=tmp_path / "server.log").start()
        back = Remote(server.url, cookie=alice.cookie)
        made.append(back)
        view = back.call("join", {"game": game["id"]})["game"]
        assert view["claimable_in"] is not None and view["claimable_in"] > 1, view
        assert "claim" not in view["can"]
        refused = back.call("claim", {"game": game["id"]})
        assert refused["error"]["code"] == "not_allowed"
        # The absence observed since the restart does count: the claim comes in time.
        back.wait_until("join", {"game": game["id"]},
                        lambda a: a["game"]["claimable_in"] == 0, timeout=30)
        # The view rounds claimable_in up: 0 means the claim is open now.
        claimed = back.call("claim", {"game": game["id"]})
        assert claimed["ok"], claimed
        assert claimed["game"]["reason"] == "claim"
    finally:
        made.close()
        server.stop()


def test_a_seat_leaving_is_stored_with_the_game_and_bumps_rev(tmp_path):
    server = Server({"TTT_STORE": f"sqlite:///{tmp_path / 'seen.sqlite3'}",
                     "TTT_SECRET_KEY": "seen", "TTT_BLIP": "0.5"},
                    log=tmp_path / "server.log").start()
    made = Remotes(server.url)
    try:
        alice, bob = made(), made()
        game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
        bob.call("join", {"game": game["id"]})
        assert alice.call("move", {"game": game["id"], "cell": 4})["ok"]
        rev = bob.call("move", {"game": game["id"], "cell": 0})["game"]["rev"]  # both moved (v5)
        bob.close()
        # Told once the blip is over (PROTOCOL v5), at the server's next tick.
        gone = alice.wait_for("game", lambda g: g["online"]["O"] is False, timeout=15)
        assert gone["rev"] > rev and gone["claimable_in"] > 0
        with sqlite3.connect(tmp_path / "seen.sqlite3") as db:
            body = db.execute("SELECT body FROM games WHERE id = ?", (game["id"],)).fetchone()
        seen = json.loads(body[0])["seen"]
        assert seen["X"] is None and seen["O"] > 0  # X is here; O left at that time
    finally:
        made.close()
        server.stop()


# --- two processes on Redis -----------------------------------------------------------------

@pytest.fixture(scope="module")
def pair(redis_server, tmp_path_factory):
    """Two threaded servers sharing one Redis database (store, queue and limits)."""
    url = redis_server.url.rsplit("/", 1)[0] + "/3"
    client = redis_client.Redis.from_url(url)
    client.flushdb()
    client.close()
    tmp = tmp_path_factory.mktemp("pair")
    env = {"TTT_STORE": url, "TTT_MESSAGE_QUEUE": url, "TTT_SECRET_KEY": "pair",
           "TTT_TRUSTED_PROXIES": "127.0.0.1", "TTT_MAX_CONNECTIONS": "3",
           "TTT_MAX_CONNECTIONS_PER_ADDRESS": "6", "TTT_CREATE_RATE": "20"}
    servers = [Server(env, log=tmp / f"server{i}.log").start() for i in (1, 2)]
    yield servers
    for server in servers:
        server.stop()
    for i in (1, 2):
        assert "Traceback" not in (tmp / f"server{i}.log").read_text()


@pytest.fixture
def pair_players(pair):
    made = Remotes(pair[0].url)
    yield made
    made.close()


def test_connections_per_address_are_capped_across_processes_and_refused_at_the_handshake(
        pair, pair_players):
    """125 cookies × 8 websockets from one address: nothing limited connections per address."""
    held = [connects(pair_players, pair[i % 2].url, address="10.30.0.1") for i in range(10)]
    assert sum(r is not None for r in held) == 6, held
    for server in pair:  # the next handshake is refused before Engine.IO makes a session
        answer = requests.get(server.url + HANDSHAKE, headers={"X-Forwarded-For": "10.30.0.1"},
                              timeout=5)
        assert answer.status_code == 429 and "sid" not in answer.text
    other = requests.get(pair[0].url + HANDSHAKE, headers={"X-Forwarded-For": "10.30.0.2"},
                         timeout=5)
    assert other.status_code == 200  # another address is not punished


def test_a_players_connections_are_capped_across_processes(pair, pair_players):
    """With two processes a player held 16 connections under a cap of 8."""
    first = connects(pair_players, pair[0].url, address="10.31.0.1")
    tabs = [connects(pair_players, pair[i % 2].url, cookie=first.cookie, address="10.31.0.1")
            for i in range(1, 6)]
    assert 1 + sum(t is not None for t in tabs) == 3, tabs


def test_reactions_are_one_a_second_across_processes(pair, pair_players):
    """10 reactions in 5 s through two processes; the contract says one a second."""
    alice = connects(pair_players, pair[0].url, address="10.32.0.1")
    other_tab = connects(pair_players, pair[1].url, cookie=alice.cookie, address="10.32.0.1")
    bob = connects(pair_players, pair[1].url, address="10.32.0.2")
    game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
    bob.call("join", {"game": game["id"]})
    start = time.monotonic()
    answers = [(alice, other_tab)[i % 2].call("react", {"game": game["id"], "reaction": "gg"})
               for i in range(10)]
    elapsed = time.monotonic() - start
    landed = sum(a["ok"] for a in answers)
    assert 1 <= landed <= 1 + int(elapsed), (landed, elapsed)  # one, and one more a second


def test_the_creation_burst_is_shared_across_processes(pair, pair_players):
    """A creation burst of 30 + 19 through two processes, each keeping its own."""
    tab1 = connects(pair_players, pair[0].url, address="10.33.0.1")
    tab2 = connects(pair_players, pair[1].url, cookie=tab1.cookie, address="10.33.0.1")
    start = time.monotonic()
    answers = [(tab1, tab2)[i % 2].call("new_game", {"mode": "local"}) for i in range(30)]
    elapsed = time.monotonic() - start
    made = sum(a["ok"] for a in answers)
    assert 20 <= made <= 20 + int(elapsed * 20 / 60) + 1, (made, elapsed)
    assert {a["error"]["code"] for a in answers if not a["ok"]} == {"rate_limited"}


def test_simultaneous_rematches_from_both_players_start_exactly_one_game(pair, pair_players):
    """Both calling `rematch` at once started no game in 4 of 10 runs."""
    alice = connects(pair_players, pair[0].url, address="10.34.0.1")
    bob = connects(pair_players, pair[1].url, address="10.34.0.2")
    game = alice.call("new_game", {"mode": "friend", "you": "X"})["game"]
    bob.call("join", {"game": game["id"]})
    for run in range(10):
        loser = (alice, bob)[run % 2]
        assert loser.call("resign", {"game": game["id"]})["ok"]
        answers = together([lambda who=who, g=game["id"]: who.call("rematch", {"game": g},
                                                                  timeout=15)
                            for who in (alice, bob)])
        assert all(a["ok"] for a in answers), answers
        started = {a["game"]["id"] for a in answers if a.get("started")}
        assert len(started) == 1, (run, answers)
        old = alice.call("join", {"game": game["id"]})["game"]
        assert old["rematch"] in started
        game = {"id": started.pop()}


def test_a_rename_rewrites_a_bounded_number_of_games(pair, pair_players):
    """120 games joined × 20 renames a second was 2,400 game writes a second."""
    alice = connects(pair_players, pair[0].url, address="10.35.0.1")
    bob = connects(pair_players, pair[1].url, address="10.35.0.2")
    games = [alice.call("new_game", {"mode": "friend", "you": "X"})["game"]["id"]
             for _ in range(10)]
    for game_id in games:
        assert bob.call("join", {"game": game_id})["you"] == "O"
    assert bob.call("set_name", {"name": "Bobby"})["ok"]
    renamed = [g for g in games
               if alice.call("join", {"game": g})["game"]["names"]["O"] == "Bobby"]
    assert 1 <= len(renamed) <= 5, renamed
    stale = next(g for g in games if g not in renamed)
    # The player's own view of a game catches up when they open it.
    assert bob.call("join", {"game": stale})["game"]["names"]["O"] == "Bobby"
    answers = [bob.call("set_name", {"name": f"Bob {i}"}) for i in range(12)]
    assert {a["error"]["code"] for a in answers if not a["ok"]} == {"rate_limited"}


def test_redis_is_where_the_limits_live(pair):
    """The limits the two processes share are in Redis, under their own prefix."""
    url = pair[0].env["TTT_STORE"]
    client = redis_client.Redis.from_url(url, decode_responses=True)
    try:
        assert any(k.startswith("ttt:limit:") for k in client.scan_iter(count=1000))
    finally:
        client.close()

