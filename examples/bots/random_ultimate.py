"""An Ultimate tic-tac-toe bot: any legal cell, at random. The server lists them in `legal`.

Run it:  python -m ttt bot run examples/bots/random_ultimate.py --variant ultimate \
             --server URL --token-file F --opponent ai:easy --games 3
"""

import random


def move(game):
    # Cells are 9*b + c: small board b, cell c inside it. `next` says which board, if forced.
    return random.choice(game["legal"])
