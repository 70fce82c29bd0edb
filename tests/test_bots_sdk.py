"""The SDK's runner against a fake API: what it sends for what it is sent."""

from __future__ import annotations

from ttt.bots.sdk import Runner


class FakeApi:
    """Records calls; answers challenges with a game whose second seat is open."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def challenge(self, opponent, variant="classic", you=None, clock=None, rated=True):
        self.calls.append(("challenge", opponent))
        return {"ok": True, "game": {"id": f"g{len(self.calls)}", "status": "playing",
                                     "seats": {"X": "human", "O": "open"}, "can": [],
                                     "rev": 0, "you": "X"}}

    def move(self, game_id, cell):
        self.calls.append(("move", (game_id, cell)))
        return {"ok": True}

    def call(self, path, body=None, method="POST"):
        self.calls.append(("call", path))
        return {"ok": True, "game": {"id": path.split("/")[4], "status": "aborted",
                                     "seats": {"X": "human", "O": "open"}, "you": "X"}}


def view(rev: int, can=("move",), status="playing") -> dict:
    return {"id": "g", "rev": rev, "can": list(can), "status": status, "you": "X",
            "seats": {"X": "human", "O": "ai"}, "winner": None, "board": "." * 9,
            "legal": list(range(9))}


def test_the_runner_answers_each_revision_once_and_counts_each_game_once():
    api = FakeApi()
    runner = Runner(api, lambda game: game["legal"][0])
    for game in (view(1), view(1), view(0), view(3), view(4, can=[], status="draw"),
                 view(4, can=[], status="draw")):
        runner._game(game)
    assert [c for c in api.calls if c[0] == "move"] == [("move", ("g", 0))] * 2
    assert (runner.tally.draws, runner.tally.games) == (1, 1)


def test_an_untaken_challenge_to_a_bot_is_withdrawn_and_the_next_one_follows():
    api = FakeApi()
    runner = Runner(api, lambda game: 0, schedule=["bot:busy", "bot:busy"])
    runner.challenge_wait = 0.0
    runner._start_more()
    assert api.calls == [("challenge", "bot:busy")]
    runner._withdraw_stale()
    runner._handle(runner.events.get_nowait())
    assert api.calls[1] == ("call", "/api/bot/game/g1/abort")
    assert runner.tally.aborted == 1
    runner._start_more()
    assert api.calls[-1] == ("challenge", "bot:busy") and not runner.schedule


def test_a_link_waits_for_its_person():
    api = FakeApi()
    runner = Runner(api, lambda game: 0, schedule=["link"])
    runner.challenge_wait = 0.0
    runner._start_more()
    runner._withdraw_stale()
    assert api.calls == [("challenge", "link")]
