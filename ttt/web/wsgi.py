"""The WSGI entry point for gunicorn: `gunicorn -w 1 -k gevent 'ttt.web.wsgi:app'`.

One worker per port: gunicorn's balancing is not sticky, and Socket.IO needs
every request of a client to reach the same process. Scale with more ports
behind a sticky front (docs/deploy.md). The Socket.IO async mode follows the
worker: gevent for `-k gevent`, threading for `-k gthread` (set TTT_ASYNC_MODE).
"""

import gc

from ttt.web import create_app
from ttt.web.realtime import housekeeping

app = create_app()
housekeeping.start(app)  # served: the clocks, leases, purges and waiting AI turns run
gc.freeze()  # the app as loaded stays for good: the collector stops walking it
app.extensions["ttt_drain"].serving = True  # /readyz: ready
