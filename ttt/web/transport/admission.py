"""Admission at the door: connection floods refused before Engine.IO keeps anything.

WSGI middleware, outermost on `/socket.io/`. A websocket (and a long poll) holds
its thread or greenlet for as long as the request is in flight, so counting
requests in flight here counts exactly what a flood costs this process:

- at most `per_address` requests in flight from one client address, and
- at most `max_open` in all: the threaded server never holds more threads than
  that (plus the few refused ones, which end at once);
- a handshake (no `sid` yet) is also refused when the address already holds
  `per_address` Socket.IO connections in all processes (the count the presence
  keeps through the limiter, in Redis when several processes serve).

A refusal is a few bytes with `Connection: close`: no Engine.IO session, no
Flask request, no store access. Socket.IO's connect then counts again, exactly
(per player and per address), so a burst of handshakes that all passed this
gate together is still cut at the cap there.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from ttt.master.limits import prefix_of

StartResponse = Callable[..., Any]

log = logging.getLogger("ttt.admission")

FULL = "503 Service Unavailable", "the server is full; try again in a moment"
TOO_MANY = "429 Too Many Requests", "too many connections from your address"


def address_of(environ: dict, trusted: frozenset[str]) -> str:
    """The client's address: X-Forwarded-For is believed only from a trusted proxy."""
    address = environ.get("REMOTE_ADDR") or ""
    if address not in trusted:
        return address
    for hop in reversed(environ.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        hop = hop.strip()
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break
        if hop not in trusted:
            return hop
        address = hop
    return address


class Admission:
    """Caps on connections in flight per address and in all, and per address across
    processes at the handshake."""

    def __init__(self, wsgi_app: Callable, *, trusted: frozenset[str], per_address: int,
                 max_open: int, held: Callable[[str], int] | None = None,
                 origin: Callable[[str], str | None] = lambda a: a,
                 path: str = "/socket.io/",
                 counted: Callable[[str], None] = lambda reason: None) -> None:
        self.wsgi_app = wsgi_app
        self.trusted = trusted
        self.per_address = per_address     # 0: no cap
        self.max_open = max_open           # 0: no cap
        self.held = held                   # Socket.IO connections of an address, all processes
        self.origin = origin
        self.path = path
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}
        self.total = 0                     # requests in flight now
        self.refused = 0                   # refused since the start
        self.counted = counted             # each refusal's reason: "full" or "address"
        self._full_told = False            # the "full" warning is logged once per episode

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        if not (environ.get("PATH_INFO") or "").startswith(self.path):
            return self.wsgi_app(environ, start_response)
        address = prefix_of(address_of(environ, self.trusted))  # an IPv6 /64 counts as one
        refusal = self._enter(address)
        if refusal is None and self._handshake(environ) and self._held_too_many(address):
            self._leave(address)
            refusal = TOO_MANY
        if refusal is not None:
            with self._lock:
                self.refused += 1
            self.counted("full" if refusal is FULL else "address")
            return self._refuse(start_response, *refusal)
        try:
            # A websocket (or a long poll) returns only when it ends: in flight meanwhile.
            return self.wsgi_app(environ, start_response)
        finally:
            self._leave(address)

    def _enter(self, address: str) -> tuple[str, str] | None:
        with self._lock:
            if self.max_open and self.total >= self.max_open:
                if not self._full_told:
                    self._full_told = True
                    log.warning("full: refusing connections past %d in flight "
                                "(TTT_MAX_OPEN_CONNECTIONS, derived from the descriptor "
                                "limit unless set); ttt_connections_refused_total counts "
                                "them", self.max_open)
                return FULL
            if self._full_told and self.total < self.max_open * 0.9:
                self._full_told = False  # the episode is over: tell the next one
                log.info("no longer full: %d connections in flight", self.total)
            here = self._open.get(address, 0)
            if self.per_address and here >= self.per_address:
                return TOO_MANY
            self._open[address] = here + 1
            self.total += 1
            return None

    def _leave(self, address: str) -> None:
        with self._lock:
            here = self._open.get(address, 0) - 1
            if here > 0:
                self._open[address] = here
            else:
                self._open.pop(address, None)
            self.total -= 1

    @staticmethod
    def _handshake(environ: dict) -> bool:
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        return "sid" not in query

    def _held_too_many(self, address: str) -> bool:
        if not self.per_address or self.held is None:
            return False
        key = self.origin(address)
        return key is not None and self.held(key) >= self.per_address

    @staticmethod
    def _refuse(start_response: StartResponse, status: str, text: str) -> list[bytes]:
        body = text.encode()
        start_response(status, [("Content-Type", "text/plain; charset=utf-8"),
                                ("Content-Length", str(len(body))), ("Retry-After", "10"),
                                ("Cache-Control", "no-store"), ("Connection", "close")])
        return [body]
