"""Where a module of the web layer finds the app's parts: the store, the master, the Socket.IO
server, the bots' hub, all kept in `app.extensions`.

Apart from `ttt.web` (the app factory, which imports the pages and sockets) so a page or an
event handler can reach them without importing the factory back (tests/test_import_cycles.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Flask, current_app
from flask_socketio import SocketIO

if TYPE_CHECKING:
    from ttt.master.table import Table
    from ttt.store import Store
    from ttt.web.bots.hub import Hub
    from ttt.web.realtime.publisher import Publisher


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
    """The app's one Socket.IO server."""
    app.extensions["ttt_socketio"] = socketio


def get_publisher(app: Flask | None = None) -> Publisher:
    """The one door every push of an app leaves by (ttt.web.realtime.publisher)."""
    return (app or current_app).extensions["ttt_publisher"]


def keep_hub(app: Flask, hub: Hub) -> None:
    """The bots' hub, in the app (the publisher hands it every push once attached)."""
    app.extensions["ttt_bots"] = hub


def get_hub(app: Flask | None = None) -> Hub:
    """The bots' hub of an app."""
    return (app or current_app).extensions["ttt_bots"]
