"""The production front of deploy/ on loopback: redis, two gunicorn gevent processes, nginx.

`make test-deploy`. The files are deploy/'s own (tests/stack.py changes only ports and paths).
"""

from __future__ import annotations

import gc
import re
import shutil
import threading
import time

import pytest
import requests

from tests.servers import RedisServer, Remote, close_all, need_binary
from tests.stack import METRICS_TOKEN, Gunicorn, Nginx, player

pytestmark = [pytest.mark.deploy, pytest.mark.server, pytest.mark.redis]

DRAW = [0, 4, 1, 2, 6, 3, 5, 8, 7]  # a whole game, nine moves, no line


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """redis + two gunicorn processes + nginx; everything stopped whatever happens."""
    # /usr/sbin may be off a non-root PATH.
    nginx_binary = need_binary("nginx" if shutil.which("nginx") else "/usr/sbin/nginx")
    redis_binary = need_binary("redis-server")
    work = tmp_path_factory.mktemp("deploy")
    started: list = []
    try:
        redis = RedisServer(redis_binary, work)
        started.append(redis)
        env = {"TTT_STORE": redis.url, "TTT_MESSAGE_QUEUE": redis.url,
               "TTT_SECRET_KEY": "deploy-test-secret", "TTT_METRICS_TOKEN": METRICS_TOKEN,
               "TTT_TRUSTED_PROXIES": "127.0.0.1", "TTT_DRAIN_SECONDS": "15",
               # every simulated player shares 127.0.0.1: lift the per-address limits
               "TTT_CREATE_RATE": "100000", "TTT_MAX_LIVE_PER_ADDRESS": "100000"}
        backends = []
        for i in (1, 2):
            backends.append(Gunicorn(env, work / f"gunicorn{i}.log"))
            started.append(backends[-1])
            backends[-1].start()
        nginx = Nginx(nginx_binary, work / "nginx", [b.port for b in backends])
        started.append(nginx)
        yield nginx, backends, work
    finally:
        for thing in reversed(started):
            thing.stop()
    for i in (1, 2):
        assert "Traceback" not in (work / f"gunicorn{i}.log").read_text()


def connections(backend: Gunicorn) -> int:
    found = re.search(r"^ttt_connections (\S+)$", backend.metrics(), re.M)
    return int(float(found.group(1)))


def settle(backends: list[Gunicorn], expected: int) -> None:
    """Wait until the processes hold `expected` connections (earlier tests' players gone)."""
    deadline = time.monotonic() + 15
    while sum(connections(b) for b in backends) != expected:
        assert time.monotonic() < deadline, [connections(b) for b in backends]
        time.sleep(0.05)


def players_on_both(nginx, backends, transports, made: list) -> tuple[Remote, Remote]:
    """Two players through nginx whose connections landed on different processes."""
    by_backend: dict[int, Remote] = {}
    settle(backends, len(made))
    for _ in range(30):
        before = [connections(b) for b in backends]
        remote = player(nginx.url, transports)
        made.append(remote)
        deadline = time.monotonic() + 10
        while True:
            after = [connections(b) for b in backends]
            if any(a > b for a, b in zip(after, before, strict=True)):
                break
            assert time.monotonic() < deadline, "the new connection shows on no process"
            time.sleep(0.05)
        landed = next(i for i, (a, b) in enumerate(zip(after, before, strict=True)) if a > b)
        by_backend.setdefault(landed, remote)
        if len(by_backend) == 2:
            return by_backend[0], by_backend[1]
    raise AssertionError("30 players, all on one process: the front is not balancing")


def test_health_and_security_headers_through_the_front(stack):
    nginx, _, _ = stack
    health = requests.get(nginx.url + "/healthz", timeout=10)
    assert health.status_code == 200 and health.json()["ok"] is True
    page = requests.get(nginx.url + "/", timeout=10)
    assert page.status_code == 200
    headers = page.headers
    assert headers["Strict-Transport-Security"].startswith("max-age=")
    assert "camera=()" in headers["Permissions-Policy"]
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]  # the app's own
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "nginx/" not in headers.get("Server", "")


def test_metrics_are_not_public_through_the_front(stack):
    nginx, backends, _ = stack
    assert requests.get(nginx.url + "/metrics", timeout=10).status_code == 404
    answer = requests.get(nginx.url + "/metrics", timeout=10,
                          headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert answer.status_code == 404
    assert "ttt_events_total" in backends[0].metrics()


def test_an_oversized_body_is_refused_at_the_front(stack):
    nginx, _, _ = stack
    answer = requests.post(nginx.url + "/socket.io/?EIO=4&transport=polling",
                           data="4" + "x" * 5000, timeout=10)
    assert answer.status_code == 413


@pytest.mark.parametrize("transports", [["websocket"], ["polling"]], ids=["websocket", "polling"])
def test_two_processes_play_a_friend_game_through_the_front(stack, transports):
    nginx, backends, _ = stack
    made: list[Remote] = []
    try:
        alice, bob = players_on_both(nginx, backends, transports, made)
        carol = next(r for r in made if r not in (alice, bob)) if len(made) > 2 else None
        if carol is None:
            carol = player(nginx.url, transports)
            made.append(carol)
        game = alice.call("new_game", {"mode": "friend", "you": "X"}, timeout=10)["game"]
        assert bob.call("join", {"game": game["id"]}, timeout=10)["you"] == "O"
        assert carol.call("join", {"game": game["id"]}, timeout=10)["you"] == "spectator"
        for ply, cell in enumerate(DRAW, start=1):
            mover, watcher = (alice, bob) if ply % 2 else (bob, alice)
            answer = mover.call("move", {"game": game["id"], "cell": cell}, timeout=10)
            assert answer["ok"] and answer["game"]["version"] == ply, answer
            seen = watcher.wait_for("game", lambda g, n=ply: g["version"] == n, timeout=10)
            assert seen["moves"][-1] == cell
        final = carol.wait_for("game", lambda g: g["version"] == len(DRAW), timeout=10)
        assert final["status"] == "draw" and final["moves"] == DRAW
        versions = sorted({g["version"] for g in carol.pushed("game") if g["id"] == game["id"]})
        assert versions[-len(DRAW):] == list(range(1, len(DRAW) + 1))  # every move, in order
    finally:
        close_all(made)


# --- a restart in the middle of 20 games ---------------------------------------------------------

GAMES = 20


def ask(remote: Remote, event: str, payload: dict, timeout: float = 10) -> dict | None:
    """The answer, or None once the connection dropped under the call (python-socketio's own
    `call` would wait out its whole timeout; a browser's pending acks fail at the drop)."""
    answered = threading.Event()
    box: list = []
    drops = remote.drops

    def answer(reply: dict | None = None, *_: object) -> None:
        box.append(reply)
        answered.set()

    try:
        remote.sio.emit(event, payload, callback=answer)
    except Exception:  # not connected at this instant
        return None
    deadline = time.monotonic() + timeout
    while not answered.wait(0.02):
        if remote.drops != drops or time.monotonic() > deadline:
            return None
    return box[0]


def land(remote: Remote, game_id: str, ply: int, cell: int, log: list) -> None:
    """Play DRAW's move `ply` (1-based) until it has landed, exactly as a client must across a
    restart: a refusal "unavailable" or a lost answer means unknown; after the reconnect, the
    game itself says whether the move is in (a repeat is refused "stale", never played twice)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = None
        if remote.sio.connected:
            answer = ask(remote, "move", {"game": game_id, "cell": cell, "version": ply - 1})
        if answer is not None and answer["ok"]:
            assert answer["game"]["moves"] == DRAW[:ply], answer
            log.append(("answered", ply, time.monotonic()))
            return
        if answer is not None:
            assert answer["error"]["code"] in ("unavailable", "stale"), answer
        while not remote.sio.connected and time.monotonic() < deadline:
            time.sleep(0.02)  # the client reconnects by itself
        seen = ask(remote, "join", {"game": game_id})
        if seen is not None and seen.get("ok") and seen["game"]["version"] >= ply:
            assert seen["game"]["moves"][:ply] == DRAW[:ply], seen
            log.append(("landed unanswered", ply, time.monotonic()))
            return
    raise AssertionError(f"move {ply} of {game_id} never landed")


def settled(remote: Remote, game_id: str) -> dict:
    """The game as the server has it, asked until an answer comes (a client may still be
    reconnecting)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen = ask(remote, "join", {"game": game_id})
        if seen is not None and seen.get("ok"):
            return seen["game"]
        time.sleep(0.05)
    raise AssertionError(f"{game_id}: no answer to join")


# A polling client (requests under python-engineio) whose long-poll broke under it can leave
# that connection for the garbage collector: a client library's leak, not the server's. It
# is collected here (gc.collect below), not in whichever test runs next.
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("transports", [["websocket"], ["polling"]], ids=["websocket", "polling"])
def test_a_restart_in_the_middle_of_20_games_loses_no_move(stack, transports):
    nginx, backends, work = stack
    made: list[Remote] = []
    settle(backends, 0)
    try:
        pairs = start_games(nginx.url, transports, made)
        settle(backends, len(made))
        before = [connections(b) for b in backends]
        assert min(before) > 0, f"every player on one process: {before}"
        mark = (work / "gunicorn1.log").stat().st_size
        logs, terminated = play_through_a_restart(pairs, backends[0])
        text = (work / "gunicorn1.log").read_bytes()[mark:].decode()
        assert "drained:" in text and "graceful timeout" not in text.lower(), text[-2000:]
        for game_id, x, _ in pairs:
            final = settled(x, game_id)
            assert final["moves"] == DRAW and final["status"] == "draw", final  # none by time
            plies = [ply for _, ply, _ in logs[game_id]]
            assert plies == list(range(1, len(DRAW) + 1)), logs[game_id]  # each once, in order
        assert all(r.sio.connected for r in made), "a client did not come back"
        moved = sum(r.drops for r in made)
        assert moved >= before[0], (moved, before)  # every player of the drained process moved
        # The clock ran on through the drain (30 s a move): from the signal, each move of
        # the three played meanwhile landed within a reconnect, far from running it down.
        times = [[terminated] + [t for _, ply, t in logs[gid] if 4 <= ply <= 6]
                 for gid, _, _ in pairs]
        gaps = [b - a for each in times for a, b in zip(each, each[1:], strict=False)]
        print(f"restart: {moved} reconnects, longest move across it {max(gaps):.2f} s")
        # A client whose reconnects hit the restarting process backs off (1, 2, 4 s...):
        # measured up to 10 s on a busy box. Still well inside the 30 s clock.
        assert max(gaps) < 25, gaps
    finally:
        close_all(made)
        del made
        gc.collect()


def start_games(url: str, transports: list[str], made: list) -> list[tuple[str, Remote, Remote]]:
    """GAMES timed friend games through the front, both seats taken: (id, X, O) each."""
    pairs = []
    for _ in range(GAMES):
        x, o = player(url, transports, True), player(url, transports, True)
        made += [x, o]
        game = x.call("new_game", {"mode": "friend", "you": "X", "clock": 30},
                      timeout=10)["game"]
        assert o.call("join", {"game": game["id"]}, timeout=10)["you"] == "O"
        pairs.append((game["id"], x, o))
    return pairs


def play_through_a_restart(pairs: list, backend: Gunicorn) -> tuple[dict[str, list], float]:
    """Play DRAW in every game: three moves each, then SIGTERM to `backend` and three more
    while it drains, then the last three once it is back; each game's log, and when the
    signal went."""
    gates = [threading.Barrier(len(pairs) + 1), threading.Event(), threading.Event()]
    logs: dict[str, list] = {gid: [] for gid, _, _ in pairs}
    errors: list[BaseException] = []

    def play(game_id: str, x: Remote, o: Remote) -> None:
        try:
            for ply, cell in enumerate(DRAW, start=1):
                if ply == 4:
                    gates[0].wait(60)
                    gates[1].wait(60)
                if ply == 7:
                    gates[2].wait(60)
                land(x if ply % 2 else o, game_id, ply, cell, logs[game_id])
        except BaseException as error:
            errors.append(error)
            gates[0].abort()

    threads = [threading.Thread(target=play, args=pair, daemon=True) for pair in pairs]
    for t in threads:
        t.start()
    gates[0].wait(120)
    backend.terminate()
    terminated = time.monotonic()
    gates[1].set()
    backend.proc.wait(40)  # drained and gone by itself, long before systemd's kill
    backend.start()
    gates[2].set()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]
    return logs, terminated
