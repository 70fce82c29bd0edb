"""Issue 45: a warning that repeats through an outage is folded: the first line, one a
minute with a count, then "back" with the episode's length."""

from __future__ import annotations

import logging

from ttt.runtime import loglines


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_of_thousands_of_warnings_is_a_few_lines(caplog):
    clock, log = Clock(), logging.getLogger("test.fold")
    fold = loglines.Fold(log, "limits not checked, Redis unavailable", clock=clock)
    with caplog.at_level(logging.WARNING, "test.fold"):
        fold.ok()  # nothing wrong: nothing said
        for step in range(13_324):  # 32 s at ~400 a second, then the clock goes on
            clock.now = 1000.0 + step * 0.01
            fold.failed("Connection refused")
        assert fold.down
        fold.ok()
        fold.ok()
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "limits not checked, Redis unavailable: Connection refused"
    assert lines[1].startswith("limits not checked, Redis unavailable (6000 times in 60 s, ")
    assert lines[2].startswith("limits not checked, Redis unavailable (6000 times in 60 s, ")
    assert lines[3] == "limits not checked, Redis unavailable: back after 133.2 s (13324 times)"
    assert len(lines) == 4 and not fold.down


def test_a_second_episode_starts_with_its_own_first_line(caplog):
    clock, log = Clock(), logging.getLogger("test.fold")
    fold = loglines.Fold(log, "store down", clock=clock)
    with caplog.at_level(logging.WARNING, "test.fold"):
        fold.failed("disk full")
        clock.now += 5
        fold.ok()
        clock.now += 1
        fold.failed("disk full")
    assert [r.getMessage() for r in caplog.records] == [
        "store down: disk full", "store down: back after 5.0 s (1 times)",
        "store down: disk full"]
