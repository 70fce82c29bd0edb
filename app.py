"""Serve ttt: `python app.py [--host H] [--port P]` (default 127.0.0.1:5000)."""

from __future__ import annotations

import argparse
import faulthandler
import signal

from werkzeug.serving import WSGIRequestHandler

from ttt.web import create_app, get_socketio


class NoDelayHandler(WSGIRequestHandler):
    """Werkzeug's request handler with Nagle's algorithm off (TCP_NODELAY). With it on, a
    person's answer written just after a push that another thread (a bot's HTTP call) wrote
    to the same websocket waited for the client's delayed ACK: 20-40 ms a move, 0.8 without."""

    disable_nagle_algorithm = True


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the ttt game.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args()
    # `kill -USR1 <pid>` prints every thread's stack to stderr: for an operator (and the
    # leak tests) to see what a busy or stuck server is doing, without stopping it.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    app = create_app()
    print(f"ttt: serving on http://{args.host}:{args.port} (store {app.config['TTT_STORE']})",
          flush=True)
    # The Werkzeug server with simple-websocket: fine for one process; see docs/deploy.md.
    get_socketio(app).run(app, host=args.host, port=args.port, allow_unsafe_werkzeug=True,
                          request_handler=NoDelayHandler)


if __name__ == "__main__":
    main()
