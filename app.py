"""Serve ttt: `python app.py [--host H] [--port P]` (default 127.0.0.1:5000)."""

from __future__ import annotations

import argparse
import faulthandler
import gc
import logging
import os
import signal
import threading

from ttt.web import create_app, get_socketio
from ttt.web.ops import settings
from ttt.web.realtime import housekeeping
from ttt.web.transport.serving import BoundedServer


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the ttt game.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args()
    # `kill -USR1 <pid>` prints every thread's stack to stderr: for an operator (and the
    # leak tests) to see what a busy or stuck server is doing, without stopping it.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    app = create_app()
    housekeeping.start(app)  # the clocks, leases, purges and waiting AI turns of a served app
    # Everything loaded so far (modules, the app, its tables) stays for the process's life:
    # frozen, the cycle collector skips it on every full pass.
    gc.freeze()
    # Through logging: one JSON line like every other with TTT_LOG_FORMAT=json.
    logging.getLogger("ttt.app").info("ttt: serving on http://%s:%s (store %s)", args.host,
                                      args.port, _shown(app.config["TTT_STORE"]))
    if app.config["TTT_ASYNC_MODE"] != "threading":  # gevent belongs under gunicorn
        get_socketio(app).run(app, host=args.host, port=args.port)
        return
    serve_until_term(app, args.host, args.port)


def _shown(url: str) -> str:
    """The store's URL without a password (redis://:secret@host)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@", 1)
    return url


def serve_until_term(app, host: str, port: int) -> None:
    """The Werkzeug server (threads + simple-websocket, fine for one process) until SIGTERM
    or Ctrl-C; then stop accepting, drain (ttt.web.transport.drain) and return."""
    # What socketio.run does, with a handle to stop it, and bounds (ttt/web/transport/serving.py).
    server = BoundedServer(host, port, app,
                           cap=settings.connection_cap(settings.descriptor_limit()),
                           header_seconds=float(os.environ.get("TTT_HEADER_SECONDS", "10")),
                           body_seconds=float(os.environ.get("TTT_BODY_SECONDS", "10")))
    drain = app.extensions["ttt_drain"]

    def stop(signum, frame) -> None:
        drain.stopping = True  # /readyz: "draining"
        threading.Thread(target=server.shutdown, daemon=True).start()  # ends serve_forever

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    drain.serving = True  # /readyz: ready
    server.serve_forever()
    server.server_close()  # refuse new connections: clients go elsewhere or retry
    app.extensions["ttt_drain"].run(float(os.environ.get("TTT_DRAIN_SECONDS", "20")))


if __name__ == "__main__":
    main()
