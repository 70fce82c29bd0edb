"""Restart ttt's processes one after another, each only while the others serve.

    sudo python3 /usr/local/lib/ttt/rolling_restart.py 5001 5002     # restart each, in turn
    python3 /usr/local/lib/ttt/rolling_restart.py --wait-ready 5001  # wait until it is ready

(installed there from the release, outside it: docs/deploy.md, install step 6)

For each port, in order: check that every OTHER port is ready (GET /readyz answers 200),
so that nginx always has a process to send players to; `systemctl restart ttt@PORT` (SIGTERM:
the process drains, its players reconnect through nginx to the others; then a new process);
wait until the port's /readyz answers 200; wait `--settle` seconds (the moved players settle)
and go on. It stops at the first port that does not come back, leaving the others serving.
`systemctl restart` back to back instead answered 502 to most requests for about 14 s.

The unit runs `--wait-ready %i` as its ExecStartPost, so `systemctl restart` itself returns
only once the process is ready. Standard library only: runs with the system's python3,
whichever release runs (a release from before /readyz is ready when /healthz answers 200).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence

POLL = 0.2  # seconds between two readiness checks


def is_ready(port: int, host: str = "127.0.0.1") -> bool:
    """Whether the process on this port answers /readyz with 200 {"ready": true}; a release
    from before /readyz (404: 7bc74e4 and older, which a rollback may start) is ready when its
    /healthz answers 200."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/readyz", timeout=2) as answer:
            return answer.status == 200 and json.load(answer).get("ready") is True
    except urllib.error.HTTPError as error:
        if error.code != 404:
            return False
    except (OSError, ValueError):
        return False
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=2) as answer:
            return answer.status == 200
    except (OSError, ValueError):
        return False


def wait_ready(port: int, timeout: float, host: str = "127.0.0.1") -> bool:
    """Poll /readyz until it answers 200, at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_ready(port, host):
            return True
        time.sleep(POLL)
    return False


def systemctl_restart(port: int) -> None:
    subprocess.run(["systemctl", "restart", f"ttt@{port}"], check=True)


def roll(ports: Sequence[int], restart: Callable[[int], None], *, timeout: float = 90,
         settle: float = 5, host: str = "127.0.0.1",
         say: Callable[[str], None] = print) -> None:
    """Restart each port in turn, gated on readiness; raise RuntimeError at the first port
    that is not ready in time (the ports after it are left alone)."""
    for port in ports:
        others = [p for p in ports if p != port]
        for other in others:
            if not wait_ready(other, timeout, host):
                raise RuntimeError(f"port {other} is not ready: not restarting {port}")
        say(f"restarting {port}")
        started = time.monotonic()
        restart(port)
        if not wait_ready(port, timeout, host):
            raise RuntimeError(f"port {port} not ready {timeout:g} s after its restart")
        say(f"{port} ready after {time.monotonic() - started:.1f} s")
        if port != ports[-1]:
            time.sleep(settle)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ports", nargs="*", type=int, help="the ports, in restart order")
    parser.add_argument("--wait-ready", type=int, metavar="PORT",
                        help="only wait until this port's /readyz answers 200")
    parser.add_argument("--timeout", type=float, default=90,
                        help="seconds a process has to become ready (90)")
    parser.add_argument("--settle", type=float, default=5,
                        help="seconds between one port ready and the next restart (5)")
    args = parser.parse_args(argv)
    if args.wait_ready is not None:
        if wait_ready(args.wait_ready, args.timeout):
            return 0
        print(f"port {args.wait_ready}: not ready after {args.timeout:g} s", file=sys.stderr)
        return 1
    if not args.ports:
        parser.error("give the ports to restart, e.g. 5001 5002")
    try:
        roll(args.ports, systemctl_restart, timeout=args.timeout, settle=args.settle)
    except (RuntimeError, subprocess.CalledProcessError) as error:
        print(f"rolling restart stopped: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
