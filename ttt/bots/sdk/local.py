"""Practice with no server (`--local`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ttt.bots.sdk.api import DEFAULT_SERVER, MARGIN, MOVE_SECONDS, load_variants
from ttt.bots.sdk.mover import Mover, Tally, explain, judge

# The same `move(game)` input, the same referee (only `legal` cells; a bad move resigns that
# game with the same report) and the same summary, against an opponent played here.

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
LEVELS = ("random", "easy", "medium", "hard")


def three(marks: str) -> tuple[str | None, list[int] | None]:
    """Who has three in a row in these nine marks, and that line."""
    for line in LINES:
        a, b, c = (marks[i] for i in line)
        if a == b == c and a in "XO":
            return a, list(line)
    return None, None


class Position:
    """A game on its own: classic (9 cells) or Ultimate (81, cell = small board * 9 +
    square; the square played sends the opponent to that small board unless it is closed)."""

    def __init__(self, variant: str = "classic") -> None:
        self.variant = variant
        self.cells = ["."] * (81 if variant == "ultimate" else 9)
        self.moves: list[int] = []
        self.next: int | None = None

    def boards(self) -> str:
        """Ultimate's small boards: 'X' or 'O' won, '-' full with no line, '.' open."""
        states = []
        for b in range(9):
            small = "".join(self.cells[b * 9:b * 9 + 9])
            states.append(three(small)[0] or ("." if "." in small else "-"))
        return "".join(states)

    def winner(self) -> tuple[str | None, list[int] | None]:
        return three(self.boards() if self.variant == "ultimate" else "".join(self.cells))

    def targets(self) -> list[int]:
        if self.winner()[0]:
            return []
        boards = self.boards()
        if self.next is not None and boards[self.next] == ".":
            return [self.next]
        return [b for b in range(9) if boards[b] == "."]

    def legal(self) -> list[int]:
        if self.variant != "ultimate":
            return [] if self.winner()[0] else [i for i, m in enumerate(self.cells) if m == "."]
        return [b * 9 + c for b in self.targets() for c in range(9)
                if self.cells[b * 9 + c] == "."]

    def over(self) -> bool:
        return bool(self.winner()[0]) or not self.legal()

    def turn(self) -> str:
        return "X" if len(self.moves) % 2 == 0 else "O"

    def play(self, cell: int) -> None:
        self.cells[cell] = self.turn()
        self.moves.append(cell)
        if self.variant == "ultimate":
            square = cell % 9
            self.next = square if self.boards()[square] == "." else None

    def copy(self) -> Position:
        twin = Position(self.variant)
        twin.cells, twin.moves, twin.next = list(self.cells), list(self.moves), self.next
        return twin

    def replay(self) -> str | None:
        if not self.moves:
            return None
        if self.variant == "ultimate":
            return "/r/u/" + ".".join(map(str, self.moves))
        return "/r/" + "".join(map(str, self.moves))


def wins_for(position: Position, mark: str) -> list[int]:
    """The legal cells where `mark` would win the game (classic) or a small board (Ultimate)."""
    found = []
    for cell in position.legal():
        small = cell // 9 * 9 if position.variant == "ultimate" else 0
        marks = position.cells[small:small + 9]
        marks[cell - small] = mark
        if three("".join(marks))[0]:
            found.append(cell)
    return found


def negamax(position: Position) -> tuple[int, int | None]:
    """Classic's perfect play: the score for the side on move and its best cell."""
    if position.winner()[0]:
        return -1, None
    legal = position.legal()
    if not legal:
        return 0, None
    best, choice = -2, legal[0]
    for cell in legal:
        after = position.copy()
        after.play(cell)
        score = -negamax(after)[0]
        if score > best:
            best, choice = score, cell
    return best, choice


def built_in(level: str, position: Position, rng: Any) -> int:
    """The cell a built-in opponent plays: random; easy (takes a win); medium (and blocks);
    hard (perfect in classic, and in Ultimate never sends you where you win a board)."""
    legal, me = position.legal(), position.turn()
    foe = "O" if me == "X" else "X"
    if level == "random":
        return rng.choice(legal)
    if level in ("easy", "medium", "hard") and wins_for(position, me):
        return rng.choice(wins_for(position, me))
    if level == "hard" and position.variant == "classic":
        return negamax(position)[1] if len(legal) < 9 else 4
    if level in ("medium", "hard") and wins_for(position, foe):
        return rng.choice(wins_for(position, foe))
    if level == "hard":
        safe = []
        for cell in legal:
            after = position.copy()
            after.play(cell)
            if not wins_for(after, foe):
                safe.append(cell)
        legal = safe or legal
    return rng.choice(legal)


def local_view(position: Position, game_id: str, you: str, opponent: str) -> dict[str, Any]:
    """The game as the bot's seat sees it online (the fields of the guide's table)."""
    winner, line = position.winner()
    over = position.over()
    game: dict[str, Any] = {
        "id": game_id, "mode": "ai" if opponent.startswith("ai:") else "friend",
        "variant": position.variant, "level": opponent[3:] if opponent.startswith("ai:")
        else None, "board": "".join(position.cells), "turn": None if over else position.turn(),
        "status": "won" if winner else "draw" if over else "playing", "winner": winner,
        "reason": "line" if winner else None, "line": line, "moves": list(position.moves),
        "seats": {you: "human", ("O" if you == "X" else "X"): "ai"
                  if opponent.startswith("ai:") else "human"},
        "online": {"X": True, "O": True}, "version": len(position.moves), "you": you,
        "can": ["move", "resign"] if not over and position.turn() == you else
        (["resign"] if not over else []), "rev": len(position.moves),
        "names": {you: {"name": "you", "bot": True},
                  ("O" if you == "X" else "X"): None if opponent.startswith("ai:")
                  else {"name": opponent, "bot": True}},
        "clock": None, "replay": position.replay(), "score": None, "start": 0,
        "time_left": MOVE_SECONDS if not over else None,
    }
    game["legal"] = position.legal() if "move" in game["can"] else []
    if position.variant == "ultimate":
        game.update(boards=position.boards(), next=None if over else position.next,
                    targets=position.targets())
    return game


def play_local(args: argparse.Namespace, log: Callable[[str], None]) -> tuple[Tally, bool]:
    """The games of `--local`: the bot's `move` (in its child process, as online) against a
    built-in opponent or another bot file. The tally, and whether Ctrl-C stopped it."""
    import random

    opponent = args.opponent or "ai:easy"
    level = opponent.removeprefix("ai:")
    rival: Mover | None = None
    if not (opponent.startswith("ai:") and level in LEVELS):
        if opponent.startswith(("ai:", "bot:")) or opponent == "link" or \
                not Path(opponent).is_file():
            raise ValueError(f"--local plays ai:{'|ai:'.join(LEVELS)} or another bot's file, "
                             f"not {opponent!r}")
        if args.variant not in load_variants(opponent):
            raise ValueError(f"{opponent} does not play {args.variant} (its VARIANTS)")
        rival = Mover(opponent)
        rival.check()
    mover = Mover(args.bot)
    tally, rng = Tally(), random.Random()
    games = args.games or 4
    mover.check()
    log(f"practice with no server: {games} {args.variant} games against {opponent}")
    try:
        for number in range(1, games + 1):
            you = "X" if number % 2 else "O"
            game_id = f"local-{number}"
            log(f"game {game_id} ({args.variant}, you are {you}) against {opponent}")
            position = Position(args.variant)
            resigned = _play_game(position, game_id, you, opponent, mover, rival,
                                  lambda now: built_in(level, now, rng), tally, log)
            _tell_end(position, game_id, you, opponent, resigned, tally, log)
    except KeyboardInterrupt:
        log("stopping")
        return tally, True
    finally:
        mover.close()
        if rival is not None:
            rival.close()
    return tally, False


def _play_game(position: Position, game_id: str, you: str, opponent: str,
               mover: Mover, rival: Mover | None, house: Callable[[Position], int], tally: Tally,
               log: Callable[[str], None]) -> str | None:
    """One practice game played out on `position`: the mark that resigned (a failed move), if
    any. The bot's move is its `mover`'s; the opponent's, the `rival` file's or the `house`'s."""
    while not position.over():
        view = local_view(position, game_id, you, opponent)
        if position.turn() == you:
            returned, problem = mover(view, max(0.5, MOVE_SECONDS - MARGIN))
            cell, problem = (None, problem) if problem else judge(view, returned)
            if problem is not None:
                tally.errors[problem.kind] = tally.errors.get(problem.kind, 0) + 1
                log(f"\n=== your move failed in game {game_id} ===\n"
                    f"{explain(view, problem)}\nresigning this game (practice)\n")
                return you
        elif rival is not None:
            theirs = {**view, "you": position.turn(), "can": ["move", "resign"],
                      "legal": position.legal()}
            returned, problem = rival(theirs, max(0.5, MOVE_SECONDS - MARGIN))
            cell, problem = (None, problem) if problem else judge(theirs, returned)
            if problem is not None:
                log(f"the opponent's move failed in game {game_id}: "
                    f"{problem.text.splitlines()[-1]}; it resigns")
                return position.turn()
        else:
            cell = house(position)
        position.play(cell)
    return None


def _tell_end(position: Position, game_id: str, you: str, opponent: str,
              resigned: str | None, tally: Tally, log: Callable[[str], None]) -> None:
    """Count a finished practice game and say how it ended, with its replay's address."""
    final = local_view(position, game_id, you, opponent)
    if resigned:
        final.update(status="won", winner="O" if resigned == "X" else "X",
                     reason="resign", line=None, can=[], legal=[])
    result = tally.count(final)
    words = {"wins": "won", "losses": "lost", "draws": "a draw"}[result]
    reason = f" ({final['reason']})" if final.get("reason") else ""
    replay = (f"; replay: {DEFAULT_SERVER}{final['replay']}" if final["replay"] else "")
    log(f"game {game_id} over: {words}{reason}{replay}")
