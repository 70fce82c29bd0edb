"""1,800 websockets from 10 addresses through the deploy/ front.

The production stack on loopback, from deploy/'s own files (tests/support/stack.py changes only
ports and paths): redis, two gunicorn gevent processes under the unit's LimitNOFILE (prlimit), and
nginx from deploy/nginx-main.conf + deploy/nginx.conf. Then 10 loopback addresses
(127.0.0.2-127.0.0.11, each under the 200-per-address cap) each open their share of
websockets through nginx, every one completing the Socket.IO connect and answering pings.
Reported: what was held after a ping round, each process's connections, /healthz and the
page through the front while held, and the errors in nginx's and gunicorn's logs.

`--stock` runs the same against the stock limits: 1,024 descriptors per process
(systemd's default) and Debian's 768 worker_connections; it is expected to fail.

    python -m bench.front [--sockets 1800] [--addresses 10] [--stock] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import websocket

from bench.common import busy_cores, note, quiet_warning, raise_nofile
from bench.flood import Holder

#: What the stock limits were: systemd's soft RLIMIT_NOFILE, Debian's worker_connections.
STOCK_NOFILE, STOCK_WORKER_CONNECTIONS = 1024, 768


class SourceHolder(Holder):
    """Holder whose websockets each come from a given loopback address (bound, not claimed
    in X-Forwarded-For: nginx sees the address itself)."""

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self.host, self.port = "127.0.0.1", int(base.rsplit(":", 1)[1])

    def connect(self, cookie: str, address: str) -> websocket.WebSocket:
        """A websocket really from `address` (a bound source address on loopback)."""
        sock = socket.create_connection((self.host, self.port), timeout=10,
                                        source_address=(address, 0))
        return websocket.create_connection(self.url, timeout=10, socket=sock,
                                           header=[f"Cookie: session={cookie}"])


def get(base: str, path: str, source: str = "127.0.0.1") -> tuple[int | str, float, str]:
    """GET on a fresh connection from `source`: status (or the error), ms, session cookie."""
    port = int(base.rsplit(":", 1)[1])
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        answer.read()
        cookie = re.search(r"session=([^;]+)", answer.getheader("Set-Cookie") or "")
        return answer.status, (time.perf_counter() - started) * 1000, cookie and cookie[1] or ""
    except OSError as error:
        return type(error).__name__, (time.perf_counter() - started) * 1000, ""
    finally:
        conn.close()


def front_ms(base: str, path: str, tries: int = 9) -> tuple[float | None, int]:
    """Median ms of the 2xx answers, and how many were not 2xx."""
    answers = [get(base, path)[:2] for _ in range(tries)]
    good = [ms for status, ms in answers if isinstance(status, int) and status < 300]
    return (round(statistics.median(good), 1) if good else None), tries - len(good)


def stack(work: Path, nofile: int, main: Path) -> tuple[Any, list[Any], Any]:
    """redis, two gunicorn processes under `nofile` descriptors, nginx from `main`."""
    from tests.support.servers import RedisServer
    from tests.support.stack import METRICS_TOKEN, Gunicorn, Nginx

    redis = RedisServer(shutil.which("redis-server") or "redis-server", work)
    env = {"TTT_STORE": redis.url, "TTT_MESSAGE_QUEUE": redis.url,
           "TTT_SECRET_KEY": "bench-front-secret", "TTT_METRICS_TOKEN": METRICS_TOKEN,
           "TTT_TRUSTED_PROXIES": "127.0.0.1", "TTT_AI_WORKERS": "0"}
    backends = []
    try:
        for i in (1, 2):
            backends.append(Gunicorn(env, work / f"gunicorn{i}.log", nofile=nofile).start())
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        nginx = Nginx(binary, work / "nginx", [b.port for b in backends], main=main)
    except BaseException:
        for b in backends:
            b.stop()
        redis.stop()
        raise
    return redis, backends, nginx


def run(sockets: int, addresses: int, stock: bool) -> dict[str, Any]:
    from tests.support.stack import DEPLOY, UNIT, shipped

    work = Path(tempfile.mkdtemp(prefix="ttt-front-"))
    main = DEPLOY / "nginx-main.conf"
    nofile = int(shipped(UNIT, "LimitNOFILE"))  # as systemd starts them
    if stock:
        nofile = STOCK_NOFILE
        main = work / "stock-main.conf"
        text = (DEPLOY / "nginx-main.conf").read_text()
        text = re.sub(r"worker_connections \d+;", f"worker_connections "
                      f"{STOCK_WORKER_CONNECTIONS};", text)
        main.write_text(re.sub(r"^worker_rlimit_nofile .*;$", "", text, flags=re.M))
    redis, backends, nginx = stack(work, nofile, main)
    holder = SourceHolder(nginx.url)
    sources = [f"127.0.0.{2 + i}" for i in range(addresses)]
    try:
        started = time.monotonic()

        def open_from(source: str, count: int) -> None:
            cookie, used = "", 8
            for _ in range(count):
                if used == 8:  # 8 websockets per player (TTT_MAX_CONNECTIONS)
                    cookie, used = get(nginx.url, "/", source)[2], 0
                holder.open(cookie, source)
                used += 1

        shares = [sockets // addresses + (i < sockets % addresses) for i in range(addresses)]
        threads = [threading.Thread(target=open_from, args=(s, n), daemon=True)
                   for s, n in zip(sources, shares, strict=True)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        opened = holder.alive()
        seconds = round(time.monotonic() - started, 1)
        time.sleep(12)  # one ping round (10 s): what is held is answered, not just open
        health, health_bad = front_ms(nginx.url, "/healthz")
        page, page_bad = front_ms(nginx.url, "/")
        per_process = []
        for b in backends:
            found = re.search(r"^ttt_connections (\S+)$", b.metrics(), re.M)
            per_process.append(int(float(found.group(1))) if found else None)
        row = {"limits": "stock (1,024 fds, 768 worker_connections)" if stock
               else f"shipped ({nofile} fds, nginx-main.conf)",
               "attempted": sockets, "addresses": addresses, "opened": opened,
               "open_seconds": seconds, "held_after_ping": holder.alive(),
               "refused": holder.refused, "failed": holder.failed,
               "per_process": per_process, "healthz_ms": health, "healthz_not_2xx": health_bad,
               "page_ms": page, "page_not_2xx": page_bad}
    finally:
        holder.close()
        nginx.stop()
        for b in backends:
            b.stop()
        redis.stop()
    logs = "".join((work / f"gunicorn{i}.log").read_text(errors="replace") for i in (1, 2))
    errors = work / "nginx" / "error.log"
    nginx_log = errors.read_text(errors="replace") if errors.exists() else ""
    row["emfile_in_app_logs"] = logs.count("Too many open files")
    row["nginx_not_enough"] = nginx_log.count("worker_connections are not enough")
    shutil.rmtree(work, ignore_errors=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sockets", type=int, default=1800)
    parser.add_argument("--addresses", type=int, default=10)
    parser.add_argument("--stock", action="store_true",
                        help="nginx's stock limits, before the budgets (expected to fail)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not 1 <= args.addresses <= 200:
        parser.error("--addresses: 1 to 200 (127.0.0.2 onwards)")
    soft, _ = raise_nofile()
    if soft < args.sockets + 500:
        note("front", f"this process may open only {soft} descriptors: fewer sockets held")
    warning = quiet_warning(busy_cores())
    if warning:
        note("front", warning)
    row = run(args.sockets, args.addresses, args.stock)
    if args.json:
        print(json.dumps(row))
    else:
        print(f"{row['limits']}: {row['opened']}/{row['attempted']} websockets from "
              f"{row['addresses']} addresses in {row['open_seconds']} s, "
              f"{row['held_after_ping']} held after a ping round {row['per_process']}; "
              f"/healthz {row['healthz_ms']} ms ({row['healthz_not_2xx']} not 2xx), page "
              f"{row['page_ms']} ms ({row['page_not_2xx']} not 2xx); refused {row['refused']}, "
              f"failed {row['failed']}; app EMFILE {row['emfile_in_app_logs']}, nginx "
              f"'not enough' {row['nginx_not_enough']}")
    ok = (row["held_after_ping"] == args.sockets and not row["healthz_not_2xx"]
          and not row["page_not_2xx"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
