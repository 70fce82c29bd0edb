"""gunicorn settings for one ttt process: `gunicorn -c deploy/gunicorn.conf.py -b ADDR`.

Run one gunicorn per port (deploy/ttt@.service starts one per instance) behind the sticky
front (deploy/nginx.conf). Every value can be overridden on the command line.
"""

import os

wsgi_app = "ttt.web.wsgi:app"

# One worker per port, always: gunicorn spreads requests over its workers without
# stickiness, and a Socket.IO client must reach the same process with every request.
# More processes = more ports behind nginx.
workers = 1
worker_class = "gevent"  # TTT_ASYNC_MODE=gevent must match (set below when unset)
os.environ.setdefault("TTT_ASYNC_MODE", "gevent")

# Open connections (greenlets) one process holds at once: each connected player is one
# websocket, plus short requests (pages, long-polls). It is per process, not per site:
# a site with N ports holds N times as many. Past it, new connections wait in the backlog.
# Just above TTT_MAX_OPEN_CONNECTIONS (2000 under gevent, measured by bench/flood.py:
# docs/benchmarks.md, "Floods"), so the application answers a flood with 503 before gunicorn
# stops accepting.
# Fewer when the descriptor limit (the unit's LimitNOFILE) would run out first: past it the
# process could accept nothing, /healthz included ("Too many open files").
try:
    from ttt.web.ops.settings import connection_cap, descriptor_limit

    worker_connections = min(2100, connection_cap(descriptor_limit()))
except ImportError:  # gunicorn run from another folder: the documented value
    worker_connections = 2100

# A websocket is one long request: never let gunicorn's worker timeout cut it. The gevent
# worker keeps notifying the master while it runs, so `timeout` only catches a hung process.
timeout = 30
keepalive = 5

# SIGTERM (systemctl stop/restart, or a deploy): the worker stops accepting, finishes the
# events in flight and closes every connection so that its client reconnects (through nginx:
# to another process); see ttt/web/transport/drain.py. graceful_timeout bounds it all.
graceful_timeout = int(os.environ.get("TTT_DRAIN_SECONDS", "20")) + 5

# The app's log lines (one per event, TTT_LOG_FORMAT=json for JSON) go to stderr: journald
# under systemd. gunicorn's own error log too; no access log (the app logs each event).
errorlog = "-"
# gunicorn 27's control socket lives in $HOME, one path for every process: off.
control_socket_disable = True
loglevel = "info"
accesslog = None

# TTT_LOG_FORMAT=json: gunicorn's own lines (the start-up banner, worker boots and exits,
# timeouts) as JSON too, through the app's formatter. Only gunicorn's loggers are set here:
# the root logger is the app's (ttt/web/ops/logs.py). The access logger stays off (above).
if os.environ.get("TTT_LOG_FORMAT", "").lower() == "json":
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "root": {"level": "INFO", "handlers": []},
        "formatters": {"json": {"()": "ttt.runtime.jsonlog.JsonFormatter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json",
                                "stream": "ext://sys.stderr"}},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "WARNING", "handlers": [], "propagate": False},
            # Python warnings raised before the app sets up its logging (gevent's, at boot).
            "py.warnings": {"level": "WARNING", "handlers": ["stderr"], "propagate": False},
        },
    }
    import logging

    logging.captureWarnings(True)

    from gunicorn.glogging import Logger

    class _NoAccessLog(Logger):
        """gunicorn turns its access log on whenever logconfig_dict is set, building each
        request's line to drop it: off unless `accesslog` asks for it."""

        def _compute_access_log_enabled(self):
            return bool(self.cfg.accesslog)

    logger_class = _NoAccessLog


def post_worker_init(worker):
    """Drain on SIGTERM instead of only waiting for open websockets to time out."""
    from ttt.web.transport.drain import on_gunicorn_worker

    on_gunicorn_worker(worker, timeout=float(os.environ.get("TTT_DRAIN_SECONDS", "20")))


def worker_int(worker):
    """SIGINT or SIGQUIT: a quick stop; say so, as the clients will only see a dropped line."""
    worker.log.info("worker %s stopping at once (SIGINT/SIGQUIT): no drain", worker.pid)


def worker_exit(server, worker):
    """After the worker's last request: close the store's connections cleanly. A worker whose
    master is gone (kill -9, the OOM killer) says so at ERROR: gunicorn's own line for it
    ("Parent changed, shutting down") is INFO, and the master, killed, writes nothing."""
    if os.getppid() != worker.ppid:
        worker.log.error("gunicorn master %s is gone (killed?): worker %s exits and its "
                         "connections drop; systemd starts the unit again (Restart=on-failure)",
                         worker.ppid, worker.pid)
    app = getattr(worker, "wsgi", None)
    store = getattr(app, "extensions", {}).get("ttt_store")
    if store is not None:
        store.close()
