"""`python -m ttt bot create | revoke | list | run | ladder`: make bots and play them."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import threading
import time
from pathlib import Path

from ttt.bots import BotError
from ttt.bots.sdk import (
    Api,
    Runner,
    Unauthorized,
    add_run_arguments,
    load_move,
    load_variants,
    run_bot,
)

ROOT = Path(__file__).resolve().parents[2]


def _store_url(given: str | None) -> str:
    """The store the server uses: --store, else TTT_STORE, else the default SQLite file."""
    return given or os.environ.get("TTT_STORE") or f"sqlite:///{ROOT / 'instance' / 'ttt.sqlite3'}"


def _book(args: argparse.Namespace):
    from ttt.bots.book import open_book
    from ttt.store import open_store

    url = _store_url(args.store)
    if url.startswith("memory"):
        raise BotError("bad_request", "a memory:// store lives in the server's process: "
                                      "make bots on a sqlite:// or redis:// store")
    store = open_store(url)
    return store, open_book(store)


def cmd_create(args: argparse.Namespace) -> int:
    from ttt.bots.book import register

    store, book = _book(args)
    bot, token = register(book, store, args.name, args.about,
                          owner=args.owner if args.owner is not None else getpass.getuser(),
                          variants=args.variants.split(","))
    print(f"made bot {bot.name}; its token (shown once, keep it in a file only you can read):",
          file=sys.stderr)
    print(token)
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    _, book = _book(args)
    if not book.revoke(args.name):
        print(f"ttt: error: no bot named {args.name!r}", file=sys.stderr)
        return 1
    print(f"revoked {args.name}: its stream closes and its calls answer 401", file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    _, book = _book(args)
    for bot in book.all():
        print(json.dumps(bot.public()))
    return 0


def _token(path: str) -> str:
    return Path(path).read_text().strip()


def cmd_ladder(args: argparse.Namespace) -> int:
    """A round among the given bots (PROGRAM=TOKEN_FILE): every pair plays --games games,
    each bot starting half of them, all bots answering challenges meanwhile. With no
    programs, a round among the bots online on the server (the operator's token)."""
    if not args.bots:
        return online_ladder(args)
    entries = []
    for entry in args.bots:
        program, _, token_file = entry.partition("=")
        if not token_file:
            print(f"ttt: error: {entry!r} is not PROGRAM=TOKEN_FILE", file=sys.stderr)
            return 2
        api = Api(args.server, _token(token_file))
        variants = load_variants(program)
        said = api.say_variants(variants)  # as the SDK does: what each program plays
        if not said.get("ok"):
            raise ValueError(said.get("error", {}).get("message", "refused"))
        if args.variant not in variants:  # a round pairs only the bots that play its variant
            print(f"ttt: {said['bot']['name']} plays {' and '.join(variants)}: left out of "
                  f"this {args.variant} round", file=sys.stderr)
            continue
        entries.append((load_move(program), api, said["bot"]["name"]))
    runners = []
    for i, (move, api, _) in enumerate(entries):
        schedule = [f"bot:{name}" for j, (_, _, name) in enumerate(entries) if j != i
                    for _ in range((args.games + (i < j)) // 2)]
        runners.append(Runner(api, move, variant=args.variant, schedule=schedule, rated=True))
    threads = [threading.Thread(target=r.run, args=(args.timeout,), daemon=True)
               for r in runners]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + (args.timeout or 3600)
    while time.monotonic() < deadline and not all(r.idle() for r in runners):
        time.sleep(0.2)
    for runner in runners:
        runner.stop()
    ladder = Api(args.server, "-").call("/api/bots", method="GET")["bots"]
    print(json.dumps({"round": [{"bot": name, "wins": r.tally.wins, "draws": r.tally.draws,
                                 "losses": r.tally.losses, "error": r.error}
                                for (_, _, name), r in zip(entries, runners, strict=True)],
                      "ladder": [{k: b[k] for k in ("name", "rating", "vs_bots")}
                                 for b in ladder]}))
    return 0


def online_ladder(args: argparse.Namespace) -> int:
    """A round among the bots online, started with TTT_OPERATOR_TOKEN (ttt.bots.rounds)."""
    from ttt.bots.rounds import ladder_round

    token = os.environ.get("TTT_OPERATOR_TOKEN", "").strip()
    if not token:
        print("ttt: error: a round among the bots online needs the server's operator token "
              "in TTT_OPERATOR_TOKEN (or give PROGRAM=TOKEN_FILE pairs)", file=sys.stderr)
        return 2
    log = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    summary = ladder_round(args.server, token, args.games or 2, args.variant, args.parallel,
                           args.timeout or 3600.0, log)
    print(json.dumps(summary))
    return 1 if summary["error"] else 0


def add_parser(sub) -> None:
    """The `bot` sub-command and its own sub-commands."""
    bot = sub.add_parser("bot", help="make, revoke and run bots (the guide: /bots/guide)")
    cmds = bot.add_subparsers(dest="bot_command", required=True, parser_class=type(bot))
    create = cmds.add_parser("create", help="make a bot and print its token once")
    create.add_argument("name")
    create.add_argument("--about", default="")
    create.add_argument("--variants", default="classic",
                        help="what it plays: classic, ultimate or classic,ultimate (its "
                             "program's VARIANTS changes it when it starts)")
    create.add_argument("--owner", default=None, help="who made it (default: your user name)")
    revoke = cmds.add_parser("revoke", help="revoke a bot's token at once")
    revoke.add_argument("name")
    listing = cmds.add_parser("list", help="the bots in the store, one JSON line each")
    for p in (create, revoke, listing):
        p.add_argument("--store", default=None, help="the server's TTT_STORE (default: its)")
    create.set_defaults(run=_guarded(cmd_create))
    revoke.set_defaults(run=_guarded(cmd_revoke))
    listing.set_defaults(run=_guarded(cmd_list))
    run = cmds.add_parser("run", help="play a bot program (defines move(game) -> int)")
    add_run_arguments(run)  # the SDK's own options: `python sdk.py` takes the same
    run.set_defaults(run=_guarded(run_bot))
    ladder = cmds.add_parser("ladder", help="a round of games between the given bots, or "
                                            "(no programs) among the bots online")
    ladder.add_argument("bots", nargs="*", metavar="PROGRAM=TOKEN_FILE")
    ladder.add_argument("--server", default="http://127.0.0.1:5000")
    ladder.add_argument("--variant", choices=["classic", "ultimate"], default="classic")
    ladder.add_argument("--games", type=int, default=0)
    ladder.add_argument("--timeout", type=float, default=None, help="stop after this many s")
    ladder.add_argument("--parallel", type=int, default=None,
                        help="online round: live games a bot sits in at once (the server's cap)")
    ladder.add_argument("--quiet", action="store_true")
    ladder.set_defaults(run=_guarded(cmd_ladder))


def _guarded(command):
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except BotError as error:
            print(f"ttt: error: {error.message}", file=sys.stderr)
            return 2 if error.code == "bad_request" else 1
        except Unauthorized as error:
            print(f"ttt: error: {error}", file=sys.stderr)
            return 1
        except (OSError, ValueError) as error:
            print(f"ttt: error: {error}", file=sys.stderr)
            return 1

    return run
