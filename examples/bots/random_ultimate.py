"""An Ultimate tic-tac-toe bot: any legal cell, at random. The server lists them in `legal`.

Run it:  python3 sdk.py random_ultimate.py --variant ultimate --token-file mybot.token \
             --opponent ai:easy --games 3
"""

import random

VARIANTS = ["classic", "ultimate"]  # what this bot plays (without it: classic only)


def move(game):
    # Cells are 9*b + c: small board b, cell c inside it. `next` says which board, if forced.
    return random.choice(game["legal"])
