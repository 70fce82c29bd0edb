"""The page's static files: every one a page names is served.

Whether the page writes a rule or a server list again is not read here from its text (patterns
for old spellings passed while the rule came back in a new one): tests/browser/test_page_reads.py
runs the page against a server that sends odd but valid values and checks that it shows exactly
what it was sent.
"""

from __future__ import annotations

import re
from pathlib import Path

from ttt.web.http import assets

JS = Path(__file__).resolve().parents[2] / "static" / "js"


def test_every_static_file_a_page_names_is_served():
    """A script or preload that is gone is a 404 on every first visit (and a console error);
    the bundles (bundle/<name>.js) are made at start-up from static/js."""
    served = assets.build(JS.parent)
    templates = JS.parents[1] / "templates"
    named = 0
    for template in templates.glob("*.html"):
        text = template.read_text(encoding="utf-8")
        for name in re.findall(r"url_for\('static', filename='([^']+)'\)", text):
            named += 1
            assert name in served, f"{template.name} names {name}"
    assert named > 0


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
