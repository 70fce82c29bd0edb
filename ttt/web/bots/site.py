"""The bot side of the site put together: the book beside the game store, the house's rules
for bots (the master applies them),
the hub every push goes through (kept in `app.extensions`), the API and the bot pages.
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_socketio import SocketIO

from ttt.bots.book import open_book
from ttt.bots.referee import MOVE_SECONDS, PERSON_SECONDS, BotRules
from ttt.master.table import Table
from ttt.web.bots import api, ladder, making, pages
from ttt.web.bots.hub import Hub
from ttt.web.extensions import get_publisher, keep_hub

MAX_GAMES = 10   # live games a bot may sit in at once


def rules(app: Flask, store: Any) -> BotRules:
    """The house's rules for bots (deadlines, casual games, ratings), over the book kept
    beside the game store (and in the app)."""
    book = open_book(store)
    app.extensions["ttt_bots_book"] = book
    seconds = float(app.config.get("TTT_BOT_MOVE_SECONDS", MOVE_SECONDS))
    person = float(app.config.get("TTT_BOT_PERSON_SECONDS", PERSON_SECONDS))
    return BotRules(book, seconds, person)


def install(app: Flask, socketio: SocketIO, table: Table) -> Hub:
    """Register the API and the bot pages; hand every push to the bots' hub."""
    publisher = get_publisher(app)
    hub = Hub(socketio, table, app.extensions["ttt_bots_book"], publisher)
    keep_hub(app, hub)
    publisher.attach(hub)  # it hears every push from now on
    app.config.setdefault("TTT_BOT_MAX_GAMES", MAX_GAMES)
    app.register_blueprint(api.bp)
    app.register_blueprint(pages.bp)
    app.register_blueprint(making.bp)
    app.register_blueprint(ladder.bp)
    return hub
