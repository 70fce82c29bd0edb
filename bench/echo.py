"""A bare Flask-SocketIO server that only answers, for comparison with the game server.

    python -m bench.echo [--host 127.0.0.1] [--port 5001]        threading + simple-websocket
    TTT_ASYNC_MODE=gevent gunicorn -w 1 -k gevent 'bench.echo:create_app()'

It carries what every real server must: `GET /` puts a player id in the same signed session
cookie (Flask's, keyed by TTT_SECRET_KEY) and a Socket.IO connection without it is refused;
the same message size limit and ping settings as ttt.web. Its `new_game` and `move` handlers
do no game work: they answer with game answers recorded from the real server (ECHO_ANSWERS, a
JSON list of `{"new_game": answer, "moves": [answer, ...]}`, one per game), replayed in order
for each connection, so the answers have the real sizes and shapes and a client's games end
when they ended on the real server. Without ECHO_ANSWERS it replays one built-in game.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import threading
from pathlib import Path
from typing import Any

from flask import Flask, request, session
from flask_socketio import SocketIO

PLAYER_ID = re.compile(r"[A-Za-z0-9_-]{22}")


def _builtin_game() -> list[dict]:
    def game(board: str, moves: list[int], status: str = "playing", winner: str | None = None,
             line: list[int] | None = None) -> dict:
        return {"id": "e" * 22, "mode": "ai", "level": "perfect", "board": board,
                "turn": "X" if status == "playing" else None, "status": status,
                "winner": winner, "reason": "line" if winner else None, "line": line,
                "moves": moves, "seats": {"X": "human", "O": "ai"},
                "online": {"X": True, "O": False}, "version": len(moves)}

    return [{"new_game": {"ok": True, "game": game(".........", []), "you": "X"},
             "moves": [{"ok": True, "game": game("X...O....", [0, 4])},
                       {"ok": True, "game": game("XX..O...O", [0, 4, 1, 8])},
                       {"ok": True, "game": game("XXO.O.O.O", [0, 4, 1, 8, 6, 2], "won", "O",
                                                 [2, 4, 6])}]}]


def load_answers(path: str | None) -> list[dict]:
    games = json.loads(Path(path).read_text()) if path else _builtin_game()
    if not games or not all(g.get("new_game") and g.get("moves") for g in games):
        raise ValueError("ECHO_ANSWERS: a non-empty list of {new_game, moves} games")
    return games


def create_app(async_mode: str | None = None) -> Flask:
    mode = async_mode or os.environ.get("TTT_ASYNC_MODE") or "threading"
    games = load_answers(os.environ.get("ECHO_ANSWERS"))
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=os.environ.get("TTT_SECRET_KEY") or secrets.token_hex(16),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=400 * 24 * 3600,
    )

    @app.get("/")
    def page() -> str:
        if not PLAYER_ID.fullmatch(str(session.get("pid", ""))):
            session["pid"] = secrets.token_urlsafe(16)
        session.permanent = True
        return "<!doctype html><title>echo</title>"

    @app.get("/healthz")
    def healthz() -> dict:
        return {"ok": True}

    socketio = SocketIO(app, async_mode=mode, max_http_buffer_size=4096, ping_interval=10,
                        ping_timeout=10)
    # Each connection's place in the recorded games: [game index, answers given in it].
    places: dict[str, list[int]] = {}
    lock = threading.Lock()

    @socketio.on("connect")
    def on_connect(auth: Any = None, *_: Any) -> bool:
        if not PLAYER_ID.fullmatch(str(session.get("pid", ""))):
            return False  # no session cookie: open the page first
        with lock:
            places[request.sid] = [-1, 0]
        return True

    @socketio.on("disconnect")
    def on_disconnect(*_: Any) -> None:
        with lock:
            places.pop(request.sid, None)

    @socketio.on("new_game")
    def new_game(payload: Any = None, *_: Any) -> dict:
        place = places.get(request.sid) or [-1, 0]
        place[0], place[1] = (place[0] + 1) % len(games), 0
        return games[place[0]]["new_game"]

    @socketio.on("move")
    def move(payload: Any = None, *_: Any) -> dict:
        place = places.get(request.sid) or [0, 0]
        answers = games[max(0, place[0])]["moves"]
        place[1] += 1
        return answers[min(place[1], len(answers)) - 1]

    app.extensions["echo_socketio"] = socketio
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5001)
    args = parser.parse_args()
    app = create_app("threading")
    print(f"echo: serving on http://{args.host}:{args.port}", flush=True)
    app.extensions["echo_socketio"].run(app, host=args.host, port=args.port,
                                        allow_unsafe_werkzeug=True)


if __name__ == "__main__":
    main()
