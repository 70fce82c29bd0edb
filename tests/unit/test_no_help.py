"""No engine help in a live friend game through a copy of it (issue 41): a pass-and-play game
made from the friend game's moves gets no analysis or hint while the friend game is on."""

from __future__ import annotations

from tests.unit.test_table import Person, friends


def test_a_local_copy_of_a_live_friend_game_gets_no_analysis(table):
    ana, ben, gid = friends(table)
    for who, cell in ((ana, 0), (ben, 4), (ana, 8)):
        who.ok("move", game=gid, cell=cell)
    copy = ben.ok("new_game", mode="local", moves=[0, 4, 8]).answer["game"]["id"]
    assert ben.code("analyze", game=copy) == "not_allowed"
    assert ben.code("hint", game=copy) == "not_allowed"
    # Reached in another order, the same position is refused too.
    other = ben.ok("new_game", mode="local", moves=[8, 4, 0]).answer["game"]["id"]
    assert ben.code("analyze", game=other) == "not_allowed"
    # Another position, or somebody not in the friend game, is judged as before.
    stranger = Person(table)
    assert stranger.ok("analyze", game=stranger.ok("new_game", mode="local",
                                                   moves=[0, 4, 8]).answer["game"]["id"])
    assert ben.ok("analyze", game=ben.ok("new_game", mode="local",
                                         moves=[0, 4]).answer["game"]["id"])
    ben.ok("resign", game=gid)  # once the friend game is over, its position is judged
    assert ben.ok("analyze", game=ben.ok("new_game", mode="local",
                                         moves=[0, 4, 8]).answer["game"]["id"])
