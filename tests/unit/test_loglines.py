"""Log lines made cheaply (ttt.runtime.loglines, issue 28): INFO lines batched, nothing lost or
reordered, WARNING at once, the direct access line the same as logging's own."""

from __future__ import annotations

import io
import logging
import os
import re
import threading
import time

import pytest

from tests.support.waiting import eventually
from ttt.runtime import loglines
from ttt.web.ops import logs


class Stream(io.StringIO):
    """A stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            self.writes += 1
            return super().write(text)


@pytest.fixture
def logger():
    made = logging.getLogger(f"ttt.test.lines.{time.monotonic_ns()}")
    made.propagate = False
    made.setLevel(logging.INFO)
    yield made
    for handler in list(made.handlers):
        made.removeHandler(handler)

def test_info_lines_are_written_in_one_batch_soon_after(logger):
    stream = Stream()
    handler = loglines.Handler(stream, every=0.05)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    for n in range(100):
        logger.info("line %d", n)
    eventually(lambda: stream.getvalue().count("\n") == 100, 10, interval=0.01)
    assert stream.getvalue().splitlines() == [f"line {n}" for n in range(100)]
    assert stream.writes < 10  # batched: not one write per line


def test_a_warning_writes_what_waits_and_itself_at_once_in_order(logger):
    stream = Stream()
    handler = loglines.Handler(stream, every=3600)  # the writer thread never gets to it
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.info("first")
    logger.info("second")
    assert stream.getvalue() == ""
    logger.warning("third")
    assert stream.getvalue().splitlines() == ["INFO first", "INFO second", "WARNING third"]


def test_flush_and_a_full_buffer_write_at_once(logger):
    stream = Stream()
    handler = loglines.Handler(stream, every=3600)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.info("waiting")
    handler.flush()  # what logging.shutdown does at exit
    assert stream.getvalue() == "waiting\n"
    big = "x" * 999
    for _ in range(handler.LIMIT // 1000 + 1):  # past LIMIT characters waiting
        logger.info(big)
    assert stream.writes == 2 and len(stream.getvalue()) > handler.LIMIT


def test_without_every_each_line_is_written_as_it_comes(logger):
    stream = Stream()
    handler = loglines.Handler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.info("now")
    assert stream.getvalue() == "now\n"


def test_a_forked_child_never_writes_its_parents_waiting_lines(logger, tmp_path):
    path = tmp_path / "lines.log"
    with open(path, "w") as stream:
        handler = loglines.Handler(stream, every=3600)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        logger.info("parent's")
        pid = os.fork()
        if pid == 0:
            logger.info("child's")
            handler.flush()
            os._exit(0)
        os.waitpid(pid, 0)
        handler.flush()
    assert sorted(path.read_text().splitlines()) == ["child's", "parent's"]


def test_the_direct_access_line_is_the_line_logging_makes(logger):
    """The served case (our handler alone) writes the line itself; with another handler on
    the way the record goes through logging. Both lines read the same."""
    access = logging.getLogger("ttt.access")
    level, propagate = access.level, access.propagate
    direct, through = Stream(), Stream()
    ours = loglines.Handler(direct)
    ours.setFormatter(logs.TextFormatter())
    access.setLevel(logging.INFO)
    access.propagate = False
    access.addHandler(ours)
    try:
        assert loglines.route(access) is ours
        logs.access("move", "g" * 22, "ok", 0.00125, "sid", {"cell": 4}, {"ok": True})
        other = loglines.Handler(through)
        other.setFormatter(logs.TextFormatter())
        access.addHandler(other)  # two handlers: logging's own walk, a record for each
        assert loglines.route(access) is None
        logs.access("move", "g" * 22, "ok", 0.00125, "sid", {"cell": 4}, {"ok": True})
    finally:
        for handler in list(access.handlers):
            access.removeHandler(handler)
        access.setLevel(level)
        access.propagate = propagate
    stamp = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "
    first, second = direct.getvalue().splitlines()
    assert re.match(stamp, first) and re.match(stamp, second)
    tail = "INFO ttt.access event=move game=" + "g" * 22 + " result=ok ms=1.25"
    assert first.split(" ", 2)[2] == second.split(" ", 2)[2] == tail
    assert through.getvalue().split(" ", 2)[2] == tail + "\n"


def test_lines_queued_by_many_threads_at_once_are_each_written_once_in_each_threads_order():
    stream = Stream()
    handler = loglines.Handler(stream, every=0.001)  # the writer drains while they queue
    threads, per_thread = 8, 3000
    start = threading.Barrier(threads)

    def queue(n: int) -> None:
        start.wait()
        for i in range(per_thread):
            handler.write_line(f"{n} {i}\n", logging.INFO)
            if i % 500 == 0:  # a warning now and then writes everything at once
                handler.write_line(f"{n} w{i}\n", logging.WARNING)

    workers = [threading.Thread(target=queue, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    handler.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == len(set(lines)) == threads * (per_thread + per_thread // 500)
    for n in range(threads):  # each thread's lines in the order it queued them
        own = [line.split()[1] for line in lines if line.split()[0] == str(n)]
        assert [x for x in own if not x.startswith("w")] == [str(i) for i in range(per_thread)]


def test_a_line_queued_as_its_making_is_made_when_written_in_its_place(capsys):
    stream = Stream()
    handler = loglines.Handler(stream, every=60)  # nothing written until flushed
    made = []

    def make(n: int) -> str:
        made.append(n)
        if n == 3:
            raise ValueError("a bad line")
        return f"made {n}\n"

    handler.write_line("first\n", logging.INFO)
    for n in range(5):
        handler.write_made(make, (n,), logging.INFO)
    assert made == [] and stream.getvalue() == ""  # queued, not made: off the caller's path
    handler.write_line("last\n", logging.INFO)
    handler.flush()
    assert made == [0, 1, 2, 3, 4]
    # A line that fails to be made is said on stderr (as logging does) and the rest go on.
    assert stream.getvalue().splitlines() == ["first", "made 0", "made 1", "made 2", "made 4",
                                              "last"]
    assert "a bad line" in capsys.readouterr().err
