"""Protocol version 3 view fields: rev, legal, replay, and the config the page gets."""

import json
import re

from tests.server.inprocess.test_events import call, new_game
from ttt.game.match import CLOCKS
from ttt.master.views import REACTIONS


def test_view_carries_rev_legal_and_replay(sio):
    game = new_game(sio)["game"]
    assert game["legal"] == list(range(9)) and game["replay"] is None
    first_rev = game["rev"]
    after = call(sio, "move", {"game": game["id"], "cell": 4})["game"]
    assert after["rev"] > first_rev
    assert 4 not in after["legal"] and after["moves"][1] not in after["legal"]
    assert len(after["legal"]) == 7
    assert after["replay"] == "/r/" + "".join(map(str, after["moves"]))


def test_legal_is_empty_for_the_side_not_on_move(make_player):
    ana, ben = make_player(), make_player()
    game = new_game(ana, mode="friend", you="X")["game"]
    joined = call(ben, "join", {"game": game["id"]})["game"]
    assert joined["you"] == "O" and joined["legal"] == []


def test_ultimate_legal_follows_the_board_sent_to(sio):
    game = new_game(sio, mode="local", variant="ultimate")["game"]
    assert len(game["legal"]) == 81
    after = call(sio, "move", {"game": game["id"], "cell": 40})["game"]  # board 4, cell 4
    assert after["next"] == 4 and after["legal"] == [36 + c for c in range(9) if c != 4]
    assert after["replay"] == "/r/u/40"


def test_config_is_served_and_rendered_from_the_server_constants(app, client):
    config = client.get("/api/config").get_json()
    assert config["variants"]["classic"]["levels"] == ["easy", "medium", "hard", "perfect"]
    assert config["variants"]["ultimate"]["levels"] == ["easy", "medium", "hard"]
    assert config["modes"] == ["ai", "local", "friend"]
    assert config["clocks"] == list(CLOCKS) and config["reactions"] == list(REACTIONS)
    assert config["claim_after"] == app.config["TTT_CLAIM_AFTER"]
    page = client.get("/").get_data(as_text=True)
    embedded = re.search(r'<script type="application/json" id="config">(.*?)</script>', page)
    assert embedded
    rendered = json.loads(embedded.group(1))
    # The page's copy also carries its words, in the player's language only (issue 35).
    assert rendered.pop("words")["lang"] == "en"
    assert rendered == config
