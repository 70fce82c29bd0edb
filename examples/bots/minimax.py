"""A classic tic-tac-toe bot that never loses: plain minimax over the whole game tree.

Run it:  python3 sdk.py minimax.py --token-file mybot.token --opponent ai:perfect --games 4
(sdk.py and this file are served by the site: /bots/sdk.py and /bots/examples/minimax.py)
"""

from functools import cache

VARIANTS = ["classic"]  # what this bot plays: the site offers people only these

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def winner(board):
    for a, b, c in LINES:
        if board[a] != "." and board[a] == board[b] == board[c]:
            return board[a]
    return None


@cache
def score(board, me, turn):
    """The result for `me` with best play from here: 1 win, 0 draw, -1 loss."""
    won = winner(board)
    if won or "." not in board:
        return 0 if not won else 1 if won == me else -1
    results = [score(board[:i] + turn + board[i + 1:], me, "O" if turn == "X" else "X")
               for i, cell in enumerate(board) if cell == "."]
    return max(results) if turn == me else min(results)


def move(game):
    """The cell to play: the best result, and among equals the first in the server's list."""
    board, me = game["board"], game["you"]
    other = "O" if me == "X" else "X"
    return max(game["legal"], key=lambda i: score(board[:i] + me + board[i + 1:], me, other))
