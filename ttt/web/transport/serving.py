"""The threaded server of `python app.py`, bounded: connections, and time to send headers.

Werkzeug starts a thread per accepted connection and waits for its headers forever, and the
admission layer (ttt/web/transport/admission.py) only sees a request once its headers are in. So
half-sent requests (a slowloris) held a thread and a descriptor each until the process ran
out of descriptors and answered nobody, /healthz included. Here, before any thread starts:

- at most `cap` connections open in all (derived from the descriptor limit, like the
  Socket.IO cap: settings.connection_cap), and
- at most `waiting_per_address` connections from one address still sending their headers
  (a quarter of `cap`, 256 at most);

past either, a `503` is written at once and the socket closed, no thread started. A
connection gets `header_seconds` to send each request's line and headers (a keep-alive
connection, for each of its requests); then no timeout, so a websocket lives on.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

log = logging.getLogger("ttt.serving")

#: Seconds a connection has to send a request's line and headers.
HEADER_SECONDS = 10.0
#: Connections of one address still sending their headers, at most: a browser opens six at
#: once, a proxy in front (nginx) sends whole headers, but a load test's clients on one
#: machine may connect by the hundred while the threads that read them wait for a core.
WAITING_PER_ADDRESS = 256


def waiting_cap(cap: int) -> int:
    """Connections one address may have still sending headers: a quarter of the server's
    cap, so that one address's half-sent requests never fill it (WAITING_PER_ADDRESS at
    most)."""
    return max(8, min(WAITING_PER_ADDRESS, cap // 4))

REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
           b"Content-Length: 41\r\nRetry-After: 10\r\nCache-Control: no-store\r\n"
           b"Connection: close\r\n\r\nthe server is full; try again in a moment")


class BoundedHandler(WSGIRequestHandler):
    """Werkzeug's handler with Nagle's algorithm off (TCP_NODELAY: with it on, an answer
    written just after a push to the same websocket waited for the client's delayed ACK,
    20-40 ms a move), and a deadline on each request's headers."""

    disable_nagle_algorithm = True
    server: BoundedServer
    # "Server: ttt", not Werkzeug's and Python's versions: nothing for a scanner, and ~30
    # bytes less on each of a first load's two dozen answers (issue 35's 100 kB, per language).
    server_version = "ttt"
    sys_version = ""

    def handle_one_request(self) -> None:
        self.connection.settimeout(self.server.header_seconds)
        super().handle_one_request()

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.connection.settimeout(None)  # headers in: a websocket may stay quiet for long
        self.server.headers_in(self.request)
        return parsed


class BoundedServer(ThreadedWSGIServer):
    """ThreadedWSGIServer that refuses connections past its caps without a thread."""

    def __init__(self, host: str, port: int, app: Any, *, cap: int,
                 header_seconds: float = HEADER_SECONDS,
                 waiting_per_address: int | None = None) -> None:
        super().__init__(host, port, app, BoundedHandler)
        self.cap = cap
        self.header_seconds = header_seconds
        self.waiting_per_address = waiting_per_address or waiting_cap(cap)
        self.open = 0                                   # connections with a thread now
        self.refused = 0
        self._waiting: dict[str, int] = {}              # address -> still sending headers
        self._waiting_sockets: dict[int, str] = {}      # id(socket) -> its address
        self._lock = threading.Lock()
        self._full_told = False

    def process_request(self, request: Any, client_address: Any) -> None:
        address = client_address[0] if isinstance(client_address, tuple) else ""
        with self._lock:
            full = self.open >= self.cap
            crowded = self._waiting.get(address, 0) >= self.waiting_per_address
            if not (full or crowded):
                self.open += 1
                self._waiting[address] = self._waiting.get(address, 0) + 1
                self._waiting_sockets[id(request)] = address
            else:
                self.refused += 1
                tell, self._full_told = full and not self._full_told, self._full_told or full
        if full or crowded:
            if tell:
                log.warning("full: refusing connections past %d open (the descriptor "
                            "limit less a reserve)", self.cap)
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)  # a thread for it
        except BaseException:
            self._ended(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._ended(request)

    def headers_in(self, request: Any) -> None:
        """This connection's headers are read: it no longer counts as waiting."""
        with self._lock:
            address = self._waiting_sockets.pop(id(request), None)
            if address is not None:
                left = self._waiting[address] - 1
                if left:
                    self._waiting[address] = left
                else:
                    del self._waiting[address]

    def _ended(self, request: Any) -> None:
        self.headers_in(request)
        with self._lock:
            self.open -= 1
            if self._full_told and self.open < self.cap * 0.9:
                self._full_told = False

    def _refuse(self, request: socket.socket) -> None:
        try:
            request.setblocking(False)  # never wait on a client that does not read
            request.send(REFUSAL)
            request.recv(65536)  # what it sent already: closing over unread bytes is a reset
        except OSError:
            pass
        self.shutdown_request(request)
