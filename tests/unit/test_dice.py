"""The AI's dice (ttt.ai.randomness): SystemRandom's draws, fair, one system call per many draws."""

from __future__ import annotations

import os
import threading
from collections import Counter

import pytest

from ttt.ai import randomness
from ttt.ai.randomness import Dice


def test_draws_are_in_range_and_fair_enough():
    rng = Dice()
    faces = Counter(rng.choice("abcdef") for _ in range(60_000))
    assert set(faces) == set("abcdef")
    assert all(9_000 < n < 11_000 for n in faces.values()), faces  # 10,000 ± 10 σ
    floats = [rng.random() for _ in range(10_000)]
    assert all(0.0 <= f < 1.0 for f in floats)
    assert 0.48 < sum(floats) / len(floats) < 0.52
    assert all(0 <= rng.getrandbits(63) < 2 ** 63 for _ in range(1000))
    assert rng.getrandbits(0) == 0
    assert len(rng.randbytes(3000)) == 3000  # more than a buffer: read in one go
    with pytest.raises(ValueError):
        rng.getrandbits(-1)


def test_the_kernel_is_asked_once_per_buffer_not_per_draw(monkeypatch):
    reads: list[int] = []
    real = os.urandom
    monkeypatch.setattr(randomness.os, "urandom", lambda n: reads.append(n) or real(n))
    rng = Dice()
    for _ in range(100):
        rng.choice(range(9))
        rng.random()
    assert reads == [Dice.CHUNK]  # 100 small draws from one buffer


def test_threads_never_share_bytes(monkeypatch):
    """Each thread draws from its own buffer: two threads never get the same bytes."""
    rng = Dice()
    got: dict[str, bytes] = {}

    def draw(name: str) -> None:
        got[name] = rng.randbytes(64)

    threads = [threading.Thread(target=draw, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["a"] != got["b"]


def test_a_forked_child_drops_its_parents_buffer():
    rng = Dice()
    rng.random()  # a buffer read in the parent
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the next bytes must not be the parent's next bytes
        os.close(read)
        os.write(write, rng.randbytes(32))
        os._exit(0)
    os.close(write)
    child = os.read(read, 64)
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 32 and child != rng.randbytes(32)
