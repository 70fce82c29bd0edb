"""The threaded server of `python app.py`, bounded: connections, and the time to send a
whole request (its headers, then its body).

Werkzeug starts a thread per accepted connection and waits for its headers and its body
forever, and the admission layer (ttt/web/transport/admission.py) only sees a request once
its headers are in. So half-sent requests (a slowloris) hold a thread and a descriptor each
until the process runs out of descriptors and answers nobody, /healthz included; with a
deadline on the headers alone, a slow *body* does the same (1,000 `POST /api/bots` with
`Content-Length: 4000` and a byte every 5 s hold all 960 threads). Here:

- at most `cap` connections open in all (derived from the descriptor limit, like the
  Socket.IO cap: settings.connection_cap), and
- at most `waiting_per_address` requests from one address prefix still being sent, headers
  or body (a quarter of `cap`, 256 at most): the prefix is the one every other limit uses
  (ttt.master.limits.prefix_of: an IPv4 address whole, an IPv6 one by its /64), and an IPv6 /56
  (a home network hands out 256 /64s) holds WIDER_TIMES prefixes' worth, not 256;

past either, a `503` is written at once and the socket closed, no thread started (a
keep-alive connection's next request past the cap: the connection is closed). A request
gets `header_seconds` to send its line and headers, then `body_seconds` in all for its body:
the server reads the whole body itself, under that one deadline, before the app runs (no
app code ever blocks on a client's body: Engine.IO's polling POSTs, the JSON endpoints and
the forms all read a body already in memory). A body over MAX_BODY is refused unread (413),
one late 408, a malformed chunked one 400 at once, and the connection closed. A websocket
upgrade has no body: once its headers are in, it has no timeout and lives on.
"""

from __future__ import annotations

import functools
import io
import ipaddress
import logging
import re
import socket
import threading
import time
from typing import Any

from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

from ttt.master.limits import prefix_of

log = logging.getLogger("ttt.serving")

#: Seconds a connection has to send a request's line and headers.
HEADER_SECONDS = 10.0
#: Seconds a request has to send its whole body, from the end of its headers. Every body
#: this server takes is at most 4 KiB: a phone on a poor line sends that in well under 1 s.
BODY_SECONDS = 10.0
#: Bodies over this are refused unread (413). Nothing here takes near it: Engine.IO's
#: messages, a bot's JSON and the bot form are each capped at 4 KiB by the app.
MAX_BODY = 64 * 1024
#: Requests of one address prefix still being sent (headers or body), at most: a browser
#: opens six connections at once, a proxy in front (nginx) sends whole requests, but a load
#: test's clients on one machine may connect by the hundred while the threads that read
#: them wait for a core.
WAITING_PER_ADDRESS = 256
#: An IPv6 /56 holds this many /64 prefixes' worth: a home network is a few people, not 256.
WIDER_TIMES = 4
#: A chunk-size line: hex digits (8 at most: far over MAX_BODY), then extensions.
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,8})(?:[ \t]*;[^\r\n]*)?\r?\n")
#: A decimal Content-Length, nothing else (no sign, no spaces inside, no second value).
LENGTH = re.compile(r"[0-9]{1,18}")


def waiting_cap(cap: int) -> int:
    """Requests one address prefix may have still being sent: a quarter of the server's
    cap, so that one address's half-sent requests never fill it (WAITING_PER_ADDRESS at
    most)."""
    return max(8, min(WAITING_PER_ADDRESS, cap // 4))


@functools.lru_cache(maxsize=8192)  # on every accept: parsed once per address
def counted_as(address: str) -> tuple[str, ...]:
    """The keys a connection from `address` counts under: its prefix (ttt.master.limits.prefix_of),
    and for IPv6 its /56 as well."""
    prefix = prefix_of(address)
    if not prefix.endswith("/64"):
        return (prefix,)
    wide = ipaddress.IPv6Network(prefix).supernet(new_prefix=56)
    return (prefix, str(wide))


REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
           b"Content-Length: 41\r\nRetry-After: 10\r\nCache-Control: no-store\r\n"
           b"Connection: close\r\n\r\nthe server is full; try again in a moment")


class BodyRefused(Exception):
    """A request body not taken: its status line and why."""

    def __init__(self, status: str, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


class ClientGone(Exception):
    """The client closed its side before its body was in."""


class Deadline:
    """Reads from a connection's buffered reader, every read under one deadline: each
    `recv` waits only for the time left, so a byte every few seconds does not keep a request
    alive (a timeout per `recv` would). Never reads past what it is asked for (a keep-alive
    connection's next request stays in the buffer)."""

    def __init__(self, rfile: Any, connection: socket.socket, deadline: float) -> None:
        self.rfile = rfile
        self.connection = connection
        self.deadline = deadline

    def _wait(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BodyRefused("408 Request Timeout", "the body took too long")
        self.connection.settimeout(left)

    def _more(self, call: Any, *args: Any) -> bytes:
        self._wait()
        try:
            got = call(*args)
        except TimeoutError:  # socket.timeout
            raise BodyRefused("408 Request Timeout", "the body took too long") from None
        if not got:
            raise ClientGone
        return got

    def read(self, size: int) -> bytes:
        parts: list[bytes] = []
        while size > 0:
            part = self._more(self.rfile.read1, size)
            parts.append(part)
            size -= len(part)
        return b"".join(parts)

    def readline(self, limit: int) -> bytes:
        """A line of at most `limit` bytes (its newline included); longer: 400."""
        line = b""
        while True:
            seen = self._more(self.rfile.peek, 1)  # buffered bytes, one recv if none
            end = seen.find(b"\n", 0, limit - len(line))
            take = end + 1 if end >= 0 else min(len(seen), limit - len(line))
            line += self.rfile.read(take)
            if end >= 0:
                return line
            if len(line) >= limit:
                raise BodyRefused("400 Bad Request", "a malformed chunked body")


def dechunked(reader: Deadline, cap: int) -> bytes:
    """A chunked body, strictly: each size line hex (with optional extensions), each chunk's
    data followed by its CRLF, a last chunk of 0, then trailers up to an empty line. Anything
    else is refused at once (400), more than `cap` bytes of data too (413)."""
    parts: list[bytes] = []
    total = 0
    while True:
        match = CHUNK_SIZE.fullmatch(reader.readline(80))
        if match is None:
            raise BodyRefused("400 Bad Request", "a malformed chunked body")
        size = int(match.group(1), 16)
        if size == 0:
            break
        total += size
        if total > cap:
            raise BodyRefused("413 Content Too Large", "the body is too large")
        parts.append(reader.read(size))
        if reader.readline(2) not in (b"\r\n", b"\n"):
            raise BodyRefused("400 Bad Request", "a malformed chunked body")
    for _ in range(16):  # trailers: read and dropped
        if reader.readline(1024) in (b"\r\n", b"\n"):
            return b"".join(parts)
    raise BodyRefused("400 Bad Request", "a malformed chunked body")


class BoundedHandler(WSGIRequestHandler):
    """Werkzeug's handler with Nagle's algorithm off (TCP_NODELAY: with it on, an answer
    written just after a push to the same websocket waited for the client's delayed ACK,
    20-40 ms a move), a deadline on each request's headers and one on its whole body."""

    disable_nagle_algorithm = True
    server: BoundedServer
    # "Server: ttt", not Werkzeug's and Python's versions: nothing for a scanner, and ~30
    # bytes less on each of a first load's two dozen answers (100 kB at most, per language).
    server_version = "ttt"
    sys_version = ""
    _served = False

    def handle_one_request(self) -> None:
        if self._served and not self.server.waiting(self.request, self.client_address):
            self.close_connection = True  # its prefix's cap is full: no further request here
            return
        self._served = True
        self.connection.settimeout(self.server.header_seconds)
        try:
            super().handle_one_request()
        finally:
            self.server.request_in(self.request)

    def run_wsgi(self) -> None:
        try:
            body = self._body()
        except BodyRefused as refused:
            self.server.request_in(self.request)
            self._refuse_body(refused)
            return
        except (ClientGone, OSError):
            self.close_connection = True
            return
        self.server.request_in(self.request)  # the whole request is in: no longer waiting
        upgrade = "websocket" in self.headers.get("Upgrade", "").lower()
        # A websocket may stay quiet for long; a plain answer gets as long as a send may take.
        self.connection.settimeout(None if upgrade else self.server.send_seconds)
        if body is None:
            super().run_wsgi()
            return
        rfile, self.rfile = self.rfile, io.BytesIO(body)  # make_environ's wsgi.input
        try:
            super().run_wsgi()
        finally:
            self.rfile = rfile  # a keep-alive connection's next request comes from the socket

    def _body(self) -> bytes | None:
        """The request's whole body, read under the body deadline; None when it has none."""
        coding = self.headers.get_all("Transfer-Encoding") or []
        length = self.headers.get_all("Content-Length") or []
        if coding:
            if len(coding) > 1 or coding[0].strip().lower() != "chunked" or length:
                raise BodyRefused("400 Bad Request", "only a lone chunked coding is taken")
        elif not length:
            return None
        elif len(length) > 1 or not LENGTH.fullmatch(length[0].strip()):
            raise BodyRefused("400 Bad Request", "a malformed Content-Length")
        elif int(length[0]) > self.server.max_body:
            raise BodyRefused("413 Content Too Large", "the body is too large")
        elif int(length[0]) == 0:
            return None
        # http.server answered an Expect: 100-continue already (parse_request): not again.
        del self.headers["Expect"]
        reader = Deadline(self.rfile, self.connection,
                          time.monotonic() + self.server.body_seconds)
        if not coding:
            return reader.read(int(length[0]))
        body = dechunked(reader, self.server.max_body)
        del self.headers["Transfer-Encoding"]  # the app sees a plain body of known length
        self.headers["Content-Length"] = str(len(body))
        return body

    def _refuse_body(self, refused: BodyRefused) -> None:
        self.close_connection = True
        self.server.body_refused(refused.status)
        text = refused.text.encode()
        head = (f"HTTP/1.1 {refused.status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(text)}\r\nCache-Control: no-store\r\n"
                f"Connection: close\r\n\r\n").encode()
        try:
            self.connection.settimeout(1.0)  # never wait long on a client that does not read
            self.wfile.write(head + text)
        except OSError:
            pass


class BoundedServer(ThreadedWSGIServer):
    """ThreadedWSGIServer that refuses connections past its caps without a thread."""

    def __init__(self, host: str, port: int, app: Any, *, cap: int,
                 header_seconds: float = HEADER_SECONDS,
                 body_seconds: float = BODY_SECONDS,
                 send_seconds: float = 60.0,
                 max_body: int = MAX_BODY,
                 waiting_per_address: int | None = None) -> None:
        super().__init__(host, port, app, BoundedHandler)
        self.cap = cap
        self.header_seconds = header_seconds
        self.body_seconds = body_seconds
        self.send_seconds = send_seconds
        self.max_body = max_body
        self.waiting_per_address = waiting_per_address or waiting_cap(cap)
        self.open = 0                                   # connections with a thread now
        self.refused = 0
        self.bodies_refused: dict[str, int] = {}        # status -> bodies refused
        self._waiting: dict[str, int] = {}              # prefix -> requests still being sent
        self._waiting_sockets: dict[int, tuple[str, ...]] = {}  # id(socket) -> its keys
        self._lock = threading.Lock()
        self._full_told = False
        self._bodies_told = 0.0

    def _crowded(self, keys: tuple[str, ...]) -> bool:
        """Whether a key already has its share of requests being sent (under the lock)."""
        caps = (self.waiting_per_address, self.waiting_per_address * WIDER_TIMES)
        return any(self._waiting.get(key, 0) >= cap
                   for key, cap in zip(keys, caps, strict=False))

    def _count(self, request: Any, keys: tuple[str, ...]) -> None:
        for key in keys:
            self._waiting[key] = self._waiting.get(key, 0) + 1
        self._waiting_sockets[id(request)] = keys

    def process_request(self, request: Any, client_address: Any) -> None:
        keys = counted_as(client_address[0] if isinstance(client_address, tuple) else "")
        with self._lock:
            full = self.open >= self.cap
            crowded = self._crowded(keys)
            if not (full or crowded):
                self.open += 1
                self._count(request, keys)
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

    def waiting(self, request: Any, client_address: Any) -> bool:
        """A keep-alive connection waits for its next request: counted again, unless its
        prefix already has its share (then False: the connection is to close)."""
        keys = counted_as(client_address[0] if isinstance(client_address, tuple) else "")
        with self._lock:
            if self._crowded(keys):
                self.refused += 1
                return False
            self._count(request, keys)
            return True

    def request_in(self, request: Any) -> None:
        """This connection's request is in whole (or over): it no longer counts as waiting."""
        with self._lock:
            keys = self._waiting_sockets.pop(id(request), ())
            for key in keys:
                left = self._waiting[key] - 1
                if left:
                    self._waiting[key] = left
                else:
                    del self._waiting[key]

    def body_refused(self, status: str) -> None:
        with self._lock:
            self.bodies_refused[status] = self.bodies_refused.get(status, 0) + 1
            now = time.monotonic()
            tell = now - self._bodies_told > 60
            if tell:
                self._bodies_told = now
        if tell:  # one line a minute at most, whatever a flood sends
            log.warning("refused a request body (%s); refused so far: %s", status,
                        self.bodies_refused)

    def _ended(self, request: Any) -> None:
        self.request_in(request)
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
