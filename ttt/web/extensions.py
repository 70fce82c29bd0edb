"""Where a module of the web layer finds the app's parts: the store, the master, the Socket.IO
server, the bots' hub, all kept in `app.extensions`.

Apart from `ttt.web` (the app factory, which imports the pages and sockets) so a page or an
event handler can reach them without importing the factory back (tests/test_import_cycles.py).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from flask import Flask, current_app
from flask_socketio import SocketIO

if TYPE_CHECKING:
    from ttt.store import Store
    from ttt.table import Table
    from ttt.web.realtime.hub import Hub

# Which app each Socket.IO server serves: pushes sent outside a request (the clocks loop, an
# AI's late move) find the app's parts from the server they go through.
_APPS: weakref.WeakKeyDictionary[SocketIO, Flask] = weakref.WeakKeyDictionary()


def get_store() -> Store:
    """The store of the current app."""
    return current_app.extensions["ttt_store"]


def get_socketio(app: Flask | None = None) -> SocketIO:
    """The SocketIO object of an app."""
    return (app or current_app).extensions["ttt_socketio"]


def get_table(app: Flask | None = None) -> Table:
    """The master of an app."""
    return (app or current_app).extensions["ttt_table"]


def keep_socketio(app: Flask, socketio: SocketIO) -> None:
    """The app's one Socket.IO server, found from the app and the app found from it."""
    app.extensions["ttt_socketio"] = socketio
    _APPS[socketio] = app


def keep_hub(app: Flask, hub: Hub) -> None:
    """The bots' hub, in the app: every push goes through it once it is there."""
    app.extensions["ttt_bots"] = hub


def get_hub(app: Flask | None = None) -> Hub:
    """The bots' hub of an app."""
    return (app or current_app).extensions["ttt_bots"]


def hub_of(socketio: SocketIO) -> Hub | None:
    """The bots' hub of the app that Socket.IO server serves (None before it is installed,
    or for a server no app keeps)."""
    app = _APPS.get(socketio)
    return app.extensions.get("ttt_bots") if app is not None else None
