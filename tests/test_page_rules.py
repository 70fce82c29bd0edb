"""The page decides nothing: no game rule or server list is written again in static/js.

Every list the page offers comes in the `config` object (Table.config), every cell it may play in
the view's `legal`, every replay link in the view's `replay`. This reads the page's modules as
text and fails when one of those comes back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ttt.match import CLOCKS, MODES
from ttt.table import REACTIONS
from ttt.variants import VARIANTS

JS = Path(__file__).resolve().parents[1] / "static" / "js"
# The protocol's numbering of ultimate cells (9 * board + square) lives in one module, which
# names squares and holds no rule (checked below).
NUMBERING = "squares.js"

LEVELS = sorted({level for rules in VARIANTS.values() for level in rules.levels})


def _code(text: str) -> str:
    """`text` without its comments (// to the end of a line, /* ... */), strings kept."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"(^|[^:])//.*$", r"\1", line) for line in text.splitlines())


def modules() -> dict[str, str]:
    return {path.name: _code(path.read_text(encoding="utf-8")) for path in sorted(JS.glob("*.js"))}


def _bare(line: str) -> str:
    """`line` with the insides of its string literals emptied (a number in a drawing's path)."""
    return re.sub(r'"[^"]*"', '""', line)


# (what it is, a pattern that finds it written in the page)
RULES = [
    ("the claim delay in words", re.compile(r"\ba minute\b|\b60 ?(s|seconds)\b")),
    ("the claim delay as a number", re.compile(r"(?<![%/*] )\b60(000)?\b")),
    ("an AI level name", re.compile(r"""["'`]({})["'`]""".format("|".join(LEVELS)))),
    ("the ultimate target arithmetic", re.compile(r"%\s*9\b|\b9\s*\*|\*\s*9\b|/\s*9\b")),
    ("where the mover may play",
     re.compile(r"next\s*===\s*null\s*\|\|\s*[\w.]*next\s*===(?!\s*undefined)|next\s*===\s*b\b")),
    ("a reaction", re.compile("|".join(re.escape(f'"{r}"') for r in REACTIONS))),
    ("the clock choices", re.compile(r"\s*,\s*".join(rf"\b{c}\b" for c in CLOCKS[:2]))),
    ("the modes list", re.compile(r"""["']{}["']\s*,\s*["']{}["']""".format(*MODES[:2]))),
    ("a replay link built", re.compile(r"""[`"'}]/r/""")),
    ("the record key of a variant", re.compile(r"""[`"']ultimate-(\$\{|[`"']\s*\+)""")),
]


@pytest.mark.parametrize(("what", "pattern"), RULES, ids=[what for what, _ in RULES])
def test_the_page_writes_no_rule_or_server_list(what, pattern):
    found = [f"{name}:{number}: {line.strip()}"
             for name, text in modules().items() if name != NUMBERING or "arithmetic" not in what
             for number, line in enumerate(text.splitlines(), 1)
             if pattern.search(_bare(line) if "number" in what else line)]
    assert found == [], f"{what} is written in the page:\n" + "\n".join(found)


def test_the_numbering_module_holds_no_rule():
    text = modules()[NUMBERING]
    assert not re.search(r"\bnext\b|\bboards\b|\blegal\b|\bturn\b", text)


@pytest.mark.parametrize(("what", "pattern"), RULES, ids=[what for what, _ in RULES])
def test_each_pattern_finds_what_it_is_for(what, pattern):
    """A check that finds nothing proves nothing: each finds the rule as the page once wrote it."""
    samples = {
        "the claim delay in words": "can claim it in a minute",
        "the claim delay as a number": "const CLAIM_AFTER = 60;",
        "an AI level name": 'level: ["easy", "medium", "hard", "perfect"],',
        "the ultimate target arithmetic": "const index = 9 * shown.next + digit;",
        "where the mover may play":
            'shown.boards[b] === "." && (shown.next === null || shown.next === b)',
        "a reaction": 'const REACTIONS = ["👍", "gg"];',
        "the clock choices": "const CLOCKS = [10, 30, 60];",
        "the modes list": 'mode: ["ai", "local", "friend"],',
        "a replay link built": "return `${location.origin}/r/${path}`;",
        "the record key of a variant": "return `ultimate-${game.level}`;",
    }
    assert pattern.search(samples[what])


def test_every_module_a_page_preloads_exists():
    """A preload of a module that is gone is a 404 on every first visit (and a console error)."""
    templates = JS.parents[1] / "templates"
    for template in templates.glob("*.html"):
        text = template.read_text(encoding="utf-8")
        for listed in re.findall(r"for module in \[([^\]]*)\]", text):
            for name in re.findall(r'"([\w-]+)"', listed):
                assert (JS / f"{name}.js").is_file(), f"{template.name} preloads {name}.js"
