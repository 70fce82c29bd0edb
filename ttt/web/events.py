"""Socket.IO events: one short function per event. Parse, call the match and the store, emit."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from flask import current_app, request, session
from flask_socketio import SocketIO, join_room, leave_room

from ttt import analysis
from ttt.match import (
    MODES,
    Match,
    MatchError,
    ai_reply,
    claim,
    create,
    hint,
    other,
    play,
    rematch,
    take_seat,
)
from ttt.players import AI_LEVELS
from ttt.rules import Board
from ttt.store import StoreUnavailable, players_to_credit
from ttt.web import get_presence, get_store
from ttt.web.pages import GAME_ID, PLAYER_ID

log = logging.getLogger("ttt.events")
_rng = random.SystemRandom()  # the AI's dice: nobody can predict its tie-breaks


def room(game_id: str) -> str:
    """The Socket.IO room of a game: its players and spectators."""
    return f"game:{game_id}"


def player_room(player: str) -> str:
    """The room of all of one player's connections (tabs)."""
    return f"player:{player}"


def refuse(code: str, message: str) -> dict[str, Any]:
    """A refused event's answer."""
    return {"ok": False, "error": {"code": code, "message": message}}


# --- payload parsing -------------------------------------------------------------------------

def _game_id(payload: dict) -> str:
    game_id = payload.get("game")
    if not isinstance(game_id, str) or not GAME_ID.match(game_id):
        raise MatchError("bad_request", "game must be a game id")
    return game_id


def _choice(payload: dict, key: str, options: tuple[str, ...]) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or value not in options:
        raise MatchError("bad_request", f"{key} must be one of {', '.join(options)}")
    return value


def _moves(payload: dict) -> tuple[int, ...]:
    moves = payload.get("moves", [])
    if (not isinstance(moves, list) or len(moves) > 8
            or any(type(c) is not int or not 0 <= c <= 8 for c in moves)):
        raise MatchError("bad_request", "moves must be a list of at most 8 cells from 0 to 8")
    return tuple(moves)


def _whole(payload: dict, key: str, low: int, high: int) -> int:
    value = payload.get(key)
    if type(value) is not int or not low <= value <= high:
        raise MatchError("bad_request", f"{key} must be a whole number from {low} to {high}")
    return value


# --- helpers shared by the events ------------------------------------------------------------

def _player() -> str:
    conn = get_presence().connection(request.sid)
    if conn is None:  # connect refused it, so this cannot be reached by a client
        raise MatchError("bad_request", "no session")
    return conn.player


def _load(game_id: str) -> Match:
    match = get_store().get(game_id)
    if match is None:
        raise MatchError("not_found", "no such game")
    return match


def _update(game_id: str, change: Callable[[Match], Match]) -> tuple[Match, Match]:
    changed = get_store().update(game_id, change)
    if changed is None:
        raise MatchError("not_found", "no such game")
    return changed


def snapshot(match: Match) -> dict[str, Any]:
    """The Game object with live presence."""
    return match.public(get_presence().online(match.id))


def push_game(socketio: SocketIO, match: Match, skip_sid: str | None = None) -> None:
    """Send the snapshot to everyone watching the game (but the sender, who gets the answer)."""
    socketio.emit("game", snapshot(match), to=room(match.id), skip_sid=skip_sid)


def _show(socketio: SocketIO, match: Match) -> None:
    """Make this connection show `match`: its room, its seat's presence, the player's current."""
    sid, presence = request.sid, get_presence()
    conn = presence.connection(sid)
    if conn and conn.game and conn.game != match.id:
        leave_room(room(conn.game))
    join_room(room(match.id))
    for game_id in presence.attach(sid, match):
        changed = match if game_id == match.id else get_store().get(game_id)
        if changed:
            push_game(socketio, changed, skip_sid=sid)
    get_store().set_current(_player(), match.id)


def _seated_answer(match: Match, player: str) -> dict[str, Any]:
    answer: dict[str, Any] = {"ok": True, "game": snapshot(match), "you": match.role(player),
                              "record": get_store().record(player)}
    if match.mode == "friend":
        answer["link"] = f"/g/{match.id}"
    return answer


def _credit(socketio: SocketIO, before: Match, after: Match) -> dict | None:
    """Push a changed record to all of the player's tabs; the record if it changed."""
    record = None
    for who in players_to_credit(before, after):
        record = get_store().record(who)
        socketio.emit("record", record, to=player_room(who), skip_sid=request.sid)
    return record


def _cap_live_games(player: str) -> None:
    config, store = current_app.config, get_store()
    if store.count_live(player) >= config["TTT_MAX_LIVE_PER_PLAYER"]:
        raise MatchError("not_allowed", "you have too many unfinished games")
    if store.count_live() >= config["TTT_MAX_LIVE_GAMES"]:
        raise MatchError("not_allowed", "the server is full; try again in a moment")


# --- the events ------------------------------------------------------------------------------

def register(socketio: SocketIO) -> None:
    """Attach every event handler to this SocketIO object."""

    def event(name: str):
        def wrap(fn: Callable[[dict], dict]):
            @functools.wraps(fn)
            def handler(payload: Any = None, *_: Any) -> dict:
                if not get_presence().take_token(request.sid, current_app.config["TTT_RATE_LIMIT"]):
                    return refuse("rate_limited", "slow down")
                if not isinstance(payload, dict):
                    return refuse("bad_request", "the payload must be an object")
                try:
                    return fn(payload)
                except MatchError as error:
                    return refuse(error.code, error.message)
                except StoreUnavailable:
                    return refuse("unavailable", "the game store is unavailable; retrying")
                except Exception:  # a bug: say so once in the log, never drop the connection
                    log.exception("event %s failed", name)
                    return refuse("internal", "something went wrong on the server")

            socketio.on_event(name, handler)
            return fn

        return wrap

    # python-socketio does not reserve the names "connect" and "disconnect": a client can
    # emit events so named and reach these handlers. Each checks that the call is the real
    # one, so nobody can fake going offline (to be claimed against) or refill a rate limit.
    @socketio.on("connect")
    def on_connect(auth: Any = None, *_: Any) -> bool | None:
        if get_presence().connection(request.sid) is not None:
            return None  # an event named "connect" from a connected client: ignore it
        player = session.get("pid")
        if not isinstance(player, str) or not PLAYER_ID.match(player):
            return False  # no session cookie: open the page first
        get_presence().connect(request.sid, player, 2 * current_app.config["TTT_RATE_LIMIT"])
        join_room(player_room(player))
        return True

    @socketio.on("disconnect")
    def on_disconnect(*_: Any) -> None:
        if socketio.server.manager.is_connected(request.sid, "/"):
            return  # an event named "disconnect" from a live connection: ignore it
        try:
            for game_id in get_presence().disconnect(request.sid):
                match = get_store().get(game_id)
                if match:
                    push_game(socketio, match)
        except StoreUnavailable as error:  # the seat lease lapses by itself
            log.warning("presence not updated on disconnect: %s", error)

    @event("new_game")
    def new_game(payload: dict) -> dict:
        mode = _choice(payload, "mode", MODES)
        you = _choice(payload, "you", ("X", "O")) if mode != "local" else "X"
        level = _choice(payload, "level", AI_LEVELS) if mode == "ai" else None
        player = _player()
        _cap_live_games(player)
        match = create(mode, player, time.time(), you=you, level=level, rng=_rng,
                       moves=_moves(payload))
        get_store().create(match)
        _show(socketio, match)
        return _seated_answer(match, player)

    @event("join")
    def join(payload: dict) -> dict:
        player = _player()
        if "game" in payload:
            game_id = _game_id(payload)
            _, match = _update(game_id, lambda m: take_seat(m, player, time.time()))
        else:
            current = get_store().current(player)
            match = get_store().get(current) if current else None
            if match is None:
                return {"ok": True, "game": None, "you": "spectator",
                        "record": get_store().record(player)}
        _show(socketio, match)
        return _seated_answer(match, player)

    @event("move")
    def move(payload: dict) -> dict:
        game_id = _game_id(payload)
        cell = _whole(payload, "cell", 0, 8)
        version = _whole(payload, "version", 0, 9) if "version" in payload else None
        player = _player()
        played: list[Match] = []

        def change(match: Match) -> Match:
            now = time.time()
            played.append(play(match, player, cell, now, version))
            return ai_reply(played[-1], _rng, now)

        before, after = _update(game_id, change)
        push_game(socketio, after, skip_sid=request.sid)
        answer: dict[str, Any] = {"ok": True, "game": snapshot(after)}
        if played[-1] is not after:
            answer["played"] = snapshot(played[-1])
        record = _credit(socketio, before, after)
        if record is not None:
            answer["record"] = record
        return answer

    @event("analyze")
    def analyze(payload: dict) -> dict:
        match = _load(_game_id(payload))
        if match.mode == "friend" and not match.is_over:
            raise MatchError("not_allowed", "no analysis while a game against a friend is on")
        ply = _whole(payload, "ply", 0, len(match.moves)) if "ply" in payload else None
        board = match.board if ply is None else Board.from_moves(match.moves[:ply])
        answer = {"ok": True, "analysis": analysis.analyze(board), "version": len(match.moves),
                  "ply": len(match.moves) if ply is None else ply}
        if match.is_over:
            answer.update(analysis.review(match.moves))
        return answer

    @event("hint")
    def give_hint(payload: dict) -> dict:
        game_id = _game_id(payload)
        player = _player()
        _, match = _update(game_id, lambda m: hint(m, player, time.time()))
        push_game(socketio, match, skip_sid=request.sid)
        return {"ok": True, "game": snapshot(match),
                "best": analysis.analyze(match.board)["best"]}

    @event("rematch")
    def start_rematch(payload: dict) -> dict:
        game_id = _game_id(payload)
        player = _player()
        old = _load(game_id)
        if old.rematch_id is None:
            _, fresh = rematch(old, player, time.time(), _rng)
            _cap_live_games(player)
            get_store().create(fresh)

            def link(match: Match) -> Match:
                if match.rematch_id:  # someone else's rematch got in first: keep theirs
                    return match
                marked, _ = rematch(match, player, time.time(), _rng, game_id=fresh.id)
                return marked

            _, old = _update(game_id, link)
            if old.rematch_id != fresh.id:  # lost the race: nobody will ever see ours
                get_store().delete(fresh.id)
        elif old.role(player) == "spectator":
            raise MatchError("spectator", "only the players can start a rematch")
        assert old.rematch_id is not None
        fresh = _load(old.rematch_id)
        _show(socketio, fresh)
        socketio.emit("rematch", {"from": old.id, "game": snapshot(fresh)}, to=room(old.id),
                      skip_sid=request.sid)
        return _seated_answer(fresh, player)

    @event("claim")
    def claim_win(payload: dict) -> dict:
        game_id = _game_id(payload)
        player = _player()
        match = _load(game_id)
        role = match.role(player)
        away = get_presence().away_for(game_id, other(role)) if role in ("X", "O") else 0.0
        _, match = _update(game_id, lambda m: claim(m, player, away, time.time()))
        push_game(socketio, match, skip_sid=request.sid)
        return {"ok": True, "game": snapshot(match)}
