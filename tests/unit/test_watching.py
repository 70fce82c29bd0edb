"""Watching is cheap (issue 41): re-joining changes nothing, a crowd of spectators coming and
going costs each player at most one small push a second, and never a whole game."""

from __future__ import annotations

from tests.unit.test_table import Person, friends
from ttt.master.replies import Reply, room


def _from_watching(pushes, gid: str) -> list:
    return [p for p in pushes if p.room.startswith(f"g:{gid}:")]


def test_rejoining_the_game_you_watch_changes_nothing(table):
    ana, ben, gid = friends(table)
    cy = Person(table)
    cy.ok("join", game=gid)
    for _ in range(5):
        assert cy.ok("join", game=gid).pushes == []
        again = cy.ok("join")  # the current game: the one watched
        assert again.answer["game"]["id"] == gid and again.pushes == []
    assert table.presence.watchers(gid) == 1


def test_sixty_spectators_rejoining_cost_players_one_small_push_a_second(table, clock):
    ana, ben, gid = friends(table)
    crowd = [Person(table) for _ in range(60)]
    other = ana.ok("new_game", mode="friend", you="X").answer["game"]["id"]  # somewhere else
    ana.ok("join", game=gid)
    per_second: list[list] = []
    for second in range(3):
        sent: list = []
        for step in range(53):  # 53 joins a second, each spectator coming and going
            spectator = crowd[(second * 53 + step) % len(crowd)]
            target = gid if step % 2 == 0 else other
            sent += _from_watching(spectator.ok("join", game=target).pushes, gid)
            sent += _from_watching(spectator.leave().pushes, gid) if step % 7 == 0 else []
            if step % 7 == 0:
                assert table.connect(spectator.sid, spectator.player, "10.0.0.1")
            clock.now += 1 / 53
        sent += _from_watching(table.tick(), gid)
        per_second.append(sent)
    for sent in per_second:
        assert all(p.event == "watchers" for p in sent), [p.event for p in sent]
        to_x = [p for p in sent if p.room == room(gid, "X")]
        assert len(to_x) <= 2, len(to_x)  # one a second (a boundary may fall inside it)
    assert sum(len([p for p in s if p.room == room(gid, "X")]) for s in per_second) <= 4
    clock.now += 1
    last = Reply({}, table.tick())
    told = [p.body() for p in last.pushes if p.room == room(gid, "X")] or [None]
    assert told[-1] in (None, {"game": gid, "watchers": table.presence.watchers(gid)})
