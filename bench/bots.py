"""Bots against one server process: games per second, and the stream's latency vs a socket's.

`python -m bench.bots [--mode threading|gevent|both] [--seconds 10] [--bots 4] [--parallel 4]
[--rounds 60] [--json]`

1. Throughput: `--bots` bots (the SDK's Runner, each `--parallel` games at once, answering at
   once with a cached minimax) play classic games against Perfect for `--seconds`; games
   finished per second, and per second of the server's CPU.
2. Latency, in the same server: a person (python-socketio) plays X against a bot at O
   while a spectator watches through Socket.IO. For each of the person's moves, the time
   until the bot's stream line arrives and until the spectator's `game` push arrives (the
   same push, delivered both ways), and the ratio of their medians; also the bot's HTTP
   `move` round trip against the person's socket `move` round trip.

The machine is shared: the bench prints how busy its cores were before it started.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

from bench.common import ServerProcess, busy_cores, connect_sync, fetch_cookie, note
from ttt.bots import Bot, hash_token, new_player_id, new_token
from ttt.bots.sdk import Api, Runner, load_move

ROOT = Path(__file__).resolve().parents[1]
MINIMAX = load_move(ROOT / "examples" / "bots" / "minimax.py")


def make_bots(server: ServerProcess, count: int) -> list[str]:
    """Bots made straight in the server's SQLite file, as `python -m ttt bot create` does."""
    from ttt.bots.book import open_book
    from ttt.store import open_store

    store = open_store(server.store)
    book = open_book(store)
    tokens = []
    for _ in range(count):
        token = new_token()
        bot = Bot(new_player_id(), f"b{new_player_id()[4:14]}", hash_token(token))
        book.add(bot)
        store.set_name(bot.player, bot.name)
        tokens.append(token)
    store.close()
    return tokens


def throughput(server: ServerProcess, bots: int, parallel: int, seconds: float) -> dict:
    runners = [Runner(Api(server.url, token), MINIMAX, parallel=parallel,
                      schedule=["ai:perfect"] * 1_000_000, rated=True)
               for token in make_bots(server, bots)]
    threads = [threading.Thread(target=r.run, daemon=True) for r in runners]
    for thread in threads:
        thread.start()
    time.sleep(2)  # warm-up: streams open, first games under way
    games0, cpu0, began = sum(r.tally.games for r in runners), server.cpu(), time.monotonic()
    time.sleep(seconds)
    games = sum(r.tally.games for r in runners) - games0
    elapsed, cpu = time.monotonic() - began, (server.cpu() or 0) - (cpu0 or 0)
    for runner in runners:
        runner.stop()
    losses = sum(r.tally.losses for r in runners)
    return {"games": games, "seconds": round(elapsed, 2),
            "games_per_s": round(games / elapsed, 1),
            "server_cpu_s": round(cpu, 2),
            "games_per_server_cpu_s": round(games / cpu, 1) if cpu else None,
            "losses": losses}


def latency(server: ServerProcess, rounds: int) -> dict:
    token = make_bots(server, 1)[0]
    api = Api(server.url, token)
    arrived: dict[str, dict[tuple[str, int], float]] = {"stream": {}, "socket": {}}
    lock = threading.Condition()

    def heard(kind: str, game: dict) -> None:
        with lock:
            arrived[kind].setdefault((game["id"], game["rev"]), time.perf_counter())
            lock.notify_all()

    def read_stream() -> None:
        for line in api.stream():
            if line.get("type") == "game":
                heard("stream", line["game"])

    threading.Thread(target=read_stream, daemon=True).start()
    person = connect_sync(server.url, fetch_cookie(server.url))
    spectator = connect_sync(server.url, fetch_cookie(server.url))
    spectator.on("game", lambda game: heard("socket", game))
    stream_ms, socket_ms, post_ms, call_ms = [], [], [], []
    while len(stream_ms) < rounds:
        made = api.challenge("link", you="O")["game"]
        person.call("join", {"game": made["id"]}, timeout=10)
        spectator.call("join", {"game": made["id"]}, timeout=10)
        game = made
        while game["status"] == "playing" and len(stream_ms) < rounds:
            cell = MINIMAX({**game, "you": "X", "legal": [i for i, c in enumerate(game["board"])
                                                         if c == "."]})
            began = time.perf_counter()
            answer = person.call("move", {"game": game["id"], "cell": cell}, timeout=10)
            call_ms.append((time.perf_counter() - began) * 1000)
            key = (game["id"], answer["game"]["rev"])
            with lock:
                lock.wait_for(lambda k=key: k in arrived["stream"] and k in arrived["socket"],
                              10)
                stream_ms.append((arrived["stream"][key] - began) * 1000)
                socket_ms.append((arrived["socket"][key] - began) * 1000)
            game = answer["game"]
            if game["status"] != "playing":
                break
            view = {**game, "you": "O", "legal": [i for i, c in enumerate(game["board"])
                                                  if c == "."]}
            began = time.perf_counter()
            moved = api.move(game["id"], MINIMAX(view))
            post_ms.append((time.perf_counter() - began) * 1000)
            game = moved["game"]
    for client in (person, spectator):
        client.disconnect()
    median = statistics.median
    return {"rounds": rounds,
            "push_to_stream_ms_p50": round(median(stream_ms), 2),
            "push_to_socket_ms_p50": round(median(socket_ms), 2),
            "stream_over_socket": round(median(stream_ms) / median(socket_ms), 2),
            "bot_http_move_ms_p50": round(median(post_ms), 2),
            "person_socket_move_ms_p50": round(median(call_ms), 2),
            "http_over_socket": round(median(post_ms) / median(call_ms), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["threading", "gevent", "both"], default="both")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--bots", type=int, default=4)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if min(args.seconds, args.bots, args.parallel, args.rounds) <= 0:
        parser.error("every count must be positive")
    busy = busy_cores()
    results = {"busy_cores_before": round(busy, 2)}
    for mode in (["threading", "gevent"] if args.mode == "both" else [args.mode]):
        with ServerProcess(mode=mode) as server:
            note(mode, "throughput")
            results[mode] = {"throughput": throughput(server, args.bots, args.parallel,
                                                      args.seconds)}
            note(mode, "latency")
            results[mode]["latency"] = latency(server, args.rounds)
            results[mode]["tracebacks"] = server.tracebacks()
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"cores busy before the run: {results['busy_cores_before']} (a shared machine)")
    for mode in ("threading", "gevent"):
        if mode not in results:
            continue
        t, lat = results[mode]["throughput"], results[mode]["latency"]
        print(f"{mode}: {t['games_per_s']} bot games/s ({t['games']} in {t['seconds']} s, "
              f"{t['games_per_server_cpu_s']} per server CPU second, {t['losses']} lost)")
        print(f"{mode}: push to the bot's stream {lat['push_to_stream_ms_p50']} ms p50, to a "
              f"socket {lat['push_to_socket_ms_p50']} ms: ratio {lat['stream_over_socket']}")
        print(f"{mode}: a bot's HTTP move {lat['bot_http_move_ms_p50']} ms p50, a person's "
              f"socket move {lat['person_socket_move_ms_p50']} ms: ratio "
              f"{lat['http_over_socket']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
