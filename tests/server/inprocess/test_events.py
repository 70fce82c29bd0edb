"""Every Socket.IO event and error code, through Flask-SocketIO's test client."""

import pytest

from ttt.web import get_socketio

AI_PERFECT_X = {"mode": "ai", "you": "X", "level": "perfect"}


def call(sio, event, payload=None):
    return sio.emit(event, payload, callback=True)


def error_code(answer):
    assert answer["ok"] is False, answer
    assert answer["error"]["message"]
    return answer["error"]["code"]


def pushes(sio, name):
    return [m["args"][0] for m in sio.get_received() if m["name"] == name]


def new_game(sio, **payload):
    answer = call(sio, "new_game", payload or AI_PERFECT_X)
    assert answer["ok"], answer
    return answer


def test_connection_without_session_cookie_is_refused(app):
    sio = get_socketio(app).test_client(app)
    assert not sio.is_connected()


def test_page_sets_an_httponly_samesite_session_cookie(client):
    cookie = client.get("/").headers["Set-Cookie"]
    assert "session=" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_join_without_a_game_answers_null(sio):
    answer = call(sio, "join", {})
    assert answer["ok"] and answer["game"] is None
    assert {"easy", "medium", "hard", "perfect"} <= set(answer["record"])
    assert {"ultimate-easy", "ultimate-medium", "ultimate-hard"} <= set(answer["record"])


def test_new_ai_game_has_the_protocol_shape(sio):
    answer = new_game(sio)
    game = answer["game"]
    assert answer["you"] == "X"
    assert {"id", "mode", "level", "board", "turn", "status", "winner", "reason", "line",
            "moves", "seats", "online", "version"} <= set(game)
    assert game["board"] == "........." and game["turn"] == "X" and game["version"] == 0
    assert game["seats"] == {"X": "human", "O": "ai"} and game["online"] == {"X": True, "O": True}
    assert len(game["id"]) >= 22


def test_playing_o_against_the_ai_finds_its_opening_move_on_the_board(sio):
    game = new_game(sio, mode="ai", you="O", level="perfect")["game"]
    assert game["version"] == 1 and game["turn"] == "O" and game["board"].count("X") == 1


@pytest.mark.parametrize("payload", [
    {"mode": "chess"}, {"mode": "ai", "you": "X"}, {"mode": "ai", "you": "Z", "level": "easy"},
    {"mode": "ai", "you": "X", "level": "godlike"}, {"mode": "friend"}, {}, [], "ai", 5, None,
    {"mode": ["ai"], "you": "X", "level": "easy"},
])
def test_new_game_refuses_malformed_payloads(sio, payload):
    assert error_code(call(sio, "new_game", payload)) == "bad_request"


def test_move_answers_with_the_ai_reply_and_the_position_before_it(sio):
    game = new_game(sio)["game"]
    answer = call(sio, "move", {"game": game["id"], "cell": 4})
    assert answer["ok"]
    assert answer["played"]["board"] == "....X...." and answer["played"]["turn"] == "O"
    assert answer["game"]["version"] == 2 and answer["game"]["moves"][0] == 4
    assert answer["game"]["turn"] == "X"


@pytest.mark.parametrize("payload", [
    {"cell": 4}, {"game": 5, "cell": 4}, {"game": "short", "cell": 4}, {"game": "ID", "cell": 9},
    {"game": "ID", "cell": -1}, {"game": "ID", "cell": "4"}, {"game": "ID", "cell": 4.0},
    {"game": "ID", "cell": True}, {"game": "ID", "cell": None}, {"game": "ID"},
    {"game": "ID", "cell": 4, "version": "1"}, {"game": "ID", "cell": 4, "version": -1},
])
def test_move_refuses_malformed_payloads(sio, payload):
    game = new_game(sio)["game"]
    full = {**payload, "game": game["id"]} if payload.get("game") == "ID" else payload
    assert error_code(call(sio, "move", full)) == "bad_request"
    assert call(sio, "join", {"game": game["id"]})["game"]["version"] == 0


def test_move_errors_not_found_occupied_stale_and_game_over(sio):
    assert error_code(call(sio, "move", {"game": "x" * 22, "cell": 0})) == "not_found"
    game = new_game(sio, mode="local")["game"]
    gid = game["id"]
    assert call(sio, "move", {"game": gid, "cell": 0})["ok"]
    assert error_code(call(sio, "move", {"game": gid, "cell": 0})) == "occupied"
    assert error_code(call(sio, "move", {"game": gid, "cell": 1, "version": 0})) == "stale"
    for cell in (3, 1, 4, 2):
        assert call(sio, "move", {"game": gid, "cell": cell})["ok"]
    assert error_code(call(sio, "move", {"game": gid, "cell": 8})) == "game_over"


def test_someone_elses_ai_game_is_spectated_not_played(make_player):
    alice, mallory = make_player(), make_player()
    game = new_game(alice)["game"]
    answer = call(mallory, "join", {"game": game["id"]})
    assert answer["ok"] and answer["you"] == "spectator"
    assert error_code(call(mallory, "move", {"game": game["id"], "cell": 0})) == "spectator"
    assert error_code(call(mallory, "rematch", {"game": game["id"]})) == "spectator"


def test_a_second_tab_of_the_same_player_gets_the_current_game_and_its_pushes(app, client,
                                                                               make_player):
    first = make_player(client)
    second = make_player(client)  # same cookie: the same player
    game = new_game(first)["game"]
    answer = call(second, "join", {})
    assert answer["game"]["id"] == game["id"] and answer["you"] == "X"
    second.get_received()
    call(first, "move", {"game": game["id"], "cell": 0})
    boards = [g["board"] for g in pushes(second, "game")]
    assert boards and boards[-1].startswith("X")


def test_the_sender_gets_no_game_push_of_its_own_move(sio):
    game = new_game(sio)["game"]
    sio.get_received()
    call(sio, "move", {"game": game["id"], "cell": 0})
    assert pushes(sio, "game") == []


def test_not_your_turn_in_a_friend_game(make_player):
    alice, bob = make_player(), make_player()
    game = new_game(alice, mode="friend", you="X")["game"]
    assert game["seats"] == {"X": "human", "O": "open"}
    joined = call(bob, "join", {"game": game["id"]})
    assert joined["you"] == "O" and joined["game"]["seats"]["O"] == "human"
    assert error_code(call(bob, "move", {"game": game["id"], "cell": 0})) == "not_your_turn"


def test_analyze_judges_every_legal_move_for_the_player_to_move(sio):
    game = new_game(sio, mode="local")["game"]
    for cell in (0, 3, 1, 4):
        call(sio, "move", {"game": game["id"], "cell": cell})
    analysis = call(sio, "analyze", {"game": game["id"]})["analysis"]
    assert analysis["turn"] == "X" and analysis["best"] == [2]
    by_cell = {m["cell"]: m for m in analysis["moves"]}
    assert set(by_cell) == {2, 5, 6, 7, 8}
    assert by_cell[2] == {"cell": 2, "result": "win", "plies": 1}
    assert by_cell[8]["result"] == "loss"


def test_analyze_refuses_a_friend_game_in_play(make_player):
    alice = make_player()
    game = new_game(alice, mode="friend", you="X")["game"]
    assert error_code(call(alice, "analyze", {"game": game["id"]})) == "not_allowed"
    assert error_code(call(alice, "analyze", {"game": "y" * 22})) == "not_found"


def test_rematch_swaps_sides_keeps_the_level_and_becomes_current(sio):
    game = new_game(sio, mode="ai", you="X", level="medium")["game"]
    answer = call(sio, "rematch", {"game": game["id"]})
    assert answer["ok"] and answer["you"] == "O"
    fresh = answer["game"]
    assert fresh["id"] != game["id"] and fresh["level"] == "medium" and fresh["version"] == 1
    assert call(sio, "join", {})["game"]["id"] == fresh["id"]
    again = call(sio, "rematch", {"game": game["id"]})
    assert again["game"]["id"] == fresh["id"]  # one rematch per game, however often asked


def test_claim_is_not_allowed_against_the_ai_or_while_the_friend_is_online(make_player):
    alice, bob = make_player(), make_player()
    ai = new_game(alice)["game"]
    assert error_code(call(alice, "claim", {"game": ai["id"]})) == "not_allowed"
    game = new_game(alice, mode="friend", you="X")["game"]
    call(bob, "join", {"game": game["id"]})
    assert error_code(call(alice, "claim", {"game": game["id"]})) == "not_allowed"


def test_a_finished_game_against_the_ai_updates_the_record(sio, make_player):
    game = new_game(sio, mode="ai", you="X", level="perfect")["game"]
    answer = None
    while game["status"] == "playing":
        cell = game["board"].index(".")
        answer = call(sio, "move", {"game": game["id"], "cell": cell})
        game = answer["game"]
    assert game["winner"] != "X"
    record = answer["record"]["perfect"]
    assert record["wins"] == 0 and record["draws"] + record["losses"] == 1
    assert call(sio, "join", {})["record"] == answer["record"]


def test_rate_limit_refuses_bursts(app, make_player):
    app.config["TTT_RATE_LIMIT"] = 5
    sio = make_player()
    codes = [call(sio, "join", {}).get("error", {}).get("code") for _ in range(30)]
    assert "rate_limited" in codes and codes[0] is None


def test_unknown_events_and_garbage_never_disconnect(sio):
    sio.emit("no_such_event", {"x": 1})
    assert error_code(call(sio, "move", {"game": "a" * 10_000, "cell": 0})) == "bad_request"
    assert sio.is_connected()
    assert call(sio, "join", {})["ok"]


def test_healthz_and_security_headers(client):
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json == {"ok": True, "parts": {"store": "up"}}
    page = client.get("/")
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"]


def test_share_page_and_qr_code(client, stored_game):
    assert client.get("/g/" + stored_game).status_code == 200
    assert client.get("/g/bad!id").status_code == 404
    qr = client.get("/g/" + "a" * 22 + "/qr.svg")
    assert qr.status_code == 200 and qr.mimetype == "image/svg+xml" and b"<svg" in qr.data


def test_a_dead_game_link_is_a_friendly_404_with_a_way_to_a_new_game(client):
    page = client.get("/g/" + "b" * 22)
    assert page.status_code == 404
    text = page.get_data(as_text=True)
    assert "This game link has expired, or it never existed." in text
    assert "Start a new game" in text and 'href="/"' in text


def test_replay_link_opens_a_read_only_replay_and_bad_ones_get_a_404_page(client):
    page = client.get("/r/40812")
    assert page.status_code == 200 and b"data-replay" in page.data
    assert b"&#34;positions&#34;: [&#34;.........&#34;, &#34;....X....&#34;" in page.data
    for bad in ("448", "abc", "0123456789", "012345678", "9"):
        missing = client.get(f"/r/{bad}")
        assert missing.status_code == 404 and b"Nothing here" in missing.data


def test_try_again_from_a_position_starts_there_and_is_not_recorded(sio):
    answer = call(sio, "new_game", {"mode": "ai", "you": "O", "level": "perfect",
                                    "moves": [4, 0, 8]})
    game = answer["game"]
    assert game["moves"][:3] == [4, 0, 8] and game["start"] == 3 and game["turn"] == "O"
    while game["status"] == "playing":
        game = call(sio, "move", {"game": game["id"], "cell": game["board"].index(".")})["game"]
    assert sum(call(sio, "join", {})["record"]["perfect"].values()) == 0
    for moves in ([4, 4], [0, 3, 1, 4, 2], "048", [9], [True]):
        bad = call(sio, "new_game", {"mode": "ai", "you": "X", "level": "easy", "moves": moves})
        assert error_code(bad) == "bad_request"


def test_analyze_after_the_game_gives_positions_and_the_first_mistakes(sio):
    game = new_game(sio, mode="local")["game"]
    for cell in (0, 1, 4, 2, 8):  # O's 1 is a mistake: it lets X win
        game = call(sio, "move", {"game": game["id"], "cell": cell})["game"]
    answer = call(sio, "analyze", {"game": game["id"]})
    assert answer["positions"][0] == "........." and answer["positions"][-1] == game["board"]
    assert answer["review"]["X"] is None
    assert answer["review"]["O"]["cell"] == 1 and answer["review"]["O"]["best"] == [4]


def test_hint_gives_the_best_moves_and_counts_it(sio):
    game = new_game(sio, mode="local")["game"]
    for cell in (0, 3, 1, 4):
        call(sio, "move", {"game": game["id"], "cell": cell})
    answer = call(sio, "hint", {"game": game["id"]})
    assert answer["best"] == [2] and answer["game"]["hints"] == {"X": 1, "O": 0}


def test_analyze_a_past_position_of_a_finished_game_by_ply(sio):
    game = new_game(sio, mode="local")["game"]
    for cell in (0, 1, 4, 2, 8):
        call(sio, "move", {"game": game["id"], "cell": cell})
    answer = call(sio, "analyze", {"game": game["id"], "ply": 1})
    assert answer["ply"] == 1 and answer["version"] == 5
    assert answer["analysis"]["turn"] == "O" and answer["analysis"]["best"] == [4]
    assert error_code(call(sio, "analyze", {"game": game["id"], "ply": 6})) == "bad_request"
    assert error_code(call(sio, "analyze", {"game": game["id"], "ply": "1"})) == "bad_request"


def test_a_move_after_the_time_ran_out_reaches_the_mover_with_the_ending(app, make_player):
    """The refusal carries the ended game, and the mover's own connection gets its push."""
    from ttt.web import get_table

    table = get_table(app)
    now = [1_000_000.0]
    table.clock = lambda: now[0]
    alice, bob = make_player(), make_player()
    game = new_game(alice, mode="friend", you="X", clock=10)["game"]
    call(bob, "join", {"game": game["id"]})
    call(alice, "move", {"game": game["id"], "cell": 4})
    call(bob, "move", {"game": game["id"], "cell": 0})
    alice.get_received()
    now[0] += 11  # X's 10 s ran out; the server's tick has not run
    late = call(alice, "move", {"game": game["id"], "cell": 8})
    assert error_code(late) == "game_over"
    assert late["game"]["reason"] == "time" and late["game"]["you"] == "X"
    pushed = pushes(alice, "game")
    assert pushed and pushed[-1]["status"] == "won" and pushed[-1]["winner"] == "O"


def test_a_store_fault_while_a_push_is_built_is_answered_unavailable(app, make_player,
                                                                     monkeypatch):
    """A push body that reads the store (the record pushed to the player's other tabs) is
    built inside the handler's guarded section: the store going away there is the sender's
    `unavailable` answer, never an exception out of the handler."""
    from ttt.store import StoreUnavailable

    flask_client = app.test_client()
    tab = make_player(flask_client)
    other_tab = make_player(flask_client)  # the same person: the record is pushed to it
    game = new_game(tab)["game"]
    store = app.extensions["ttt_table"].store
    record, reads = store.record, []

    def record_then_fail(player):
        reads.append(player)
        if len(reads) > 1:  # the answer's read works; the push body's read finds it away
            raise StoreUnavailable("gone")
        return record(player)

    monkeypatch.setattr(store, "record", record_then_fail)
    answer = call(tab, "resign", {"game": game["id"]})
    assert len(reads) == 2, reads  # the push to the other tab was built
    assert error_code(answer) == "unavailable"
    assert other_tab.is_connected()
