"""A stateful fuzz of every Socket.IO event, checked against an independent model of the game
(tests/support/fuzz_model.py).

Hypothesis drives two or three players (each its own cookie) through random mixes of valid
and invalid events on Flask-SocketIO's test client, with the master's clock and the presence
tracker's clock both faked. A plain model, written from PROTOCOL.md (version 2: views, fair
endings, offers, names, reactions, timed games), predicts every answer: either the event
succeeds, or it is refused with one of the error codes whose condition holds (the contract
fixes no order among several). Every `Game` a connection gets, in an answer or a push, must be
exactly the model's view for that receiver (`you`, `can`, `claimable_in`, `offer`, `score`,
`names`, `watchers`, `clock`, `time_left` and the version 1 fields).

After every step: the whole memory store mirrors the model; every push went to a connection
that shows that game and is that receiver's view; every connection's screen is up to date
(the last Game it got is the model's view now, countdowns aside); no payload carries a player
id; a refused event changed nothing and pushed nothing; the board is the moves applied
alternately X/O, status/winner/turn follow from the board or the ending off it, every move
was made by the seat on turn, records count the finished games against the AI, and the
perfect AI never loses on the board.
"""

from __future__ import annotations

import json
import math
import random
import secrets
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.support.fuzz_model import (
    ABORTS,
    AI,
    CAN,
    CAP,
    CLAIM_AFTER,
    CLOCKS,
    EVENTS,
    GAME_EVENTS,
    LEVELS,
    MODES,
    REACT_EVERY,
    REACTIONS,
    RENAME_BATCH,
    SECONDS,
    UNKNOWN_EVENTS,
    Clock,
    Game,
    Player,
    _no_score,
    best_cells,
    board_of,
    cells,
    clean_name,
    json_values,
    judge,
    names,
    odd_ids,
    odd_new_games,
    other,
    outcome,
    playable,
    reactions,
    shaped_ids,
    solve,
    versions,
)
from ttt.game import view
from ttt.master.presence import MemorySeats, Presence
from ttt.rules.classic import Board
from ttt.store.codec import to_json
from ttt.web import create_app, get_socketio, get_table
from ttt.web.extensions import get_publisher


class TicTacToeMachine(RuleBasedStateMachine):
    """Players on one app; the model predicts every answer and push and mirrors the store."""

    def __init__(self) -> None:
        super().__init__()
        # TTT_RATE_LIMIT 0 also turns off the creation rate; the test client's one address
        # (127.0.0.1) must not cap the players' live games together.
        self.app = create_app({"TESTING": True, "SECRET_KEY": "x", "TTT_STORE": "memory://",
                               "TTT_RATE_LIMIT": 0, "TTT_MAX_LIVE_PER_PLAYER": CAP,
                               "TTT_MAX_LIVE_PER_ADDRESS": 100_000})
        self.clock = Clock()
        # The handlers call the table made by create_app: fake its clock, presence and dice.
        self.table = get_table(self.app)
        presence = Presence(MemorySeats(self.clock), self.clock)
        self.app.extensions["ttt_presence"] = presence
        self.table.presence = presence
        self.table.clock = self.clock
        self.table.rng = random.Random(0)  # the AI's dice, seeded: failures replay
        assert self.table.limits.claim_after == CLAIM_AFTER
        assert self.table.limits.creations_per_minute == 0
        self.socketio = get_socketio(self.app)
        self.store = self.app.extensions["ttt_store"]
        self.players: list[Player] = []
        self.games: dict[str, Game] = {}
        self.order: list[str] = []             # game ids in creation order
        self.current: dict[str, str | None] = {}
        self.names: dict[str, str] = {}        # display names set
        self.reacted: dict[str, float] = {}    # when each player last reacted
        self.holders: dict[tuple[str, str], set[str]] = {}  # (game, mark|"watch") -> players
        self.left: dict[tuple[str, str], float] = {}        # when a seat's last holder left
        self.reactions: dict[str, dict] = {}   # the reaction push each player must get

    def teardown(self) -> None:
        for player in self.players:
            if player.sio.is_connected():
                player.sio.disconnect()
        self.store.close()

    @property
    def now(self) -> float:
        return self.clock.now

    # --- players and presence -----------------------------------------------------------------

    def _connect(self, http) -> Any:
        sio = self.socketio.test_client(self.app, flask_test_client=http)
        assert sio.is_connected()
        return sio

    @initialize(count=st.integers(2, 3))
    def make_players(self, count: int) -> None:
        # The session cookie the page sets, signed here: rendering the page for every
        # player of every example would cost more than the events.
        serializer = self.app.session_interface.get_signing_serializer(self.app)
        for _ in range(count):
            http = self.app.test_client()
            pid = secrets.token_urlsafe(16)
            http.set_cookie("session", serializer.dumps({"pid": pid}))
            self.players.append(Player(pid, http, self._connect(http)))
            self.current[pid] = None

    def _online(self, game: Game) -> dict[str, bool]:
        return {m: game.seats[m] == AI or bool(self.holders.get((game.id, m))) for m in "XO"}

    def _watchers(self, game: Game) -> int:
        return len(self.holders.get((game.id, "watch"), ()))

    def _claimable_in(self, game: Game, role: str) -> float | None:
        """Seconds until `role` may claim; None when it cannot come to that (PROTOCOL): no
        claim before X and O have both moved, nor while the absent side's clock ends the game
        first (version 5)."""
        if game.mode != "friend" or game.over or role not in ("X", "O") or game.played < 2:
            return None
        foe = other(role)
        if game.seats[foe] is None or self._online(game)[foe]:
            return None
        # Away since the last sighting, or since the seat was taken if later.
        since = max(self.left.get((game.id, foe), 0.0), game.seated[foe])
        wait = max(0.0, CLAIM_AFTER - (self.now - since))
        if game.turn == foe and game.deadline is not None and game.deadline - self.now <= wait:
            return None
        return wait

    def _leave(self, player: Player) -> None:
        for key in player.held:
            holders = self.holders.get(key, set())
            holders.discard(player.pid)
            if not holders:
                self.holders.pop(key, None)
                if key[1] != "watch":
                    self.left[key] = self.now
        player.held, player.shows, player.screen = [], None, None

    def _show(self, player: Player, game_id: str) -> None:
        game = self.games[game_id]
        if game.mode == "friend" and not game.over and self.names.get(player.pid):
            for mark in game.marks_of(player.pid):  # a name a rename left behind catches up
                game.names[mark] = self.names[player.pid]
        self._leave(player)
        player.shows = game_id
        player.held = [(game_id, m) for m in self.games[game_id].marks_of(player.pid) or ["watch"]]
        for key in player.held:
            self.holders.setdefault(key, set()).add(player.pid)
        self.current[player.pid] = game_id

    @rule(data=st.data())
    def reconnect(self, data) -> None:
        """Drop a connection (presence goes offline) or bring a dropped one back."""
        player = data.draw(st.sampled_from(self.players))
        before = self._dump(presence=False)
        if player.connected:
            player.sio.disconnect()
            self._leave(player)
            player.connected = False
        else:
            player.sio = self._connect(player.http)
            player.connected = True
        assert self._dump(presence=False) == before

    @rule(seconds=SECONDS)
    def time_passes(self, seconds: int) -> None:
        """Time moves; the server's clock tick ends the timed games whose time ran out."""
        self.clock.now += seconds
        get_publisher(self.app).publish(self.table.tick())  # what the housekeeping loop does
        for game in self.games.values():
            if game.deadline is not None and not game.over and game.deadline <= self.now:
                # A first move that never came calls the game off; later, it is lost on time.
                game.finish = ("no_start", None) if game.played < 2 else ("time", other(game.turn))
                game.deadline = None

    # --- what a receiver sees -----------------------------------------------------------------

    def _can(self, game: Game, role: str) -> list[str]:
        """The events this receiver may send now and have accepted (PROTOCOL's `can`)."""
        seated, sided, playing = role != "spectator", role in ("X", "O"), not game.over
        can = set()
        if playing and seated and role in ("both", game.turn):
            can.add("move")
            if game.mode != "friend":
                can.add("hint")
        if game.mode != "friend" or not playing:
            can.add("analyze")
        if playing and sided and game.mode in ("friend", "ai"):
            can.add("resign")
            if game.abortable:
                can.add("abort")
        if game.mode == "friend" and sided:
            if None not in game.seats.values():  # once there is somebody to react to
                can.add("react")
            if self._claimable_in(game, role) == 0:
                can.add("claim")
        if game.mode == "local" and role == "both" and playing:
            can.add("abort")  # pass-and-play: its one player may call it off at any time
        # Against a friend, a rematch of a finished game: an offer or its acceptance (not the
        # offerer's own again: that changes nothing). Against the AI and in pass-and-play at
        # any time (version 1). After an abort too (PROTOCOL v3: one tap to a new game).
        if seated and (game.mode != "friend" or (
                not playing and (game.rematch_id or game.offer != role))):
            can.add("rematch")
        if sided and game.offer and not game.rematch_id:
            can.add("decline")
        return sorted(can)

    def _view(self, game: Game, role: str) -> dict[str, Any]:
        """The Game that a receiver in `role` must get now."""
        line = None
        if game.finish is None and game.status == "won":
            line = list(Board.from_moves(game.moves).outcome().line)
        claimable = self._claimable_in(game, role)
        left = None if game.deadline is None or game.over else max(0.0, game.deadline - self.now)
        if left is None and game.clock is not None and not game.over:  # v5: not yet running
            left = 30.0 if game.played < 2 else float(game.clock)
        if game.clock is not None and game.over:  # v5: a number in every view of a timed game
            left = 0.0 if game.reason == "time" else float(game.clock)
        return {
            "id": game.id, "mode": game.mode, "variant": "classic", "level": game.level,
            "board": board_of(game.moves), "turn": game.turn, "status": game.status,
            "winner": game.winner, "reason": game.reason, "line": line,
            "moves": list(game.moves),
            "seats": {m: "ai" if s == AI else "open" if s is None else "human"
                      for m, s in game.seats.items()},
            "online": self._online(game), "version": len(game.moves), "hints": dict(game.hints),
            "rematch": game.rematch_id, "start": game.start,
            "you": role, "can": self._can(game, role),
            # Version 3: the cells the receiver may play, and the replay link's path.
            "legal": ([c for c, mark in enumerate(board_of(game.moves)) if mark == "."]
                      if "move" in self._can(game, role) else []),
            "replay": "/r/" + "".join(map(str, game.moves)) if game.moves else None,
            "claimable_in": None if claimable is None else math.ceil(round(claimable * 10, 6)) / 10,
            "offer": {"rematch": game.offer} if game.offer else None,
            "score": game.score(), "names": dict(game.names), "watchers": self._watchers(game),
            "clock": game.clock, "time_left": None if left is None else round(left, 1),
            "aborted": ({"reason": game.finish[0], "by": game.aborted_by}
                        if game.status == "aborted" else None),
        }

    def _check_view(self, got: Any, game: Game, role: str) -> None:
        expected = self._view(game, role)
        assert isinstance(got, dict) and isinstance(got.get("can"), list), got
        assert len(set(got["can"])) == len(got["can"]) and set(got["can"]) <= set(CAN), got
        assert type(got.get("rev")) is int, got
        shown = {k: got.get(k, "<missing>") for k in expected}
        shown["can"] = sorted(got["can"])
        assert shown == expected, _diff(shown, expected)

    def _saw(self, player: Player, got: dict) -> None:
        """The connection got a Game: if it is the one it shows, that is its screen now."""
        if got["id"] == player.shows:
            player.screen = (got, self.now)

    def _record(self, pid: str) -> dict:
        expected = {level: {"wins": 0, "draws": 0, "losses": 0} for level in LEVELS}
        for game in self.games.values():
            if game.mode != "ai" or not game.over or game.start or game.status == "aborted":
                continue  # a game from a preset position, or called off, does not count
            for mark in "XO":
                if game.seats[mark] == pid:
                    key = ("draws" if game.winner is None else "wins" if game.winner == mark
                           else "losses")
                    expected[game.level][key] += 1
        return expected

    def _check_record(self, got: Any, pid: str) -> None:
        """A player's record: the model's count per level (nothing in any other kind of game)."""
        assert {level: got.get(level) for level in LEVELS} == self._record(pid), got
        assert all(set(counts.values()) == {0} for level, counts in got.items()
                   if level not in LEVELS), got

    def _check_seated(self, answer: dict, player: Player, game: Game) -> None:
        """The answer of new_game, join and a started rematch."""
        role = game.role(player.pid)
        assert answer["you"] == role
        self._check_view(answer["game"], game, role)
        self._check_record(answer["record"], player.pid)
        if game.mode == "friend":
            assert answer["link"] == f"/g/{game.id}"
        self._saw(player, answer["game"])

    # --- sending one event and checking the answer --------------------------------------------

    def _dump(self, presence: bool = True) -> tuple:
        """The store's state; without `presence`, a seat's comings and goings (stored with
        the game, each one a revision) left out."""
        games = {gid: to_json(m) for gid, m in self.store.wrapped._games.items()}
        for body in games.values():
            body.pop("updated"), body.pop("created")
            if not presence:
                body.pop("seen"), body.pop("rev")
        pids = [p.pid for p in self.players]
        return (games, {p: self.store.current(p) for p in pids},
                {p: self.store.record(p) for p in pids}, {p: self.store.name(p) for p in pids})

    def _no_leak(self, payload: Any) -> None:
        text = json.dumps(payload, ensure_ascii=False)
        for player in self.players:
            assert player.pid not in text, f"a player id in {text}"

    def _nothing_pushed(self, what: str) -> None:
        for player in self.players:
            if player.connected:
                got = player.sio.get_received()
                assert got == [], f"{what} pushed {got}"

    def _send(self, player: Player, event: str, *args: Any) -> dict | None:
        """Emit with an acknowledgement; a refused or unknown event changes and pushes nothing."""
        before = self._dump()
        answer = player.sio.emit(event, *args, callback=True)
        self._no_leak(answer)
        if event not in EVENTS:
            assert player.sio.is_connected()
            assert self._dump() == before, f"unknown event {event!r} changed the store"
            self._nothing_pushed(f"unknown event {event!r}")
            return None
        assert isinstance(answer, dict) and isinstance(answer.get("ok"), bool), answer
        if not answer["ok"]:
            error = answer["error"]
            assert isinstance(error["message"], str) and error["message"]
            assert self._dump() == before, f"refused {event} {args!r} changed the store"
            self._nothing_pushed(f"refused {event} {args!r}")
        return answer

    def _expect(self, answer: dict, codes: set[str], what: str) -> bool:
        """Whether the event was accepted; fails unless it matches the prediction."""
        if codes:
            assert not answer["ok"], f"{what}: expected one of {codes}, got {answer}"
            assert answer["error"]["code"] in codes, f"{what}: expected {codes}, got {answer}"
            return False
        assert answer["ok"], f"{what}: expected success, got {answer}"
        return True

    @staticmethod
    def _id_codes(value: Any, known: dict[str, Game]) -> set[str]:
        if not isinstance(value, str):
            return {"bad_request"}
        if value not in known:  # a string of the wrong shape may be either
            return {"bad_request", "not_found"}
        return set()

    def _game_of(self, payload: Any, codes: set[str]) -> Game | None:
        """The model's game a payload names (codes gets bad_request/not_found otherwise)."""
        if not isinstance(payload, dict):
            codes.add("bad_request")
            return None
        found = self._id_codes(payload.get("game"), self.games)
        codes |= found
        return None if found else self.games[payload["game"]]

    def _rematch_capped(self, game: Game) -> bool:
        """Whether a rematch of `game` would seat someone over the cap (each person needs
        room for it, not only the one who starts it)."""
        return any(self._live(pid) >= CAP for pid in set(game.seats.values()) - {None, AI})

    def _live(self, pid: str) -> int:
        return sum(1 for g in self.games.values() if not g.over and pid in g.seats.values())

    def _left_by(self, player: Player, gid: str | None) -> dict | None:
        """PROTOCOL v4: the live AI game a new game or a rematch leaves ends by the rule,
        called off while abortable, else resigned; the answer's `left` (None: nothing left)."""
        game = self.games.get(gid) if gid else None
        role = game.role(player.pid) if game else None
        if game is None or game.mode != "ai" or game.over or role not in ("X", "O"):
            return None
        if game.abortable:
            game.finish, game.aborted_by = ("abort", None), role
        else:
            game.finish = ("resign", other(role))
        game.deadline = None
        return {"game": game.id, "status": game.status, "reason": game.finish[0]}

    def _player(self, pid: str) -> Player:
        return next(p for p in self.players if p.pid == pid)

    def _ended(self, player: Player, answer: dict, game: Game, record: bool) -> None:
        """The answer of an event that ended or changed a game: its view, its record."""
        role = game.role(player.pid)
        self._check_view(answer["game"], game, role)
        self._saw(player, answer["game"])
        if record:
            self._check_record(answer["record"], player.pid)

    def _as_can_says(self, player: Player, game: Game | None, event: str,
                     codes: set[str]) -> None:
        """The model agrees with itself: `can` lists what this sender may send now and have
        accepted (PROTOCOL), but for what a payload or a limit decides, and a v1 rematch."""
        if game is None or codes & {"bad_request", "not_found"}:
            return  # a payload the server cannot read says nothing about `can`
        listed = event in self._can(game, game.role(player.pid))
        if listed and codes:
            assert ((event == "move" and codes <= {"occupied", "stale"})
                    or (event == "react" and codes == {"rate_limited"})
                    # Issue 41's rule reads the player's other games, not this one: `can`
                    # cannot say it (a pass-and-play copy of a live friend game's position).
                    or (event == "hint" and codes == {"not_allowed"} and game.mode != "friend")
                    or (event == "rematch" and codes == {"not_allowed"}
                        and self._rematch_capped(game))), (event, codes)
        if not listed and not codes:
            # Accepted but not offered: a rematch of an AI or pass-and-play game still on (for
            # version 1 clients), and the offerer asking again (it stays an offer).
            assert event == "rematch" and (not game.over or game.offer == game.role(player.pid))

    # --- the events ------------------------------------------------------------------------------

    def new_game(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        mode = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        else:
            mode = payload.get("mode")
            if not isinstance(mode, str) or mode not in MODES:
                codes.add("bad_request")
                mode = None
            else:
                if mode != "local" and payload.get("you") not in ("X", "O"):
                    codes.add("bad_request")
                if mode == "ai" and payload.get("level") not in LEVELS:
                    codes.add("bad_request")
            clock = payload.get("clock")
            if clock is not None and (type(clock) is not int or clock not in CLOCKS
                                      or mode not in ("friend", None)):
                codes.add("bad_request")  # a clock is for friend games only
            variant = payload.get("variant", "classic")
            if not isinstance(variant, str) or variant != "classic":
                codes.add("bad_request")
            if "moves" in payload and not playable(payload["moves"]):
                codes.add("bad_request")
            if self._live(player.pid) >= CAP:
                codes.add("not_allowed")
        known = set(self.store.wrapped._games)
        answer = self._send(player, "new_game", payload, *extra)
        if not self._expect(answer, codes, f"new_game {payload!r}"):
            return
        created = [gid for gid in self.store.wrapped._games if gid not in known]
        assert created == [answer["game"]["id"]]
        gid = created[0]
        you = payload["you"] if mode != "local" else "X"
        foe = other(you)
        seats = {you: player.pid, foe: AI if mode == "ai" else player.pid if mode == "local"
                 else None}
        preset = list(payload.get("moves", []))
        game = Game(gid, mode, payload["level"] if mode == "ai" else None, seats, self.now,
                    moves=list(preset), movers=["setup"] * len(preset), start=len(preset),
                    clock=payload.get("clock") if mode == "friend" else None,
                    seated={m: self.now if seats[m] is not None else None for m in "XO"})
        if mode != "local":
            game.names[you] = self.names.get(player.pid)
        stored = list(self.store.get(gid).moves)
        assert stored[: len(preset)] == preset
        if mode == "ai" and game.seats[game.turn] == AI:
            assert len(stored) == len(preset) + 1, "the AI moves first when it is on turn"
            assert stored[-1] not in game.moves
            game.moves.append(stored[-1])
            game.movers.append(AI)
        assert stored == game.moves
        self.games[gid] = game
        self.order.append(gid)
        for left in self.games.values():  # a new game ends the player's pass-and-play games
            if left.mode == "local" and left.id != gid and not left.over and (
                    left.seats["X"] == player.pid):
                left.finish = ("abandoned", None)
        # No `from` (a version 3 client): the player's current game is left by the rule.
        assert answer["left"] == self._left_by(player, self.current[player.pid]), answer["left"]
        self._show(player, gid)
        self._check_seated(answer, player, game)

    def join(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        elif "game" in payload:
            game = self._game_of(payload, codes)
            if (game is not None and game.mode == "friend" and not game.over
                    and game.role(player.pid) == "spectator" and None in game.seats.values()
                    and self._live(player.pid) >= CAP):
                codes.add("not_allowed")  # a seat taken is one more live game: capped
        answer = self._send(player, "join", payload, *extra)
        if not self._expect(answer, codes, f"join {payload!r}"):
            return
        if game is None:  # the current game
            current = self.current[player.pid]
            if current is None:
                assert answer["game"] is None and answer["you"] == "spectator"
                self._check_record(answer["record"], player.pid)
                return
            game = self.games[current]
        elif (game.mode == "friend" and game.role(player.pid) == "spectator" and not game.over
              and None in game.seats.values()):
            mark = "X" if game.seats["X"] is None else "O"  # the first other player sits down
            game.seats[mark] = player.pid
            game.names[mark] = self.names.get(player.pid)
            game.seated[mark] = self.now
            game.restart_clock(self.now)
        self._show(player, game.id)
        self._check_seated(answer, player, game)

    def move(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        else:
            codes |= self._id_codes(payload.get("game"), self.games)
            cell = payload.get("cell")
            if type(cell) is not int or not 0 <= cell <= 8:
                codes.add("bad_request")
            version = payload.get("version")
            if "version" in payload and type(version) is not int:
                codes.add("bad_request")
            elif "version" in payload and not 0 <= version <= 9:
                codes |= {"bad_request", "stale"}
            if isinstance(payload.get("game"), str):
                game = self.games.get(payload["game"])
            if game is not None:
                role = game.role(player.pid)
                if role == "spectator":
                    codes.add("spectator")
                if game.over:
                    codes.add("game_over")
                if "version" in payload and version != len(game.moves):
                    codes.add("stale")
                if role in ("X", "O") and game.turn != role:
                    codes.add("not_your_turn")
                if type(cell) is int and 0 <= cell <= 8 and cell in game.moves:
                    codes.add("occupied")
        self._as_can_says(player, game, "move", codes)
        answer = self._send(player, "move", payload, *extra)
        if not self._expect(answer, codes, f"move {payload!r}"):
            return
        assert game is not None
        assert game.deadline is None or self.now < game.deadline, "the tick missed a timeout"
        stored = list(self.store.get(game.id).moves)
        mine = len(game.moves)
        assert stored[:mine + 1] == [*game.moves, payload["cell"]], "lost or reordered moves"
        game.moves.append(payload["cell"])
        game.movers.append(player.pid)
        game.restart_clock(self.now)
        role = game.role(player.pid)
        played = self._view(game, role)
        extra = stored[mine + 1:]
        ai_due = game.mode == "ai" and not game.over
        assert len(extra) == (1 if ai_due else 0), f"AI replies {extra} (due: {ai_due})"
        if extra:
            assert extra[0] not in game.moves
            game.moves.append(extra[0])
            game.movers.append(AI)
            shown = {k: answer["played"].get(k) for k in played}
            shown["can"] = sorted(shown["can"])
            assert shown == played, _diff(shown, played)  # the position before the AI's reply
        assert answer["game"]["moves"] == game.moves
        ended = game.mode == "ai" and game.over and not game.start
        self._ended(player, answer, game, record=ended)
        assert ("record" in answer) == ended

    def _friend_position(self, player: Player, moves: list[int]) -> bool:
        """Whether the position after `moves` (not the empty board) is that of a live friend
        game the player sits in: no engine help there (issue 41)."""
        board = board_of(moves)
        return bool(moves) and any(
            other.mode == "friend" and not other.over and player.pid in other.seats.values()
            and len(other.moves) == len(moves) and board_of(other.moves) == board
            for other in self.games.values())

    def analyze(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = self._game_of(payload, codes)
        if game is not None and game.mode == "friend" and not game.over:
            codes.add("not_allowed")
        if isinstance(payload, dict) and "ply" in payload:
            ply = payload["ply"]
            if type(ply) is not int or ply < 0 or (game is not None and ply > len(game.moves)):
                codes.add("bad_request")
            elif game is not None and self._friend_position(player, game.moves[:ply]):
                codes.add("not_allowed")
        elif game is not None and self._friend_position(player, game.moves):
            codes.add("not_allowed")
        self._as_can_says(player, game, "analyze", codes)
        answer = self._send(player, "analyze", payload, *extra)
        if not self._expect(answer, codes, f"analyze {payload!r}"):
            return
        assert game is not None
        analysis = answer["analysis"]
        ply = payload.get("ply", len(game.moves))
        assert answer.get("version", len(game.moves)) == len(game.moves)
        assert answer.get("ply", ply) == ply
        position = game.moves[:ply]
        board = board_of(position)
        if outcome(position)[1]:
            assert analysis["moves"] == [] and analysis["best"] == []
            return
        turn = "XO"[len(position) % 2]
        assert analysis["turn"] == turn
        legal = [i for i, ch in enumerate(board) if ch == "."]
        assert sorted(m["cell"] for m in analysis["moves"]) == legal
        rank = {"loss": -1, "draw": 0, "win": 1}
        for entry in analysis["moves"]:
            result, plies = judge(board, entry["cell"], turn)
            assert rank[entry["result"]] == result, (board, entry)
            assert entry["plies"] == plies, (board, entry)
        assert analysis["best"] and set(analysis["best"]) <= best_cells(position)

    def _seated_codes(self, game: Game | None, player: Player, codes: set[str]) -> str | None:
        """spectator / game_over for an event only a seated player of a live game may send."""
        if game is None:
            return None
        role = game.role(player.pid)
        if role == "spectator":
            codes.add("spectator")
        if game.over:
            codes.add("game_over")
        return role

    def hint(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = self._game_of(payload, codes)
        role = self._seated_codes(game, player, codes)
        if game is not None:
            if game.mode == "friend" or self._friend_position(player, game.moves):
                codes.add("not_allowed")
            if role in ("X", "O") and game.turn != role:
                codes.add("not_your_turn")
        self._as_can_says(player, game, "hint", codes)
        answer = self._send(player, "hint", payload, *extra)
        if not self._expect(answer, codes, f"hint {payload!r}"):
            return
        assert game is not None and game.turn is not None
        if game.hinted != len(game.moves):  # once per position
            game.hints[game.turn] += 1
            game.hinted = len(game.moves)
        self._ended(player, answer, game, record=False)
        assert answer["best"] and set(answer["best"]) <= best_cells(game.moves)

    def claim(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = self._game_of(payload, codes)
        role = self._seated_codes(game, player, codes)
        if game is not None:
            if game.mode != "friend":
                codes.add("not_allowed")
            if role in ("X", "O") and self._claimable_in(game, role) != 0:
                codes.add("not_allowed")  # the opponent is here, or not away long enough
        self._as_can_says(player, game, "claim", codes)
        answer = self._send(player, "claim", payload, *extra)
        if not self._expect(answer, codes, f"claim {payload!r}"):
            return
        assert game is not None
        game.finish = ("claim", role)
        game.deadline = None
        self._ended(player, answer, game, record=False)
        assert answer["game"]["status"] == "won" and answer["game"]["reason"] == "claim"

    def resign(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = self._game_of(payload, codes)
        role = self._seated_codes(game, player, codes)
        if game is not None and (game.mode not in ("friend", "ai") or role not in ("X", "O")):
            codes.add("not_allowed")
        self._as_can_says(player, game, "resign", codes)
        answer = self._send(player, "resign", payload, *extra)
        if not self._expect(answer, codes, f"resign {payload!r}"):
            return
        assert game is not None
        game.finish = ("resign", other(role))
        game.deadline = None
        ended = game.mode == "ai" and not game.start  # a loss in the record
        self._ended(player, answer, game, record=ended)
        assert ("record" in answer) == ended

    def abort(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = self._game_of(payload, codes)
        role = self._seated_codes(game, player, codes)
        if game is not None and game.mode != "local" and (
                game.mode not in ("friend", "ai") or role not in ("X", "O")
                or not game.abortable):
            codes.add("not_allowed")  # a result that matters already: resign instead
        self._as_can_says(player, game, "abort", codes)
        answer = self._send(player, "abort", payload, *extra)
        if not self._expect(answer, codes, f"abort {payload!r}"):
            return
        assert game is not None
        game.finish = ("abort", None)
        game.aborted_by = role if role in ("X", "O") else None
        game.deadline = None
        self._ended(player, answer, game, record=False)

    def decline(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = self._game_of(payload, codes)
        if game is not None:
            if game.role(player.pid) == "spectator":
                codes.add("spectator")
            if game.offer is None or game.rematch_id is not None:
                codes.add("not_allowed")
        self._as_can_says(player, game, "decline", codes)
        answer = self._send(player, "decline", payload, *extra)
        if not self._expect(answer, codes, f"decline {payload!r}"):
            return
        assert game is not None
        game.offer = None
        self._ended(player, answer, game, record=False)

    def rematch(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = self._game_of(payload, codes)
        kind = None
        if game is not None:
            role = game.role(player.pid)
            if role == "spectator":
                codes.add("spectator")
            elif game.rematch_id is not None:
                kind = "again"  # asked again: the same rematch
            else:
                if game.mode == "friend" and not game.over:
                    codes.add("not_allowed")
                if game.mode == "friend" and game.offer != other(role):
                    kind = "offer"  # the offerer calling again stays an offer
                else:
                    kind = "start"
                    if self._rematch_capped(game):
                        codes.add("not_allowed")
        known = set(self.store.wrapped._games)
        self._as_can_says(player, game, "rematch", codes)
        answer = self._send(player, "rematch", payload, *extra)
        if not self._expect(answer, codes, f"rematch {payload!r}"):
            return
        assert game is not None
        created = [gid for gid in self.store.wrapped._games if gid not in known]
        if kind == "offer":
            assert answer["left"] is None
            assert created == [] and answer["started"] is False
            game.offer = role
            self._ended(player, answer, game, record=False)
            return
        assert answer["started"] is True
        if kind == "start":
            assert created == [answer["game"]["id"]]
            # No `from`: the game rematched is the one left (a live AI game ends by the rule).
            assert answer["left"] == self._left_by(player, game.id), answer["left"]
            fresh = self._start_rematch(game, created[0])
        else:
            assert answer["left"] is None
            assert created == [] and answer["game"]["id"] == game.rematch_id
            fresh = self.games[game.rematch_id]
        self._show(player, fresh.id)
        self._check_seated(answer, player, fresh)

    def _start_rematch(self, game: Game, gid: str) -> Game:
        """The next game of the chain: same mode, level and clock, sides swapped."""
        seats = {"X": game.seats["O"], "O": game.seats["X"]}
        total = game.score() or _no_score()
        if game.mode == "friend":  # the people swap sides and their wins go with them
            series = {"X": total["O"], "O": total["X"], "draws": total["draws"]}
        else:
            series = total
        # PROTOCOL: `names` are the display names of the people seated (none in pass-and-play).
        seat_names = {m: self.names.get(s) if game.mode != "local" and s not in (None, AI)
                      else None for m, s in seats.items()}
        fresh = Game(gid, game.mode, game.level, seats, self.now, series=series,
                     names=seat_names, seated={"X": self.now, "O": self.now}, clock=game.clock)
        stored = self.store.get(gid)
        if fresh.mode == "ai" and fresh.seats["X"] == AI:
            assert len(stored.moves) == 1
            fresh.moves, fresh.movers = list(stored.moves), [AI]
        assert list(stored.moves) == fresh.moves
        fresh.restart_clock(self.now)
        game.rematch_id, game.offer = gid, None
        if game.mode == "local" and not game.over:  # replayed mid-game: the old one is left
            game.finish = ("abandoned", None)
        self.games[gid] = fresh
        self.order.append(gid)
        return fresh

    def set_name(self, player: Player, payload: Any, *extra: Any) -> None:
        name = clean_name(payload.get("name")) if isinstance(payload, dict) else None
        answer = self._send(player, "set_name", payload, *extra)
        if name is True and not answer["ok"]:
            assert answer["error"]["code"] == "bad_request", answer
            return
        if not self._expect(answer, set() if name else {"bad_request"}, f"set_name {payload!r}"):
            return
        if name is True:
            name = unicodedata.normalize("NFKC", payload["name"]).strip()
        assert answer == {"ok": True, "name": name}
        self.names[player.pid] = name
        # The game this connection shows and the first few live games the person sits in
        # (by id); the others catch up when the person opens them (see _show).
        live = sorted(g.id for g in self.games.values()
                      if not g.over and player.pid in g.seats.values())[:RENAME_BATCH]
        for gid in dict.fromkeys([*([player.shows] if player.shows else []), *live]):
            game = self.games[gid]
            if game.mode != "local":
                for mark in game.marks_of(player.pid):
                    game.names[mark] = name

    def react(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        if not isinstance(payload, dict) or payload.get("reaction") not in REACTIONS or (
                not isinstance(payload.get("reaction"), str)):
            codes.add("bad_request")
        game = self._game_of(payload, codes)
        if game is not None:
            role = game.role(player.pid)
            if role == "spectator":
                codes.add("spectator")
            if game.mode != "friend" or None in game.seats.values():
                codes.add("not_allowed")  # a friend game that the friend has joined only
            if self.now - self.reacted.get(player.pid, float("-inf")) < REACT_EVERY:
                codes.add("rate_limited")
        self._as_can_says(player, game, "react", codes)
        answer = self._send(player, "react", payload, *extra)
        if not self._expect(answer, codes, f"react {payload!r}"):
            return
        assert game is not None
        self.reacted[player.pid] = self.now
        push = {"game": game.id, "from": role, "reaction": payload["reaction"]}
        self.reactions = {p.pid: push for p in self._connected() if p.shows == game.id}

    # --- rules: who sends what -------------------------------------------------------------------
    # Hypothesis turns whole rules off per example (swarm testing), so what players do in
    # order (sit down, play, finish, offer, answer, walk away and claim) is one rule,
    # `play_on`; the other rules are noise and the connections' comings and goings.

    def _connected(self) -> list[Player]:
        return [p for p in self.players if p.connected]

    def _target(self, data) -> Any:
        """A game id: mostly known games, sometimes unknown or malformed ones."""
        kind = data.draw(st.integers(0, 9))
        if kind <= 6 and self.order:
            return data.draw(st.sampled_from(self.order))
        if kind <= 7:
            return data.draw(shaped_ids)
        if kind == 8:
            return data.draw(odd_ids)
        return data.draw(json_values)

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data(), kind=st.sampled_from(["send_odd_new_game", "send_join", "send_any_move",
                                                "send_game_event", "send_garbage"]))
    def send_noise(self, data, kind: str) -> None:
        """Malformed, misdirected and unknown events of every kind."""
        getattr(self, kind)(data)

    def send_odd_new_game(self, data) -> None:
        payload = data.draw(odd_new_games)
        self.new_game(data.draw(st.sampled_from(self._connected())), payload)

    def send_join(self, data) -> None:
        player = data.draw(st.sampled_from(self._connected()))
        kind = data.draw(st.integers(0, 3))
        if kind == 0:
            payload: Any = {}
        elif kind == 1:
            payload = {"game": self._target(data), "unknown": data.draw(json_values)}
        elif kind == 2:
            payload = data.draw(json_values)
        else:
            payload = {"game": self._target(data)}
        self.join(player, payload)

    def send_any_move(self, data) -> None:
        player = data.draw(st.sampled_from(self._connected()))
        payload: Any = {"game": self._target(data), "cell": data.draw(cells)}
        if data.draw(st.booleans()):
            payload["version"] = data.draw(versions)
        if data.draw(st.integers(0, 9)) == 0:
            payload = data.draw(json_values)
        self.move(player, payload)

    def send_game_event(self, data) -> None:
        event = data.draw(st.sampled_from(GAME_EVENTS))
        player = data.draw(st.sampled_from(self._connected()))
        payload: Any = {"game": self._target(data)}
        if event == "react":
            payload["reaction"] = data.draw(reactions)
        if data.draw(st.integers(0, 5)) == 0:
            payload = data.draw(json_values)
        getattr(self, event)(player, payload)

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data(), name=names)
    def send_set_name(self, data, name: Any) -> None:
        payload = {"name": name}
        if data.draw(st.integers(0, 7)) == 0:
            payload = data.draw(json_values)
        self.set_name(data.draw(st.sampled_from(self._connected())), payload)

    def send_garbage(self, data) -> None:
        """Any number of arguments of any shape, to known and unknown events."""
        event = data.draw(st.sampled_from(EVENTS + UNKNOWN_EVENTS))
        args = data.draw(st.lists(json_values, max_size=3))
        player = data.draw(st.sampled_from(self._connected()))
        if event in EVENTS and args:  # the first argument is the payload; extras are ignored
            getattr(self, event)(player, *args)
        elif event in EVENTS:  # no payload at all
            self._expect(self._send(player, event), {"bad_request"}, f"{event} without payload")
        else:
            self._send(player, event, *args)

    # --- play_on: one sensible action among those possible now -----------------------------------

    def _playable(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.turn is not None and g.role(p.pid) in (g.turn, "both")]

    def _seated(self, mode: str | None = None) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.role(p.pid) != "spectator" and mode in (None, g.mode)]

    def _shown_friend_games(self) -> list[tuple[Player, Game]]:
        return [(p, self.games[p.shows]) for p in self._connected()
                if p.shows and self.games[p.shows].mode == "friend"
                and self.games[p.shows].role(p.pid) != "spectator"]

    def _finished_friend_games(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p, g in self._seated("friend")
                if g.status in ("won", "draw") and g.rematch_id is None]

    def _offers(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.offer and g.rematch_id is None and g.role(p.pid) in ("X", "O")]

    def _claimable(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p, g in self._seated("friend")
                if self._claimable_in(g, g.role(p.pid)) == 0]

    def _open_seats(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.mode == "friend" and None in g.seats.values()
                and g.role(p.pid) == "spectator"]

    def _others_games(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.id != p.shows and g.role(p.pid) == "spectator"]

    def _own_games(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p, g in self._seated() if g.id != p.shows]

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data())
    def play_on(self, data) -> None:
        """What players do: start, sit down, play, end, offer and answer, come and go, wait."""
        self._play(data)

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data())
    def keep_playing(self, data) -> None:
        """The same as play_on (swarm testing turns rules off by name: two names, more play)."""
        self._play(data)

    def _play(self, data) -> None:
        pairs = {
            "legal_move": self._playable(), "take_an_open_seat": self._open_seats(),
            "watch_a_game": self._others_games(), "go_back_to_a_game": self._own_games(),
            "send_to_own_game": self._seated(), "end_a_friend_game": self._shown_friend_games(),
            "offer_a_rematch": self._finished_friend_games(),
            "answer_an_offer": self._offers(), "claim_when_due": self._claimable(),
        }
        weights = {"legal_move": 5, "take_an_open_seat": 2, "offer_a_rematch": 2,
                   "answer_an_offer": 2, "claim_when_due": 2}
        kinds = [k for k, found in pairs.items() if found for _ in range(weights.get(k, 1))]
        kind = data.draw(st.sampled_from([*kinds, "new_game", "new_game", "wait", "leave",
                                          "name", "react"]))
        if kind == "new_game":
            return self._sensible_new_game(data)
        if kind == "wait":
            return self.time_passes(data.draw(SECONDS))
        if kind == "leave":
            return self.reconnect(data)
        if kind in ("name", "react"):
            player = data.draw(st.sampled_from(self._connected()))
            if kind == "name":
                return self.set_name(player, {"name": data.draw(names)})
            game = self.games.get(player.shows) if player.shows else None
            return self.react(player, {"game": game.id if game else data.draw(shaped_ids),
                                       "reaction": data.draw(st.sampled_from(REACTIONS))})
        player, game = data.draw(st.sampled_from(pairs[kind]))
        if kind == "legal_move":
            cell = data.draw(st.sampled_from([c for c in range(9) if c not in game.moves]))
            payload: dict[str, Any] = {"game": game.id, "cell": cell}
            if data.draw(st.booleans()):
                payload["version"] = len(game.moves)
            return self.move(player, payload)
        if kind in ("take_an_open_seat", "watch_a_game", "go_back_to_a_game"):
            return self.join(player, {"game": game.id})
        if kind == "offer_a_rematch":
            return self.rematch(player, {"game": game.id})
        if kind == "answer_an_offer":  # accept (or offer again), decline or withdraw
            event = data.draw(st.sampled_from(["rematch", "rematch", "decline"]))
            return getattr(self, event)(player, {"game": game.id})
        if kind == "claim_when_due":
            return self.claim(player, {"game": game.id})
        payload = {"game": game.id}
        if kind == "end_a_friend_game":  # what the page offers in a friend game on screen
            event = data.draw(st.sampled_from(["resign", "abort", "claim", "react", "rematch",
                                               "decline"]))
        else:  # send_to_own_game: anything about a game it sits in
            event = data.draw(st.sampled_from(["hint", "rematch", "analyze", "resign", "abort",
                                               "decline", "claim", "react", "move"]))
            if event == "analyze" and data.draw(st.booleans()):
                payload["ply"] = data.draw(st.one_of(
                    st.integers(0, len(game.moves)), st.integers(-1, len(game.moves) + 1),
                    json_values))
            if event == "move":
                payload["cell"] = data.draw(st.integers(0, 8))
        if event == "react":
            payload["reaction"] = data.draw(reactions)
        return getattr(self, event)(player, payload)

    def _sensible_new_game(self, data) -> None:
        player = data.draw(st.sampled_from(self._connected()))
        mode = data.draw(st.sampled_from([*MODES, "friend", "friend"]))
        payload: dict[str, Any] = {"mode": mode, "you": data.draw(st.sampled_from("XO")),
                                   "level": data.draw(st.sampled_from(LEVELS))}
        if data.draw(st.integers(0, 3)) == 0:  # from a position: legal or not, over or not
            payload["moves"] = data.draw(st.permutations(range(9)))[: data.draw(st.integers(0, 9))]
        if mode == "friend" and data.draw(st.integers(0, 2)) == 0:
            payload["clock"] = data.draw(st.sampled_from(CLOCKS))
        self.new_game(player, payload)

    # --- invariants ------------------------------------------------------------------------------

    @invariant()
    def every_connection_sees_the_game_now(self) -> None:
        """Every push is a view for its receiver, and every screen is up to date after it."""
        self._check_pushes()
        self._check_screens()

    def _check_pushes(self) -> None:
        """Every push went to a connection showing that game, as that receiver's view."""
        reactions, self.reactions = self.reactions, {}
        got: dict[str, dict] = {}
        for player in self._connected():
            for packet in player.sio.get_received():
                name, args = packet["name"], packet["args"]
                assert len(args) == 1, packet
                payload = args[0]
                self._no_leak(payload)
                if name == "game":
                    assert payload["id"] == player.shows, (packet, player.shows)
                    game = self.games[payload["id"]]
                    self._check_view(payload, game, game.role(player.pid))
                    self._saw(player, payload)
                elif name == "rematch":
                    old = self.games[payload["from"]]
                    assert player.shows == old.id and old.rematch_id, (packet, player.shows)
                    fresh = self.games[old.rematch_id]
                    # A page may stay on the old game (a review): its `game` push comes too.
                    self._check_view(payload["game"], fresh, fresh.role(player.pid))
                elif name == "reaction":
                    assert player.pid not in got, "two reactions pushed"
                    got[player.pid] = payload
                elif name == "record":
                    self._check_record(payload, player.pid)
                elif name == "watchers":  # the count alone (issue 41), the model's now
                    assert payload["game"] == player.shows, (packet, player.shows)
                    game = self.games[payload["game"]]
                    assert payload["watchers"] == self._watchers(game), packet
                    if player.screen is not None and player.screen[0]["id"] == game.id:
                        player.screen = ({**player.screen[0], "watchers": payload["watchers"]},
                                         player.screen[1])
                else:
                    raise AssertionError(f"unexpected push {packet}")
        assert got == reactions

    def _check_screens(self) -> None:
        """The last Game each connection got for the game it shows is that game now."""
        for player in self._connected():
            if player.shows is None:
                continue
            assert player.screen is not None, "a shown game never sent"
            seen, when = player.screen
            game = self.games[player.shows]
            # The last view shown carries the game's stored revision (PROTOCOL v3 `rev`).
            assert seen["rev"] == self.store.get(game.id).rev, (seen["rev"], game.id)
            expected = self._view(game, game.role(player.pid))
            if self.table.views.watching.waiting(game.id):  # told within its second
                seen = {**seen, "watchers": expected["watchers"]}
            now = _countdown(expected, 0.0)
            # The fields the model knows (legal and replay are in it; rev is checked above).
            then = _countdown({key: seen.get(key, "<missing>") for key in expected},
                              self.now - when)
            assert then == now, _diff(then, now)

    @invariant()
    def store_matches_the_model(self) -> None:
        stored = self.store.wrapped._games
        assert set(stored) == set(self.games), "a game appeared or vanished"
        for gid, game in self.games.items():
            match = stored[gid]
            assert list(match.moves) == game.moves, (gid, match.moves, game.moves)
            assert dict(match.seats) == game.seats
            assert (match.mode, match.level) == (game.mode, game.level)
            finish = (match.finish.termination.value, match.finish.winner) if match.finish else None
            assert finish == game.finish
            assert match.rematch_id == game.rematch_id
            assert match.offer == game.offer
            assert dict(match.hints) == game.hints
            assert match.start == game.start
            assert dict(match.names) == game.names
            assert (match.clock, match.deadline) == (game.clock, game.deadline)
        for player in self.players:
            assert self.store.current(player.pid) == self.current[player.pid]
            assert self.store.name(player.pid) == self.names.get(player.pid)

    @invariant()
    def every_game_is_consistent(self) -> None:
        for game in self.games.values():
            public = view.public(self.store.get(game.id))
            moves = public["moves"]
            assert len(set(moves)) == len(moves), f"a cell played twice: {moves}"
            assert all(type(c) is int and 0 <= c <= 8 for c in moves)
            for i in range(len(moves)):
                assert not outcome(moves[:i])[1], f"a move after the end: {moves}"
            assert public["board"] == board_of(moves)
            assert public["version"] == len(moves)
            winner, over = outcome(moves)
            board = Board.from_moves(moves)
            assert str(board) == public["board"]
            if game.finish:
                reason, by = game.finish
                assert not over and public["turn"] is None and public["line"] is None
                assert public["winner"] == by
                if reason in ABORTS:
                    assert public["status"] == "aborted" and public["reason"] is None
                    assert game.mode == "local" or game.abortable
                else:
                    assert public["status"] == "won" and public["reason"] == reason
            elif winner:
                assert public["status"] == "won" and public["winner"] == winner
                assert public["reason"] == "line" and public["turn"] is None
                assert public["line"] and all(board_of(moves)[c] == winner
                                              for c in public["line"])
                assert board.outcome().winner == winner
            elif over:
                assert public["status"] == "draw" and public["winner"] is None
                assert public["turn"] is None and public["line"] is None
            else:
                assert public["status"] == "playing" and public["winner"] is None
                assert public["turn"] == "XO"[len(moves) % 2] == board.turn
            kinds = {m: "ai" if s == AI else "open" if s is None else "human"
                     for m, s in game.seats.items()}
            assert public["seats"] == kinds
            assert public["mode"] == game.mode and public["level"] == game.level

    @invariant()
    def every_move_was_made_by_the_seat_on_turn(self) -> None:
        for game in self.games.values():
            assert len(game.movers) == len(game.moves)
            for i, mover in enumerate(game.movers):
                mark = "XO"[i % 2]
                if mover == "setup":  # preset by new_game {moves}, before anyone sat down
                    assert i < game.start
                elif mover == AI:
                    assert game.mode == "ai" and game.seats[mark] == AI
                else:
                    assert game.seats[mark] == mover, f"{mover} moved for {mark} in {game.id}"

    @invariant()
    def the_perfect_ai_never_loses(self) -> None:
        for game in self.games.values():
            if game.mode == "ai" and game.level == "perfect":
                if game.start and self._handed_a_lost_position(game):
                    continue  # "try again" from a lost position: nobody can save it
                winner, _ = outcome(game.moves)
                assert winner is None or game.seats[winner] == AI, f"perfect AI lost {game}"

    @staticmethod
    def _handed_a_lost_position(game) -> bool:
        from ttt.ai import solver

        board = Board.from_moves(game.moves[: game.start])
        ai_mark = "X" if game.seats["X"] == AI else "O"
        if board.is_over:
            return board.outcome().winner not in (None, ai_mark)
        value = solver.score(board)
        return (value if board.turn == ai_mark else -value) < 0

    @invariant()
    def records_count_the_finished_games(self) -> None:
        for player in self.players:
            self._check_record(self.store.record(player.pid), player.pid)


def _countdown(view: dict, elapsed: float) -> dict:
    """A view with its countdowns run on by `elapsed` seconds (they are not pushed as they run)."""
    view = dict(view, can=sorted(set(view["can"]) - {"claim"}))  # claim follows claimable_in
    for key in ("claimable_in", "time_left"):
        if key == "time_left" and ("open" in (view.get("seats") or {}).values()
                                   or view.get("status") != "playing"):
            continue  # not running (yet, or any more): a fixed number (PROTOCOL v5)
        if view.get(key) is not None:
            view[key] = round(max(0.0, view[key] - elapsed), 1)
    return view


def _diff(got: dict, expected: dict) -> str:
    keys = sorted(set(got) | set(expected))
    return "; ".join(f"{k}: got {got.get(k)!r}, expected {expected.get(k)!r}"
                     for k in keys if got.get(k) != expected.get(k)) + f" in {expected['id']}"


TicTacToeMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=80, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# Non-strict for now: the referee finds two server bugs (pinned below, strict, in
# test_found_*): a rematch carries stale names, and a rematch started from another page does
# not push the old game. Drop the marker with their fix.
test_events_against_the_model = pytest.mark.slow(TicTacToeMachine.TestCase)


# --- what the referee found, pinned -----------------------------------------------------------

def _table_of_two():
    """The master with a fake clock, and two players' event senders."""
    from ttt.master.limits import Limits
    from ttt.master.table import Table
    from ttt.store import open_store

    clock = Clock()
    table = Table(open_store("memory://"), Presence(MemorySeats(clock), clock), clock=clock,
                  rng=random.Random(0), limits=Limits(creations_per_minute=0))
    senders = []
    for n, pid in enumerate(("a" * 22, "b" * 22)):
        assert table.connect(f"sid{n}", pid, "10.0.0.1")
        senders.append(lambda event, sid=f"sid{n}", **payload: table.handle(event, sid, payload))
    return table, *senders


def test_found_stale_rematch_names() -> None:
    """PROTOCOL: `names` are the display names of the people seated. A rename while another
    game is on screen does not reach a finished game, and its rematch copied those names."""
    _, ana, _ = _table_of_two()
    old = ana("new_game", mode="ai", you="X", level="easy").answer["game"]["id"]
    assert ana("resign", game=old).answer["ok"]
    assert ana("new_game", mode="ai", you="X", level="easy").answer["ok"]  # on screen now
    assert ana("set_name", name="Ana").answer == {"ok": True, "name": "Ana"}
    fresh = ana("rematch", game=old).answer
    assert fresh["you"] == "O" and fresh["game"]["names"] == {"X": None, "O": "Ana"}


def test_found_old_game_not_pushed_after_rematch() -> None:
    """PROTOCOL: `game` goes to the room after every change. Ben offers a rematch and reads
    the review; Ana accepts from another game's page: the old game changed (`rematch` set,
    `offer` gone) but Ben's room gets only the `rematch` push, and his `can` still offers
    `decline`, which would be refused."""
    table, ana, ben = _table_of_two()
    old = ana("new_game", mode="friend", you="X").answer["game"]["id"]
    assert ben("join", game=old).answer["you"] == "O"
    assert ana("resign", game=old).answer["ok"]
    assert ben("rematch", game=old).answer["started"] is False
    assert ana("new_game", mode="ai", you="X", level="easy").answer["ok"]
    reply = ana("rematch", game=old)
    assert reply.answer["started"] is True
    games = [p.payload() if callable(p.payload) else p.payload for p in reply.pushes
             if p.event == "game" and p.room == f"g:{old}:O"]
    assert games and games[-1]["rematch"] == reply.answer["game"]["id"]
    assert games[-1]["offer"] is None and "decline" not in games[-1]["can"]


def test_the_referee_agrees_with_the_rules() -> None:
    """The test's own referee and solver, checked once against ttt.rules.classic."""
    rng = random.Random(7)
    for _ in range(300):
        moves: list[int] = []
        board = Board()
        while not board.is_over:
            cell = rng.choice(board.legal_moves())
            moves.append(cell)
            board = board.play(cell)
            winner, over = outcome(moves)
            assert over == board.is_over
            assert winner == (board.outcome().winner if board.outcome() else None)
    assert solve(".........") == (0, 9)
    assert judge("XX.OO....", 2, "X") == (1, 1)
    assert best_cells([0, 3, 1, 4]) == {2}
    assert clean_name("  Ana ") == "Ana" and clean_name("👩‍💻") == "👩‍💻"
    assert clean_name("a\u202eb") is None and clean_name("x" * 25) is None
    assert clean_name(" \t ") is None and clean_name(7) is None
