"""Waiting for a state, never for a time: `eventually(check)` polls until the state is there.

A test on a busy machine (two cores shared with other work) cannot know how long a server, a
worker or a log takes; it can know what it waits for. Poll for that, with a generous timeout
that only a real failure reaches, and fail saying what never came.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float = 30.0,
               message: str | Callable[[], str] = "the state never came", *,
               interval: float = 0.05) -> T:
    """Call `check` every `interval` seconds until it returns something truthy; return that.

    After `timeout` seconds the test fails with `message` (a string, or a function called then,
    e.g. for the tail of a log) and the last value `check` gave. An exception `check` raises
    is not caught: it fails the test at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            said = message() if callable(message) else message
            raise AssertionError(f"not within {timeout:g} s: {said} (last: {value!r})")
        time.sleep(interval)
