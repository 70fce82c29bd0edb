"""Every position reachable from the empty board, found with Board.play only (no tables)."""

from functools import cache

from ttt.rules.classic import Board


@cache
def reachable_boards() -> tuple[Board, ...]:
    """The reachable positions, breadth first, each once."""
    seen = {Board()}
    frontier = [Board()]
    while frontier:
        nxt = []
        for board in frontier:
            for cell in board.legal_moves():
                child = board.play(cell)
                if child not in seen:
                    seen.add(child)
                    nxt.append(child)
        frontier = nxt
    return tuple(sorted(seen, key=lambda board: board.key))
