"""The command line: `python sdk.py mybot.py --token-file F` (and `python -m ttt bot run`)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from ttt.bots.sdk.api import (
    DEFAULT_SERVER,
    REFUSED,
    REPLACED,
    TOKEN_VARIABLE,
    Api,
    Unauthorized,
    load_variants,
)
from ttt.bots.sdk.local import play_local
from ttt.bots.sdk.mover import Mover, Tally
from ttt.bots.sdk.runner import Runner


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `bot run` (and of this file run on its own)."""
    parser.add_argument("bot", help="the bot's Python file (defines move(game) -> int)")
    parser.add_argument("--server", default=DEFAULT_SERVER,
                        help="the site to play on (default: %(default)s)")
    parser.add_argument("--token", default=None,
                        help="the bot's token (shown once when it was made); or --token-file, "
                             f"or the {TOKEN_VARIABLE} environment variable")
    parser.add_argument("--token-file", default=None,
                        help="a file holding the bot's token")
    parser.add_argument("--variant", choices=["classic", "ultimate"], default="classic")
    parser.add_argument("--games", type=int, default=0, help="stop after this many (0: never)")
    parser.add_argument("--opponent", default=None,
                        help="start games against ai:LEVEL, bot:NAME, or link (prints the "
                             "link to send a person, and one to watch); without it the bot "
                             "waits for challenges")
    parser.add_argument("--rated", action="store_true",
                        help="count the games this bot starts in its record and rating "
                             "(default: casual)")
    parser.add_argument("--parallel", type=int, default=1, help="games at once")
    parser.add_argument("--timeout", type=float, default=None,
                        help="stop after this many s (the games on are ended, as by Ctrl-C)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--local", action="store_true",
                        help="practice with no server and no token: --opponent ai:random, "
                             "ai:easy, ai:medium, ai:hard or another bot's file (4 games "
                             "unless --games says)")


def summary(tally: Tally) -> str:
    """The results in words, for the terminal (stdout has them as JSON)."""
    line = (f"{tally.games} games: {tally.wins} won, {tally.draws} drawn, "
            f"{tally.losses} lost, {tally.aborted} aborted")
    if tally.errors:
        line += "; your move failed: " + ", ".join(f"{kind} x{n}"
                                                   for kind, n in tally.errors.items())
    return line


class TokenError(ValueError):
    """No token, or one that cannot be read: said with where it came from, never its value."""


def read_token(args: argparse.Namespace) -> tuple[str, str]:
    """The bot's token and where it came from (--token, --token-file, the environment)."""
    if getattr(args, "token", None):
        return args.token.strip(), "--token"
    if getattr(args, "token_file", None):
        source = f"--token-file {args.token_file}"
        try:
            token = Path(args.token_file).read_text().strip()
        except OSError as error:
            raise TokenError(f"cannot read the token file given by {source} "
                             f"({error.strerror or type(error).__name__}); if you have the "
                             "token itself, pass it with --token") from None
        if not token:
            raise TokenError(f"the token file given by {source} is empty")
        return token, source
    if os.environ.get(TOKEN_VARIABLE, "").strip():
        return os.environ[TOKEN_VARIABLE].strip(), f"the {TOKEN_VARIABLE} environment variable"
    raise TokenError(f"no token: pass --token TOKEN (or --token-file FILE, or set "
                     f"{TOKEN_VARIABLE}); a bot's token is shown when it is made at "
                     f"{args.server.rstrip('/')}/bots/new")


def refused_token(server: str, source: str) -> str:
    """What to do when the server refused the token (the token itself is never shown)."""
    return (f"{server.rstrip('/')} refused the token from {source} (wrong, or revoked): "
            f"make a new token on your bot's page ({server.rstrip('/')}/bots) and run again")


def run_bot(args: argparse.Namespace) -> int:
    """Play the bot as `args` say; a JSON line of its results on stdout. Exit 0 (also after
    Ctrl-C, SIGTERM or --timeout), 3 when another program took the token over, 2 when every
    challenge was refused for good, 1 after another error."""
    if getattr(args, "local", False):
        return run_local(args)
    token, source = read_token(args)
    try:
        return _run_bot(args, token, source)
    except Unauthorized:
        raise Unauthorized(refused_token(args.server, source)) from None


def run_local(args: argparse.Namespace) -> int:
    """`--local`: the games here, the same summary (a JSON line on stdout, words on stderr)."""
    log = (lambda text: None) if args.quiet else Runner.log_default
    variants = load_variants(args.bot)
    if args.variant not in variants:
        raise ValueError(f"{args.bot} plays {' and '.join(variants)} (its VARIANTS), "
                         f"not {args.variant}")
    tally, _ = play_local(args, Runner.log_default)
    print(json.dumps({"games": tally.games, "wins": tally.wins, "draws": tally.draws,
                      "losses": tally.losses, "aborted": tally.aborted,
                      "reasons": tally.reasons, "errors": tally.errors, "reconnects": 0,
                      "error": None}), flush=True)
    log(summary(tally))
    return 0


def _run_bot(args: argparse.Namespace, token: str, source: str) -> int:
    api = Api(args.server, token)
    log = (lambda text: None) if args.quiet else Runner.log_default
    variants = load_variants(args.bot)
    if args.variant not in variants:
        raise ValueError(f"{args.bot} plays {' and '.join(variants)} (its VARIANTS), "
                         f"not {args.variant}")
    mover = Mover(args.bot)
    try:
        mover.check(min(args.parallel, 4))
        try:
            said = api.say_variants(variants)
        except OSError as error:
            raise OSError(f"cannot reach {args.server}: {error}") from None
        if not said.get("ok"):
            raise ValueError(f"{args.server} refused: {said.get('error', {}).get('message')}")
        runner = Runner(api, mover, games=args.games, opponent=args.opponent,
                        variant=args.variant, parallel=args.parallel, log=log,
                        rated=args.rated)
        runner.program = args.bot
        if isinstance(said.get("move_seconds"), int | float):
            runner.move_seconds = float(said["move_seconds"])
        runner.log(f"{said['bot']['name']} plays {' and '.join(variants)} on {args.server}"
                   + ("" if args.rated else "; the games it starts are casual (--rated to "
                                            "count them)"))
        tally = runner.run(timeout=args.timeout)
        if runner.unauthorized:
            runner.error = refused_token(args.server, source)
    finally:
        mover.close()
    print(json.dumps({"games": tally.games, "wins": tally.wins, "draws": tally.draws,
                      "losses": tally.losses, "aborted": tally.aborted,
                      "reasons": tally.reasons, "errors": tally.errors,
                      "reconnects": runner.reconnects, "error": runner.error}), flush=True)
    log(summary(tally))
    if runner.error:
        print(f"{Path(sys.argv[0]).name}: {runner.error}", file=sys.stderr, flush=True)
    if runner.interrupted:
        return 0
    if runner.refused and runner.error == runner.refused:
        return REFUSED
    return REPLACED if runner.replaced else 1 if runner.error else 0


def main(argv: list[str] | None = None) -> int:
    """`python sdk.py mybot.py --token-file F`: this file on its own."""
    parser = argparse.ArgumentParser(prog="sdk.py", description="Play a ttt bot program.")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    # Ctrl-C ends the games cleanly, even when started from a shell that ignores it; SIGTERM
    # (a service stopped, `kill`) the same way.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return run_bot(args)
    except KeyboardInterrupt:
        return 0
    except (Unauthorized, OSError, ValueError) as error:
        print(f"sdk.py: error: {error}", file=sys.stderr)
        return 1
