"""A stateful fuzz of every Socket.IO event, checked against an independent model of the game.

Hypothesis drives two or three players (each its own cookie) through random mixes of valid
and invalid events on Flask-SocketIO's test client. A plain model, written from
PROTOCOL.md, predicts every answer: either the event succeeds, or it is refused with one of
the error codes whose condition holds (the contract fixes no order among several). After
every step the whole memory store is compared with the model, and these hold for every
game: the board is the moves applied alternately X/O, version is the number of moves, no
cell is played twice, status/winner/turn follow from the board, every move was made by the
seat on turn, a refused event changed nothing at all, records count the finished games,
and the perfect AI never loses.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ttt.rules import LINES, Board
from ttt.web import create_app, get_socketio
from ttt.web import events as events_module
from ttt.web.presence import Presence

AI = "ai"
LEVELS = ("easy", "medium", "hard", "perfect")
MODES = ("ai", "local", "friend")
CAP = 4                      # TTT_MAX_LIVE_PER_PLAYER, small so the cap is reached
CLAIM_AFTER = 60.0
URLSAFE = string.ascii_letters + string.digits + "-_"
EVENTS = ("new_game", "join", "move", "analyze", "rematch", "claim", "hint")
# "connect" and "disconnect" are left out on purpose: see test_abuse.py.
UNKNOWN_EVENTS = ("nope", "message", "game", "record", "rematch ", "MOVE", "")


# --- an independent referee -------------------------------------------------------------------

def outcome(moves: list[int]) -> tuple[str | None, bool]:
    """(winner, over) after these moves, computed without ttt.rules."""
    cells = ["."] * 9
    for i, cell in enumerate(moves):
        cells[cell] = "XO"[i % 2]
    for a, b, c in LINES:
        if cells[a] != "." and cells[a] == cells[b] == cells[c]:
            return cells[a], True
    return None, "." not in cells


def playable(moves: Any) -> bool:
    """Whether new_game may start from these moves: legal, and the game not over yet."""
    if not isinstance(moves, list) or len(moves) > 8:
        return False
    if any(type(c) is not int or not 0 <= c <= 8 for c in moves) or len(set(moves)) < len(moves):
        return False
    return not any(outcome(moves[:i])[1] for i in range(1, len(moves) + 1))


@cache
def solve(board: str) -> tuple[int, int]:
    """(result for the side to move: 1 win, 0 draw, -1 loss; plies to the end, perfect play)."""
    turn = "X" if board.count("X") == board.count("O") else "O"
    best: tuple[int, int] | None = None
    for cell in (i for i, ch in enumerate(board) if ch == "."):
        result, plies = judge(board, cell, turn)
        if best is None or (result, -plies if result > 0 else plies) > (
                best[0], -best[1] if best[0] > 0 else best[1]):
            best = (result, plies)
    assert best is not None
    return best


def judge(board: str, cell: int, turn: str) -> tuple[int, int]:
    """The mover's result and the plies to the end after `turn` plays `cell`."""
    after = board[:cell] + turn + board[cell + 1:]
    if any(after[a] == after[b] == after[c] == turn for a, b, c in LINES):
        return 1, 1
    if "." not in after:
        return 0, 1
    result, plies = solve(after)
    return -result, plies + 1


# --- the model ----------------------------------------------------------------------------------

@dataclass
class Game:
    id: str
    mode: str
    level: str | None
    seats: dict[str, str | None]             # mark -> player id, AI, or None while open
    moves: list[int] = field(default_factory=list)
    movers: list[str] = field(default_factory=list)  # who sent each move: player id or AI
    claimed_by: str | None = None
    rematch_id: str | None = None
    hints: dict[str, int] = field(default_factory=lambda: {"X": 0, "O": 0})
    start: int = 0                           # moves preset by new_game {moves}

    @property
    def over(self) -> bool:
        return self.claimed_by is not None or outcome(self.moves)[1]

    @property
    def turn(self) -> str | None:
        return None if self.over else "XO"[len(self.moves) % 2]

    def role(self, pid: str) -> str:
        if self.mode == "local" and self.seats["X"] == pid:
            return "both"
        for mark in ("X", "O"):
            if self.seats[mark] == pid:
                return mark
        return "spectator"

    def marks_of(self, pid: str) -> tuple[str, ...]:
        role = self.role(pid)
        return ("X", "O") if role == "both" else (role,) if role in ("X", "O") else ()


@dataclass
class Player:
    pid: str
    http: Any                 # its Flask test client: the cookie
    sio: Any                  # its Socket.IO test client
    connected: bool = True
    shows: str | None = None  # the game its connection shows (presence)


class Clock:
    """The presence tracker's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


# --- payload strategies -------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8,
)
shaped_ids = st.text(URLSAFE, min_size=16, max_size=64)          # no such game, right shape
odd_ids = st.one_of(st.text(max_size=70), st.text(URLSAFE, min_size=65, max_size=80),
                    st.text(URLSAFE, max_size=15))
cells = st.one_of(st.integers(0, 8), st.integers(-3, 12), json_values)
versions = st.one_of(st.integers(0, 9), st.integers(-2, 12), json_values)


class TicTacToeMachine(RuleBasedStateMachine):
    """Players on one app; the model predicts every answer and mirrors the store."""

    def __init__(self) -> None:
        super().__init__()
        self.app = create_app({"TESTING": True, "SECRET_KEY": "x", "TTT_STORE": "memory://",
                               "TTT_RATE_LIMIT": 0, "TTT_MAX_LIVE_PER_PLAYER": CAP})
        self.clock = Clock()
        self.app.extensions["ttt_presence"] = Presence(clock=self.clock)
        self.started = self.clock.now
        self.store = self.app.extensions["ttt_store"]
        self.saved_rng = events_module._rng
        events_module._rng = random.Random(0)  # the AI's dice, seeded: failures replay
        self.players: list[Player] = []
        self.games: dict[str, Game] = {}
        self.order: list[str] = []             # game ids in creation order
        self.current: dict[str, str | None] = {}
        self.holders: dict[tuple[str, str], set[str]] = {}  # (game, mark) -> player ids shown
        self.left: dict[tuple[str, str], float] = {}        # when the last holder left

    def teardown(self) -> None:
        for player in self.players:
            if player.sio.is_connected():
                player.sio.disconnect()
        events_module._rng = self.saved_rng
        self.store.close()

    # --- players and presence -----------------------------------------------------------------

    def _connect(self, http) -> Any:
        sio = get_socketio(self.app).test_client(self.app, flask_test_client=http)
        assert sio.is_connected()
        return sio

    @initialize(count=st.integers(2, 3))
    def make_players(self, count: int) -> None:
        serializer = self.app.session_interface.get_signing_serializer(self.app)
        for _ in range(count):
            http = self.app.test_client()
            assert http.get("/").status_code == 200
            pid = serializer.loads(http.get_cookie("session").value)["pid"]
            self.players.append(Player(pid, http, self._connect(http)))
            self.current[pid] = None

    def _online(self, game: Game) -> dict[str, bool]:
        return {m: game.seats[m] == AI or bool(self.holders.get((game.id, m))) for m in "XO"}

    def _away(self, game_id: str, mark: str) -> float:
        if self.holders.get((game_id, mark)):
            return 0.0
        return self.clock.now - self.left.get((game_id, mark), self.started)

    def _leave(self, player: Player) -> None:
        if player.shows is not None:
            for mark in self.games[player.shows].marks_of(player.pid):
                key = (player.shows, mark)
                self.holders.get(key, set()).discard(player.pid)
                if not self.holders.get(key):
                    self.holders.pop(key, None)
                    self.left[key] = self.clock.now
        player.shows = None

    def _show(self, player: Player, game_id: str) -> None:
        self._leave(player)
        player.shows = game_id
        for mark in self.games[game_id].marks_of(player.pid):
            self.holders.setdefault((game_id, mark), set()).add(player.pid)
        self.current[player.pid] = game_id

    @rule(data=st.data())
    def reconnect(self, data) -> None:
        """Drop a connection (presence goes offline) or bring a dropped one back."""
        player = data.draw(st.sampled_from(self.players))
        before = self._dump()
        if player.connected:
            player.sio.disconnect()
            self._leave(player)
            player.connected = False
        else:
            player.sio = self._connect(player.http)
            player.connected = True
        assert self._dump() == before

    @rule(seconds=st.sampled_from([7, 31, 61]))  # no sum of these is exactly 60
    def time_passes(self, seconds: int) -> None:
        self.clock.now += seconds

    # --- sending one event and checking the answer --------------------------------------------

    def _dump(self) -> tuple:
        games = {gid: m.to_json() for gid, m in self.store._games.items()}
        for body in games.values():
            body.pop("updated"), body.pop("created")
        pids = [p.pid for p in self.players]
        return (games, {p: self.store.current(p) for p in pids},
                {p: self.store.record(p) for p in pids})

    def _send(self, player: Player, event: str, *args: Any) -> dict | None:
        """Emit with an acknowledgement; a refused or unknown event must change nothing."""
        before = self._dump()
        answer = player.sio.emit(event, *args, callback=True)
        player.sio.get_received()
        if event not in EVENTS:
            assert player.sio.is_connected()
            assert self._dump() == before, f"unknown event {event!r} changed the store"
            return None
        assert isinstance(answer, dict) and isinstance(answer.get("ok"), bool), answer
        if not answer["ok"]:
            error = answer["error"]
            assert isinstance(error["message"], str) and error["message"]
            assert self._dump() == before, f"refused {event} {args!r} changed the store"
        return answer

    def _expect(self, answer: dict, codes: set[str], what: str) -> bool:
        """Whether the event was accepted; fails unless it matches the prediction."""
        if codes:
            assert not answer["ok"], f"{what}: expected one of {codes}, got {answer}"
            assert answer["error"]["code"] in codes, f"{what}: expected {codes}, got {answer}"
            return False
        assert answer["ok"], f"{what}: expected success, got {answer}"
        return True

    def _check_game_answer(self, public: dict, player: Player) -> None:
        game = self.games[public["id"]]
        stored = self.store.get(game.id).public()
        assert {k: v for k, v in public.items() if k != "online"} == {
            k: v for k, v in stored.items() if k != "online"}
        assert public["online"] == self._online(game), (public, self.holders)

    @staticmethod
    def _id_codes(value: Any, known: dict[str, Game]) -> set[str]:
        if not isinstance(value, str):
            return {"bad_request"}
        if value not in known:  # a string of the wrong shape may be either
            return {"bad_request", "not_found"}
        return set()

    def _live(self, pid: str) -> int:
        return sum(1 for g in self.games.values() if not g.over and pid in g.seats.values())

    def _new_games(self, before: dict) -> list[str]:
        return [gid for gid in self.store._games if gid not in before]

    # --- the events ------------------------------------------------------------------------------

    def new_game(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        if not isinstance(payload, dict):
            codes.add("bad_request")
        else:
            mode = payload.get("mode")
            if not isinstance(mode, str) or mode not in MODES:
                codes.add("bad_request")
            else:
                if mode != "local" and payload.get("you") not in ("X", "O"):
                    codes.add("bad_request")
                if mode == "ai" and payload.get("level") not in LEVELS:
                    codes.add("bad_request")
            if self._live(player.pid) >= CAP:
                codes.add("not_allowed")
            if "moves" in payload and not playable(payload["moves"]):
                codes.add("bad_request")
        known = set(self.store._games)
        answer = self._send(player, "new_game", payload, *extra)
        if not self._expect(answer, codes, f"new_game {payload!r}"):
            return
        created = [gid for gid in self.store._games if gid not in known]
        assert created == [answer["game"]["id"]]
        mode, gid = payload["mode"], created[0]
        you = payload["you"] if mode != "local" else "X"
        foe = "O" if you == "X" else "X"
        seats = {you: player.pid, foe: AI if mode == "ai" else player.pid if mode == "local"
                 else None}
        preset = list(payload.get("moves", []))
        game = Game(gid, mode, payload["level"] if mode == "ai" else None, seats,
                    moves=list(preset), movers=["setup"] * len(preset), start=len(preset))
        stored = list(self.store.get(gid).moves)
        assert stored[: len(preset)] == preset
        if mode == "ai" and game.seats[game.turn] == AI:
            assert len(stored) == len(preset) + 1, "the AI moves first when it is on turn"
            game.moves.append(stored[-1])
            game.movers.append(AI)
        assert stored == game.moves
        self.games[gid] = game
        self.order.append(gid)
        self._show(player, gid)
        assert answer["you"] == game.role(player.pid)
        self._check_game_answer(answer["game"], player)

    def join(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        elif "game" in payload:
            codes |= self._id_codes(payload["game"], self.games)
            game = self.games.get(payload["game"]) if not codes else None
        answer = self._send(player, "join", payload, *extra)
        if not self._expect(answer, codes, f"join {payload!r}"):
            return
        if game is None:  # the current game
            current = self.current[player.pid]
            if current is None:
                assert answer["game"] is None and answer["you"] == "spectator"
                return
            game = self.games[current]
        if game.mode == "friend" and game.role(player.pid) == "spectator":
            for mark in ("X", "O"):
                if game.seats[mark] is None:
                    game.seats[mark] = player.pid  # the first other player takes the open seat
                    break
        self._show(player, game.id)
        assert answer["you"] == game.role(player.pid)
        self._check_game_answer(answer["game"], player)

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
        answer = self._send(player, "move", payload, *extra)
        if not self._expect(answer, codes, f"move {payload!r}"):
            return
        assert game is not None
        stored = list(self.store.get(game.id).moves)
        mine = len(game.moves)
        assert stored[:mine + 1] == [*game.moves, payload["cell"]], "lost or reordered moves"
        game.moves.append(payload["cell"])
        game.movers.append(player.pid)
        extra = stored[mine + 1:]
        ai_due = game.mode == "ai" and not game.over
        assert len(extra) == (1 if ai_due else 0), f"AI replies {extra} (due: {ai_due})"
        if extra:
            assert extra[0] not in game.moves
            game.moves.append(extra[0])
            game.movers.append(AI)
        assert answer["game"]["moves"] == game.moves
        self._check_game_answer(answer["game"], player)

    def analyze(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        else:
            codes |= self._id_codes(payload.get("game"), self.games)
            game = self.games.get(payload["game"]) if not codes else None
            if game is not None and game.mode == "friend" and not game.over:
                codes.add("not_allowed")
            if "ply" in payload:
                ply = payload["ply"]
                if type(ply) is not int or ply < 0 or (game is not None and ply > len(game.moves)):
                    codes.add("bad_request")
        answer = self._send(player, "analyze", payload, *extra)
        if not self._expect(answer, codes, f"analyze {payload!r}"):
            return
        assert game is not None
        analysis = answer["analysis"]
        ply = payload.get("ply", len(game.moves))
        assert answer.get("version", len(game.moves)) == len(game.moves)
        assert answer.get("ply", ply) == ply
        position = game.moves[:ply]
        cells_ = ["."] * 9
        for i, cell in enumerate(position):
            cells_[cell] = "XO"[i % 2]
        board = "".join(cells_)
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
        top = max(rank[m["result"]] for m in analysis["moves"])
        assert analysis["best"] and set(analysis["best"]) <= {
            m["cell"] for m in analysis["moves"] if rank[m["result"]] == top}

    def hint(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        else:
            codes |= self._id_codes(payload.get("game"), self.games)
            game = self.games.get(payload["game"]) if not codes else None
            if game is not None:
                role = game.role(player.pid)
                if role == "spectator":
                    codes.add("spectator")
                if game.over:
                    codes.add("game_over")
                if game.mode == "friend":
                    codes.add("not_allowed")
                if role in ("X", "O") and game.turn != role:
                    codes.add("not_your_turn")
        answer = self._send(player, "hint", payload, *extra)
        if not self._expect(answer, codes, f"hint {payload!r}"):
            return
        assert game is not None and game.turn is not None
        game.hints[game.turn] += 1
        self._check_game_answer(answer["game"], player)

    def claim(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        else:
            codes |= self._id_codes(payload.get("game"), self.games)
            game = self.games.get(payload["game"]) if not codes else None
            if game is not None:
                role = game.role(player.pid)
                if role == "spectator":
                    codes.add("spectator")
                if game.over:
                    codes.add("game_over")
                if game.mode != "friend":
                    codes.add("not_allowed")
                if role in ("X", "O"):
                    if game.turn != role:
                        codes.add("not_your_turn")
                    foe = "O" if role == "X" else "X"
                    if game.seats[foe] is None or self._away(game.id, foe) < CLAIM_AFTER:
                        codes.add("not_allowed")
        answer = self._send(player, "claim", payload, *extra)
        if not self._expect(answer, codes, f"claim {payload!r}"):
            return
        assert game is not None
        game.claimed_by = game.role(player.pid)
        self._check_game_answer(answer["game"], player)
        assert answer["game"]["status"] == "won" and answer["game"]["reason"] == "claim"

    def rematch(self, player: Player, payload: Any, *extra: Any) -> None:
        codes: set[str] = set()
        game = None
        if not isinstance(payload, dict):
            codes.add("bad_request")
        else:
            codes |= self._id_codes(payload.get("game"), self.games)
            game = self.games.get(payload["game"]) if not codes else None
            if game is not None:
                if game.role(player.pid) == "spectator":
                    codes.add("spectator")
                if game.rematch_id is None:
                    if game.mode == "friend" and not game.over:
                        codes.add("not_allowed")
                    if self._live(player.pid) >= CAP:
                        codes.add("maybe_not_allowed")  # may refuse at the cap (see test_abuse)
        known = set(self.store._games)
        answer = self._send(player, "rematch", payload, *extra)
        if "maybe_not_allowed" in codes:
            codes.discard("maybe_not_allowed")
            if not answer["ok"] and answer["error"]["code"] == "not_allowed":
                return
        if not self._expect(answer, codes, f"rematch {payload!r}"):
            return
        assert game is not None
        created = [gid for gid in self.store._games if gid not in known]
        if game.rematch_id is None:
            assert created == [answer["game"]["id"]]
            fresh = Game(created[0], game.mode, game.level,
                         {"X": game.seats["O"], "O": game.seats["X"]})
            stored = self.store.get(fresh.id)
            if fresh.mode == "ai" and fresh.seats["X"] == AI:
                assert len(stored.moves) == 1
                fresh.moves, fresh.movers = list(stored.moves), [AI]
            game.rematch_id = fresh.id
            self.games[fresh.id] = fresh
            self.order.append(fresh.id)
        else:  # asked again: the same rematch
            assert created == [] and answer["game"]["id"] == game.rematch_id
        self._show(player, game.rematch_id)
        assert answer["you"] == self.games[game.rematch_id].role(player.pid)
        self._check_game_answer(answer["game"], player)

    # --- rules: who sends what -------------------------------------------------------------------

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
    @rule(data=st.data(), mode=st.sampled_from(MODES), you=st.sampled_from("XO"),
          level=st.sampled_from(LEVELS))
    def send_new_game(self, data, mode: str, you: str, level: str) -> None:
        player = data.draw(st.sampled_from(self._connected()))
        payload: dict[str, Any] = {"mode": mode, "you": you, "level": level}
        if data.draw(st.integers(0, 3)) == 0:  # from a position: legal or not, over or not
            payload["moves"] = data.draw(st.permutations(range(9)))[: data.draw(st.integers(0, 9))]
        self.new_game(player, payload)

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data(), payload=st.one_of(
        json_values,
        st.fixed_dictionaries({}, optional={"mode": st.sampled_from(MODES) | json_values,
                                            "you": st.sampled_from(["X", "O", "x", "both"])
                                            | json_values,
                                            "level": st.sampled_from(LEVELS) | json_values,
                                            "moves": st.lists(st.integers(-1, 9), max_size=10)
                                            | json_values,
                                            "extra": json_values})))
    def send_odd_new_game(self, data, payload: Any) -> None:
        self.new_game(data.draw(st.sampled_from(self._connected())), payload)

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data())
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

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data())
    def send_any_move(self, data) -> None:
        player = data.draw(st.sampled_from(self._connected()))
        payload: Any = {"game": self._target(data), "cell": data.draw(cells)}
        if data.draw(st.booleans()):
            payload["version"] = data.draw(versions)
        if data.draw(st.integers(0, 9)) == 0:
            payload = data.draw(json_values)
        self.move(player, payload)

    def _playable(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.turn is not None and g.role(p.pid) in (g.turn, "both")]

    @precondition(lambda self: bool(self._playable()))
    @rule(data=st.data())
    def send_legal_move(self, data) -> None:
        """A move by the player on turn, as a real client sends it."""
        player, game = data.draw(st.sampled_from(self._playable()))
        cell = data.draw(st.sampled_from([c for c in range(9) if c not in game.moves]))
        payload = {"game": game.id, "cell": cell}
        if data.draw(st.booleans()):
            payload["version"] = len(game.moves)
        self.move(player, payload)

    @precondition(lambda self: bool(self._playable()))
    @rule(data=st.data())
    def send_legal_move_again(self, data) -> None:
        self.send_legal_move(data)

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data(), event=st.sampled_from(["analyze", "rematch", "claim", "hint"]))
    def send_game_event(self, data, event: str) -> None:
        player = data.draw(st.sampled_from(self._connected()))
        payload: Any = {"game": self._target(data)}
        if data.draw(st.integers(0, 5)) == 0:
            payload = data.draw(json_values)
        getattr(self, event)(player, payload)

    def _seated(self, mode: str | None = None) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.role(p.pid) != "spectator" and mode in (None, g.mode)]

    @precondition(lambda self: bool(self._seated()))
    @rule(data=st.data(), event=st.sampled_from(["hint", "rematch", "analyze"]))
    def send_to_own_game(self, data, event: str) -> None:
        """The events a player sends about a game it sits in."""
        player, game = data.draw(st.sampled_from(self._seated()))
        payload: dict[str, Any] = {"game": game.id}
        if event == "analyze" and data.draw(st.booleans()):
            payload["ply"] = data.draw(st.one_of(
                st.integers(0, len(game.moves)), st.integers(0, len(game.moves)),
                st.integers(-1, len(game.moves) + 1), json_values))
        getattr(self, event)(player, payload)

    @precondition(lambda self: bool(self._seated("friend")))
    @rule(data=st.data())
    def send_claim(self, data) -> None:
        player, game = data.draw(st.sampled_from(self._seated("friend")))
        self.claim(player, {"game": game.id})

    def _open_seats(self) -> list[tuple[Player, Game]]:
        return [(p, g) for p in self._connected() for g in self.games.values()
                if g.mode == "friend" and None in g.seats.values()
                and g.role(p.pid) == "spectator"]

    @precondition(lambda self: bool(self._open_seats()))
    @rule(data=st.data())
    def take_an_open_seat(self, data) -> None:
        player, game = data.draw(st.sampled_from(self._open_seats()))
        self.join(player, {"game": game.id})

    @precondition(lambda self: any(p.connected for p in self.players))
    @rule(data=st.data(), event=st.sampled_from(EVENTS + UNKNOWN_EVENTS),
          args=st.lists(json_values, max_size=3))
    def send_garbage(self, data, event: str, args: list) -> None:
        """Any number of arguments of any shape, to known and unknown events."""
        player = data.draw(st.sampled_from(self._connected()))
        if event in EVENTS and args:  # the first argument is the payload; extras are ignored
            getattr(self, event)(player, *args)
        elif event in EVENTS:  # no payload at all
            self._expect(self._send(player, event), {"bad_request"}, f"{event} without payload")
        else:
            self._send(player, event, *args)

    # --- invariants ------------------------------------------------------------------------------

    @invariant()
    def store_matches_the_model(self) -> None:
        stored = self.store._games
        assert set(stored) == set(self.games), "a game appeared or vanished"
        for gid, game in self.games.items():
            match = stored[gid]
            assert list(match.moves) == game.moves, (gid, match.moves, game.moves)
            assert dict(match.seats) == game.seats
            assert (match.mode, match.level) == (game.mode, game.level)
            assert match.claimed_by == game.claimed_by
            assert match.rematch_id == game.rematch_id
            assert dict(match.hints) == game.hints
            assert getattr(match, "start", 0) == game.start
        for player in self.players:
            assert self.store.current(player.pid) == self.current[player.pid]

    @invariant()
    def every_game_is_consistent(self) -> None:
        for game in self.games.values():
            public = self.store.get(game.id).public()
            moves = public["moves"]
            assert len(set(moves)) == len(moves), f"a cell played twice: {moves}"
            assert all(type(c) is int and 0 <= c <= 8 for c in moves)
            for i in range(len(moves)):
                assert not outcome(moves[:i])[1], f"a move after the end: {moves}"
            cells_ = ["."] * 9
            for i, cell in enumerate(moves):
                cells_[cell] = "XO"[i % 2]
            assert public["board"] == "".join(cells_)
            assert public["version"] == len(moves)
            winner, over = outcome(moves)
            board = Board.from_moves(moves)
            assert str(board) == public["board"]
            if game.claimed_by:
                assert not over and public["status"] == "won" and public["reason"] == "claim"
                assert public["winner"] == game.claimed_by and public["turn"] is None
            elif winner:
                assert public["status"] == "won" and public["winner"] == winner
                assert public["reason"] == "line" and public["turn"] is None
                assert public["line"] and all(cells_[c] == winner for c in public["line"])
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
        from ttt import solver
        from ttt.rules import Board

        board = Board.from_moves(game.moves[: game.start])
        ai_mark = "X" if game.seats["X"] == AI else "O"
        if board.is_over:
            return board.outcome().winner not in (None, ai_mark)
        value = solver.score(board)
        return (value if board.turn == ai_mark else -value) < 0

    @invariant()
    def records_count_the_finished_games(self) -> None:
        for player in self.players:
            expected = {level: {"wins": 0, "draws": 0, "losses": 0} for level in LEVELS}
            for game in self.games.values():
                if game.mode != "ai" or not game.over or game.start:
                    continue  # a game from a preset position does not count
                for mark in "XO":
                    if game.seats[mark] == player.pid:
                        winner, _ = outcome(game.moves)
                        key = "draws" if winner is None else "wins" if winner == mark \
                            else "losses"
                        expected[game.level][key] += 1
            assert self.store.record(player.pid) == expected


TicTacToeMachine.TestCase.settings = settings(
    max_examples=75, stateful_step_count=50, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_events_against_the_model = TicTacToeMachine.TestCase


def test_the_referee_agrees_with_the_rules() -> None:
    """The test's own referee and solver, checked once against ttt.rules."""
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
