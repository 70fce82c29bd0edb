"""Time that moves only when a test says so (the master's and the presence tracker's clock)."""

from __future__ import annotations


class Clock:
    """Time that moves only when a test says so."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
