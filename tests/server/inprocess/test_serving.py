"""The threaded server's whole-request deadlines (ttt/web/transport/serving.py, issue 41):
bodies read by the server under one deadline, chunked bodies parsed strictly, requests still
being sent counted by address prefix. A tiny WSGI app on a real socket, in this process."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.support.waiting import eventually
from ttt.web.transport import serving
from ttt.web.transport.serving import BoundedServer, counted_as


def echo(environ, start_response):
    """Answers with the body it was handed, and how it was handed."""
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    chunked = environ.get("HTTP_TRANSFER_ENCODING", "")
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(body) + 1)), ("X-Coding", chunked)])
    return [b"<" + body]


@pytest.fixture
def server():
    served = BoundedServer("127.0.0.1", 0, echo, cap=64, header_seconds=5, body_seconds=0.6,
                           waiting_per_address=8)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield served
    served.shutdown()
    served.server_close()
    thread.join(10)


def connect(server: BoundedServer) -> socket.socket:
    s = socket.create_connection(server.server_address[:2], timeout=10)
    return s


def answer(s: socket.socket) -> bytes:
    """Everything until the server closes the connection."""
    parts = []
    while True:
        part = s.recv(65536)
        if not part:
            return b"".join(parts)
        parts.append(part)


def one_answer(s: socket.socket) -> bytes:
    """One answer (its Content-Length body); the connection may stay open."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = s.recv(65536)
        assert part, data
        data += part
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length")][0])
    while len(rest) < length:
        part = s.recv(65536)
        assert part, data
        rest += part
    return head + b"\r\n\r\n" + rest


def waiting(server: BoundedServer) -> int:
    with server._lock:
        return sum(server._waiting.values())


def test_a_body_dripped_a_byte_at_a_time_is_cut_at_its_deadline(server):
    """A byte every 0.2 s would beat any timeout per recv (0.6 s here): the deadline is
    for the whole body, and the request no longer counts as waiting once refused."""
    s = connect(server)
    started = time.monotonic()
    s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 4000\r\n\r\n")
    s.settimeout(0.2)
    got = b""
    while not got:
        try:
            s.sendall(b"a")
            got = s.recv(65536)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
    s.settimeout(10)
    took = time.monotonic() - started
    assert got.startswith(b"HTTP/1.1 408"), got
    assert took < 0.6 + 2, took
    s.close()
    assert server.bodies_refused == {"408 Request Timeout": 1}


def test_a_body_sent_whole_reaches_the_app(server):
    s = connect(server)
    s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
    got = one_answer(s)
    assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"<hello"), got
    s.close()


def test_a_chunked_body_reaches_the_app_as_a_plain_one(server):
    s = connect(server)
    s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: y\r\n\r\n")
    got = one_answer(s)
    assert got.startswith(b"HTTP/1.1 200") and got.endswith(b"<hello world"), got
    assert b"X-Coding: \r\n" in got  # the app saw no chunked coding
    s.close()


@pytest.mark.parametrize("chunks", [
    b"zz\r\nhello\r\n0\r\n\r\n",            # a size that is not hex
    b"5\r\nhelloXY0\r\n\r\n",               # no CRLF after the data
    b"-5\r\nhello\r\n0\r\n\r\n",            # a sign
    b"123456789\r\n",                       # a size over 8 digits
    b"5" + b" " * 200 + b"\r\n",            # a size line that never ends
])
def test_a_malformed_chunked_body_is_refused_at_once(server, chunks):
    """Before the body deadline (0.6 s): answered as soon as the bad byte is in, while the
    client keeps its connection open (waiting for the answer)."""
    server.body_seconds = 30
    s = connect(server)
    s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
    s.settimeout(5)  # a hang fails here, long before the 30 s deadline
    got = answer(s)
    assert got.startswith(b"HTTP/1.1 400"), got
    s.close()


@pytest.mark.parametrize("head", [
    b"Content-Length: 70000\r\n",                         # over MAX_BODY: 413, unread
    b"Content-Length: +5\r\n",
    b"Content-Length: 5\r\nContent-Length: 6\r\n",
    b"Transfer-Encoding: gzip, chunked\r\n",
    b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",  # smuggling's favourite
])
def test_odd_body_framing_is_refused_unread(server, head):
    s = connect(server)
    s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\n" + head + b"\r\n")
    got = answer(s)
    assert got.startswith(b"HTTP/1.1 413" if b"70000" in head else b"HTTP/1.1 400"), got
    s.close()


def test_a_chunked_body_over_the_cap_is_refused(server):
    s = connect(server)
    size = serving.MAX_BODY + 1
    s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % size)
    assert answer(s).startswith(b"HTTP/1.1 413")
    s.close()


def test_expect_100_continue_is_answered_once(server):
    s = connect(server)
    s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
    got = b""
    while b"100 Continue\r\n\r\n" not in got:
        got += s.recv(100)
    assert got.count(b"100 Continue") == 1 and got.endswith(b"\r\n\r\n"), got
    s.sendall(b"ok")
    final = one_answer(s)
    assert final.startswith(b"HTTP/1.1 200") and final.endswith(b"<ok"), final
    assert b"100 Continue" not in final  # Werkzeug's second one, before: none
    s.close()


def test_slow_bodies_count_as_waiting_and_past_the_cap_are_refused(server):
    """8 requests per address may still be sending (here): the 9th connection is refused at
    once, and once the bodies are in the count is back to 0."""
    held = []
    for _ in range(8):
        s = connect(server)
        s.sendall(b"POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\na")
        held.append(s)
    server.body_seconds = 30
    eventually(lambda: waiting(server) >= 8, 10, "every one accepted and reading its body",
               interval=0.01)
    extra = connect(server)
    assert answer(extra).startswith(b"HTTP/1.1 503")
    extra.close()
    for s in held:
        s.sendall(b"bc")
        assert one_answer(s).endswith(b"<abc")
    assert waiting(server) == 0
    for s in held:
        s.close()


def test_a_websocket_upgrade_is_not_a_body_and_stops_counting():
    """An upgrade's headers in, it no longer counts as waiting, whatever it sends after."""
    seen = threading.Event()

    def app(environ, start_response):
        seen.set()
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    served = BoundedServer("127.0.0.1", 0, app, cap=16, header_seconds=5, body_seconds=0.5,
                           waiting_per_address=8)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    try:
        s = connect(served)
        s.sendall(b"GET /socket.io/ HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\n\r\n")
        assert seen.wait(10)
        assert waiting(served) <= 1  # at most its next request's wait, never its body
        s.close()
    finally:
        served.shutdown()
        served.server_close()
        thread.join(10)


def test_ipv6_counts_by_its_64_and_a_56_as_a_few_people():
    assert counted_as("2001:db8:1:2::7") == ("2001:db8:1:2::/64", "2001:db8:1::/56")
    assert counted_as("2001:db8:1:2:aaaa::9")[0] == counted_as("2001:db8:1:2::7")[0]
    assert counted_as("::ffff:10.1.2.3") == ("10.1.2.3",)
    assert counted_as("10.1.2.3") == ("10.1.2.3",)
    served = BoundedServer("127.0.0.1", 0, echo, cap=1000, waiting_per_address=8)
    try:
        # One /64 of a /56: 8 waiting, whatever address in it; a 9th refused.
        for i in range(8):
            assert served.waiting(object(), (f"2001:db8:1:2::{i + 1:x}", 0))
        assert not served.waiting(object(), ("2001:db8:1:2:ffff::1", 0))
        # Other /64s of the same /56: 4 prefixes' worth in all (32), not 256 x 8.
        allowed = sum(served.waiting(object(), (f"2001:db8:1:{sub:x}::1", 0))
                      for sub in range(3, 60))
        assert allowed == 8 * serving.WIDER_TIMES - 8
        assert served.waiting(object(), ("2001:db8:2::1", 0))  # another /56 is served
    finally:
        served.server_close()
