"""gzip for the text answers (pages, scripts, stylesheets): the first load small on a phone.

Static files are compressed once per version, their comments left out; the home page once per
language (its cached copy's key, `ttt_page_key`, set by the page route).
"""

from __future__ import annotations

import gzip
import re

from flask import current_app, request

from ttt.web import i18n

COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml",
                "application/manifest+json")


_gzipped: dict[tuple[str, str], bytes] = {}


_CSS_COMMENT = re.compile(rb"/\*.*?\*/\n?", re.S)
_BLANK_LINES = re.compile(rb"\n\s*\n+")


# A script's whole-line comments (`// …`, `/** … */` opening a line; the notes for translators
# among them): no browser reads them, and every language's first load must fit 100 kB (they
# are a third of the scripts gzipped). Safe because no script has a template literal over
# several lines (tests/test_assets.py checks it), so no such line is inside a string.
_SCRIPT_COMMENTS = re.compile(rb"^[ \t]*(?://[^\n]*|/\*(?:[^*]|\*(?!/))*\*/[ \t]*)\n", re.M)


def _without_comments(css: bytes) -> bytes:
    """A stylesheet as the browser reads it, without its comments (a third of app.css gzipped:
    every language's first load must fit 100 kB). The file on disk keeps them."""
    return _BLANK_LINES.sub(b"\n", _CSS_COMMENT.sub(b"", css))


def compress(response):
    """gzip text answers for clients that take it: the first load stays small on a phone."""
    if (response.status_code != 200 or "gzip" not in request.headers.get("Accept-Encoding", "")
            or response.headers.get("Content-Encoding")
            or not response.mimetype.startswith(COMPRESSIBLE)):
        return response
    etag = response.headers.get("ETag")
    # The home page, the same for every visitor of a language: compressed once (its key,
    # set by pages._page, names the app's cached copy).
    page_key = getattr(response, "ttt_page_key", None)
    zipped_pages = current_app.extensions.setdefault("ttt_pages_gzip", {}) if page_key else {}
    cached = (_gzipped.get((request.path, etag)) if etag else zipped_pages.get(page_key))
    if cached is None:
        response.direct_passthrough = False
        body = response.get_data()
        if len(body) < 512:
            return response
        if etag and response.mimetype == "text/css":
            body = _without_comments(body)
        elif etag and response.mimetype in ("text/javascript", "application/javascript"):
            body = _SCRIPT_COMMENTS.sub(b"", body)
        # Static files are compressed once per version: the strongest level costs nothing then.
        cached = gzip.compress(body, compresslevel=9 if etag else 6)
        if etag and len(_gzipped) < 256:  # static files: compress each version once
            _gzipped[(request.path, etag)] = cached
        elif page_key and len(zipped_pages) < 4 * len(i18n.LANGUAGES):
            zipped_pages[page_key] = cached
    response.direct_passthrough = False
    response.set_data(cached)
    response.headers["Content-Encoding"] = "gzip"
    response.vary.add("Accept-Encoding")
    return response
