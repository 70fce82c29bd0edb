"""A match's stored form: the JSON object every store keeps, one per game.

Pure: the stores (sqlite, Redis, memory) and the tools that read rows share it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from ttt.game.match import SIDES, Match, ending, no_score, nobody
from ttt.rules.classic import Termination


def to_json(match: Match) -> dict[str, Any]:
    """Everything about a match, for storage."""
    return {
        "id": match.id, "mode": match.mode, "level": match.level, "seats": dict(match.seats),
        "moves": list(match.moves),
        "finish": ([match.finish.termination.value, match.finish.winner] if match.finish
                   else None),
        "aborted_by": match.aborted_by,
        "rematch_id": match.rematch_id, "offer": match.offer, "hints": dict(match.hints),
        "hinted": match.hinted, "start": match.start, "series": dict(match.series),
        "names": dict(match.names), "seated": dict(match.seated), "seen": dict(match.seen),
        "clock": match.clock,
        "deadline": match.deadline, "variant": match.variant, "origin": match.origin,
        "created": match.created, "updated": match.updated, "rev": match.rev,
    }


def from_json(data: dict[str, Any]) -> Match:
    """The match stored by to_json (also reads the version 1 form)."""
    finish = data.get("finish")
    if finish:
        finish = ending(Termination(finish[0]), finish[1])
    elif data.get("claimed_by"):
        finish = ending(Termination.CLAIM, data["claimed_by"])
    return Match.whole(dict(
        id=data["id"], mode=data["mode"], level=data["level"], seats=dict(data["seats"]),
        moves=tuple(data["moves"]), finish=finish, rematch_id=data.get("rematch_id"),
        offer=data.get("offer"), hints=dict(data.get("hints") or {"X": 0, "O": 0}),
        hinted=data.get("hinted"), start=data.get("start", 0),
        series=dict(data.get("series") or no_score()),
        names=dict(data.get("names") or nobody()),
        seated=dict(data.get("seated") or {m: data["created"] for m in SIDES}),
        seen=dict(data.get("seen") or nobody()),
        clock=data.get("clock"), deadline=data.get("deadline"),
        aborted_by=data.get("aborted_by"),
        variant=data.get("variant", "classic"), origin=data.get("origin"),
        created=data["created"], updated=data["updated"], rev=data["rev"],
    ))


def dumps(data: Any) -> str:
    """Stored JSON text: compact, UTF-8 as it is. orjson (several times the standard
    library's speed, and a store write's text is built on every move); the
    standard library for anything orjson refuses (an integer past 64 bits), so what was
    storable stays storable."""
    try:
        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(data, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """Stored JSON text read back (orjson; falls back to the standard library's looser
    reading, so that rows written by any earlier version stay readable)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def encode(match: Match) -> str:
    """A match as stored text."""
    return dumps(to_json(match))


def decode(text: str | bytes) -> Match:
    """The match stored as `text`."""
    return from_json(loads(text))
