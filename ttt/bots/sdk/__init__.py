"""A bot client in the standard library only: `python -m ttt bot run mybot.py ...`.

Every ttt site serves this client as one file at `/bots/sdk.py` (built from these parts by
`ttt.bots.bundle`), with that site's address written in as the default `--server`: without
ttt installed, `python3 sdk.py mybot.py --token-file F` plays there.

`Api` makes the calls (keep-alive HTTP/1.1, the token only in the Authorization header);
`Runner` reads the event stream in a thread (reconnecting with a growing pause, but never
after another program took the token over), answers every game view that lists "move" in
`can` with `move(game)`, accepts challenges, and starts games against an opponent until it
has finished the number asked for. The program's `move` runs in a child process
(`Mover`): a bug in it or a move that takes too long is shown in full and resigns that game
at once, and the bot plays on. `--local` plays practice games with no server.

The parts import only the standard library and each other (`from ttt.bots.sdk.PART import
...`, which the one-file build drops): keep it so, or the served file breaks.
"""

from __future__ import annotations

from ttt.bots.sdk.api import (
    DEFAULT_SERVER,
    MARGIN,
    MOVE_SECONDS,
    REFUSED,
    REPLACED,
    TOKEN_VARIABLE,
    Api,
    Move,
    Unauthorized,
    load_module,
    load_move,
    load_variants,
)
from ttt.bots.sdk.command import (
    TokenError,
    add_run_arguments,
    main,
    read_token,
    refused_token,
    run_bot,
    run_local,
    summary,
)
from ttt.bots.sdk.local import LEVELS, Position, built_in, local_view, negamax, play_local
from ttt.bots.sdk.mover import (
    Mover,
    Problem,
    Tally,
    cells,
    draw_board,
    explain,
    judge,
    user_stack,
    user_traceback,
)
from ttt.bots.sdk.runner import Runner

# The parts in the order the one-file build puts them (each uses only those before it).
PARTS = ("api", "mover", "runner", "local", "command")

__all__ = [
    "DEFAULT_SERVER", "LEVELS", "MARGIN", "MOVE_SECONDS", "PARTS", "REFUSED", "REPLACED",
    "TOKEN_VARIABLE", "Api", "Move", "Mover", "Position", "Problem", "Runner", "Tally",
    "TokenError", "Unauthorized", "add_run_arguments", "built_in", "cells", "draw_board",
    "explain", "judge", "load_module", "load_move", "load_variants", "local_view", "main",
    "negamax", "play_local", "read_token", "refused_token", "run_bot", "run_local", "summary",
    "user_stack", "user_traceback",
]
