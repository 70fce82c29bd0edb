"""The page's modules as files: every module a page preloads exists.

Whether the page writes a rule or a server list again is not read here from its text (patterns
for old spellings passed while the rule came back in a new one): tests/browser/test_page_reads.py
runs the page against a server that sends odd but valid values and checks that it shows exactly
what it was sent.
"""

from __future__ import annotations

import re
from pathlib import Path

JS = Path(__file__).resolve().parents[1] / "static" / "js"


def test_every_module_a_page_preloads_exists():
    """A preload of a module that is gone is a 404 on every first visit (and a console error)."""
    templates = JS.parents[1] / "templates"
    for template in templates.glob("*.html"):
        text = template.read_text(encoding="utf-8")
        for listed in re.findall(r"for module in \[([^\]]*)\]", text):
            for name in re.findall(r'"([\w-]+)"', listed):
                assert (JS / f"{name}.js").is_file(), f"{template.name} preloads {name}.js"


def test_every_stylesheet_closes_each_block_it_opens():
    """A block left open swallows every rule after it into a media query (two branches' CSS
    appended at the end of app.css once put a whole issue's rules inside a phone-only block)."""
    for sheet in (JS.parent / "css").glob("*.css"):
        text = re.sub(r"/\*.*?\*/", "", sheet.read_text(encoding="utf-8"), flags=re.S)
        text = re.sub(r'"[^"\n]*"', '""', text)
        depth = 0
        for number, line in enumerate(text.splitlines(), 1):
            depth += line.count("{") - line.count("}")
            assert depth >= 0, f"{sheet.name}:{number}: a '}}' closes nothing"
        assert depth == 0, f"{sheet.name}: {depth} block(s) never closed"
