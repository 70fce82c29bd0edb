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
