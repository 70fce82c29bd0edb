"""The AI's dice: `random.SystemRandom`'s draws, from the kernel's generator, read ahead.

`SystemRandom` makes a system call (getrandom) for every draw, and CPython lets go of the
interpreter's lock around it: on a busy threaded server each AI move would hand the lock to
another thread and wait to get it back. `Dice` reads the kernel's bytes
`CHUNK` at a time into a buffer of each thread (or greenlet) and draws from it: the same
bytes, as unpredictable (they never leave the process), one system call per some hundred
draws. A forked child starts with an empty buffer, never its parent's.
"""

from __future__ import annotations

import os
import random
import threading

_FORKS = [0]  # bumped in a forked child: every buffer read before the fork is dropped
os.register_at_fork(after_in_child=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))
RECIP_BPF = 2.0 ** -53


class Dice(random.SystemRandom):
    """`random.SystemRandom` with the kernel's bytes read ahead (see the module)."""

    CHUNK = 1024

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def _bytes(self, n: int) -> bytes:
        local = self._local
        buffer: bytes = getattr(local, "buffer", b"")
        at: int = getattr(local, "at", 0)
        if at + n > len(buffer) or getattr(local, "forks", -1) != _FORKS[0]:
            buffer, at = os.urandom(max(self.CHUNK, n)), 0
            local.buffer, local.forks = buffer, _FORKS[0]
        local.at = at + n
        return buffer[at:at + n]

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        size = (k + 7) // 8
        return int.from_bytes(self._bytes(size)) >> (size * 8 - k)

    def random(self) -> float:
        return (int.from_bytes(self._bytes(7)) >> 3) * RECIP_BPF

    def randbytes(self, n: int) -> bytes:
        return self._bytes(n)
