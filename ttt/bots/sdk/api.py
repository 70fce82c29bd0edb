"""The calls to a site's bot API, and the bot file's `move` and `VARIANTS`."""

from __future__ import annotations

import http.client
import importlib.util
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Move = Callable[[dict[str, Any]], int]

# The site that serves this file writes its own address here (GET /bots/sdk.py).
DEFAULT_SERVER = "http://127.0.0.1:5000"
REPLACED = 3        # the exit code when another program took this bot's token over
REFUSED = 2         # the exit code when every challenge was refused for good
TOKEN_VARIABLE = "TTT_BOT_TOKEN"  # the environment variable a token may come from
MOVE_SECONDS = 10.0  # the server's deadline for a bot's move (a game's clock may be shorter)
MARGIN = 1.5         # seconds kept back from the deadline to resign in time


class Unauthorized(RuntimeError):
    """The server refused the token (wrong, or revoked)."""


class Api:
    """The bot API of one server, for one token."""

    def __init__(self, server: str, token: str, timeout: float = 60.0) -> None:
        url = urllib.parse.urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not a server URL: {server!r}")
        self.scheme, self.host, self.port = url.scheme, url.hostname, url.port
        self.base = url.path.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self.timeout = timeout
        self._local = threading.local()

    def _connection(self, timeout: float | None = None) -> http.client.HTTPConnection:
        kind = (http.client.HTTPSConnection if self.scheme == "https"
                else http.client.HTTPConnection)
        return kind(self.host, self.port, timeout=timeout or self.timeout)

    def _call(self, path: str, body: dict[str, Any] | None = None,
              method: str = "POST") -> dict[str, Any]:
        data = json.dumps(body or {}).encode() if method == "POST" else None
        headers = {**self._headers, "Content-Type": "application/json"}
        for attempt in range(2):  # a kept-alive connection the server closed: open another
            conn = getattr(self._local, "conn", None) or self._connection()
            self._local.conn = conn
            try:
                conn.request(method, self.base + path, body=data, headers=headers)
                response = conn.getresponse()
                text = response.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
                continue
            try:
                answer = json.loads(text)
            except ValueError:
                answer = {"ok": False, "error": {"code": "internal",
                                                 "message": f"HTTP {response.status}"}}
            if response.status == 401:
                raise Unauthorized(answer.get("error", {}).get("message", "unauthorized"))
            return answer
        raise AssertionError("unreachable")

    def call(self, path: str, body: dict[str, Any] | None = None,
             method: str = "POST") -> dict[str, Any]:
        """One call; the server's JSON answer (an error answer too, never an exception).
        A `rate_limited` answer is tried again after a growing pause, up to about 6 s."""
        pause = 0.1
        while True:
            answer = self._call(path, body, method)
            if answer.get("ok") is not False or pause > 3 or \
                    answer.get("error", {}).get("code") != "rate_limited":
                return answer
            time.sleep(pause)
            pause *= 2

    def account(self) -> dict[str, Any]:
        """Which bot this token is."""
        return self.call("/api/bot/account", method="GET")

    def move(self, game_id: str, cell: int) -> dict[str, Any]:
        return self.call(f"/api/bot/game/{game_id}/move", {"cell": cell})

    def challenge(self, opponent: str, variant: str = "classic", you: str | None = None,
                  clock: int | None = None, rated: bool = True) -> dict[str, Any]:
        return self.call("/api/bot/challenge", {"opponent": opponent, "variant": variant,
                                                "you": you, "clock": clock, "rated": rated})

    def say_variants(self, variants: list[str]) -> dict[str, Any]:
        """Tell the site which variants this bot plays (it offers people only those)."""
        return self.call("/api/bot/account", {"variants": variants})

    def site(self) -> str:
        """The server's address, for the links this client prints."""
        port = f":{self.port}" if self.port else ""
        return f"{self.scheme}://{self.host}{port}{self.base}"

    def stream(self) -> Iterator[dict[str, Any]]:
        """The event stream's lines, until the server closes it (pings every 15 s)."""
        conn = self._connection(timeout=40.0)
        try:
            conn.request("GET", self.base + "/api/bot/stream", headers=self._headers)
            response = conn.getresponse()
            if response.status == 401:
                raise Unauthorized("the server refused the token")
            if response.status != 200:
                raise OSError(f"stream answered HTTP {response.status}")
            self.streaming = conn
            while True:
                line = response.readline()
                if not line:
                    return
                if line.strip():
                    yield json.loads(line)
        finally:
            conn.close()


def load_module(path: str | Path) -> Any:
    """A bot file, run as a module."""
    spec = importlib.util.spec_from_file_location(f"ttt_bot_{Path(path).stem}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_move(path: str | Path) -> Move:
    """The `move(game) -> int` function of a bot file."""
    move = getattr(load_module(path), "move", None)
    if not callable(move):
        raise ValueError(f"{path} defines no move(game) function")
    return move


def load_variants(path: str | Path) -> list[str]:
    """The variants a bot file says it plays: its `VARIANTS`, classic only without one."""
    variants = getattr(load_module(path), "VARIANTS", ["classic"])
    if isinstance(variants, str):
        variants = [variants]
    if not isinstance(variants, list | tuple) or not variants or \
            any(v not in ("classic", "ultimate") for v in variants):
        raise ValueError(f"{path}: VARIANTS is a list of 'classic' and 'ultimate', "
                         f"not {variants!r}")
    return list(variants)
