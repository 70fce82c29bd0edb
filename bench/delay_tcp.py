"""A TCP proxy that adds a fixed delay each way, in its own process: a network in front of Redis.

    python -m bench.delay_tcp --target PORT --delay 0.0005   (prints the port it listens on)

tests/support/delay_proxy.py does the same for browser tests on asyncio, whose epoll waits round a
timeout up to the next millisecond: a 0.5 ms delay came out as 1 ms or more. Here each
direction of each connection is two threads (one reads and stamps each chunk, one sends it
when its time comes, sleeping with `time.sleep`, accurate to tens of microseconds), so a
round trip costs 2 × delay plus the copying. Its own process: the GIL of the bench's clients
does not stretch the delay.
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import socket
import sys
import threading
import time


def _pipe(source: socket.socket, target: socket.socket, delay: float) -> None:
    chunks: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def send() -> None:
        while True:
            due, chunk = chunks.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not chunk:
                break
            try:
                target.sendall(chunk)
            except OSError:
                break
        for sock in (target, source):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    threading.Thread(target=send, daemon=True).start()
    while True:
        try:
            chunk = source.recv(65536)
        except OSError:
            chunk = b""
        chunks.put((time.monotonic() + delay, chunk))
        if not chunk:
            return


def serve(target_port: int, delay: float, port: int = 0) -> None:
    listener = socket.create_server(("127.0.0.1", port))
    print(listener.getsockname()[1], flush=True)
    while True:
        client, _ = listener.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", target_port))
        except OSError:
            client.close()
            continue
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_pipe, args=(client, upstream, delay), daemon=True).start()
        threading.Thread(target=_pipe, args=(upstream, client, delay), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.delay_tcp", description=__doc__.split("\n")[0])
    parser.add_argument("--target", type=int, required=True, help="the port to forward to")
    parser.add_argument("--delay", type=float, default=0.0005, help="seconds added each way")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    serve(args.target, args.delay, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
