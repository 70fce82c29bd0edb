"""Static files fingerprinted at start-up: no build step, and a phone revalidates nothing.

Every file under static/ gets a version, a hash of its content; `url_for('static', ...)` adds it
as `?v=<version>` (a `url_defaults` hook, so the templates need no change), and an answer asked
for with the current version is `immutable` for a year. An ES module's imports are rewritten to
the same versioned URLs, so a module loaded by `import` is the very module a `modulepreload`
fetched, and the browser never asks the server again for a file it has. A JavaScript file's
version covers every file it imports, directly or not (its rewritten imports name them).
Files are read once, at start-up (as the service worker's precache list always was): an edit
under static/ is served from the next start. The pages load their scripts bundled (bundle.py):
`bundle/main.js` and `bundle/main.later.js` are made here, from the same sources, and
versioned like any file.
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from flask import Flask, Response, request
from markupsafe import Markup

from ttt.web.http import bundle

YEAR = "public, max-age=31536000, immutable"
# The stylesheets a page carries inline, so that nothing blocks its first paint;
# the CSP names each by its hash.
INLINE = ("css/app.css", "css/rtl.css")
_CSS_COMMENT = re.compile(r"/\*.*?\*/\n?", re.S)
_BLANK_LINES = re.compile(r"\n\s*\n+")
# `from "./x.js"`, `import "./x.js"`, `import("./x.js")`: relative specifiers only.
IMPORT = re.compile(r"""(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(\.{1,2}/[^"'?#]+)\2""")
# The pages' scripts, each with its imports as one file (bundle/<name>.js) and the modules it
# loads later as another (bundle/<name>.later.js): two requests where a first visit made ~22.
BUNDLED = ("js/main.js", "js/replay.js", "js/botcopy.js")
# sw.js is filled in and served by pages.sw at the site's root, never from /static/.
UNVERSIONED = frozenset({"sw.js"})


@dataclass(frozen=True)
class Asset:
    """One static file as served: its body (imports rewritten) and its version."""

    body: bytes
    version: str
    mimetype: str


def _imports(name: str, source: str) -> list[str]:
    """The static files a module imports, as paths under static/."""
    base = posixpath.dirname(name)
    return [posixpath.normpath(posixpath.join(base, match.group(3)))
            for match in IMPORT.finditer(source)]


def build(static: Path) -> dict[str, Asset]:
    """Every file under `static`, keyed by its path there ("js/main.js")."""
    raw = {path.relative_to(static).as_posix(): path.read_bytes()
           for path in sorted(static.rglob("*")) if path.is_file()}
    raw = {name: body for name, body in raw.items() if name not in UNVERSIONED}
    scripts = {name: body.decode("utf-8") for name, body in raw.items() if name.endswith(".js")}
    graph = {name: [dep for dep in _imports(name, source) if dep in raw]
             for name, source in scripts.items()}

    def closure(name: str) -> list[str]:
        seen, todo = {name}, [name]
        while todo:
            for dep in graph.get(todo.pop(), []):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return sorted(seen)

    versions: dict[str, str] = {}
    for name in raw:
        digest = hashlib.sha256()
        for part in closure(name) if name in scripts else [name]:
            digest.update(part.encode() + b"\0" + raw[part] + b"\0")
        versions[name] = digest.hexdigest()[:12]

    def rewrite(name: str, source: str) -> str:
        def versioned(match: re.Match) -> str:
            target = posixpath.normpath(posixpath.join(posixpath.dirname(name), match.group(3)))
            if target not in versions:
                return match.group(0)
            return f"{match.group(1)}{match.group(2)}{match.group(3)}?v={versions[target]}" \
                   f"{match.group(2)}"
        return IMPORT.sub(versioned, source)

    assets = {}
    for name, body in raw.items():
        if name in scripts:
            body = rewrite(name, scripts[name]).encode("utf-8")
        mimetype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if name.endswith(".js"):
            mimetype = "text/javascript"
        elif name.endswith(".webmanifest"):
            mimetype = "application/manifest+json"
        assets[name] = Asset(body, versions[name], mimetype)
    assets.update(bundles(scripts))
    return assets


def _script(body: str) -> Asset:
    return Asset(body.encode("utf-8"), hashlib.sha256(body.encode()).hexdigest()[:12],
                 "text/javascript")


def bundles(scripts: dict[str, str]) -> dict[str, Asset]:
    """Each page script of BUNDLED (that is there) bundled: bundle/<name>.js and, when it
    loads modules later, bundle/<name>.later.js, which the first names by its version."""
    made = {}
    for entry in BUNDLED:
        if entry not in scripts:
            continue
        stem = posixpath.splitext(posixpath.basename(entry))[0]
        later_name = f"bundle/{stem}.later.js"

        def address(later: str, name: str = later_name) -> str:
            made[name] = _script(later)
            return f"./{posixpath.basename(name)}?v={made[name].version}"

        first, _ = bundle.bundle(entry, scripts, address)
        made[f"bundle/{stem}.js"] = _script(first)
    return made


def url(app: Flask, name: str) -> str:
    """The versioned URL of a static file (for code outside a template)."""
    asset = app.extensions["ttt_assets"].get(name)
    return f"/static/{name}?v={asset.version}" if asset else f"/static/{name}"


def stylesheet(css: str) -> str:
    """A stylesheet as a page carries it: without its comments and blank lines."""
    return _BLANK_LINES.sub("\n", _CSS_COMMENT.sub("", css))


def style_hash(text: str) -> str:
    """The CSP source that allows a <style> element holding exactly `text`."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def install(app: Flask) -> list[str]:
    """Fingerprint app.static_folder, version url_for('static'), serve the versions; give the
    templates `inline_style(name)`. Returns the CSP sources of the inline stylesheets."""
    assets = build(Path(app.static_folder))
    app.extensions["ttt_assets"] = assets
    inline = {name: stylesheet(assets[name].body.decode("utf-8"))
              for name in INLINE if name in assets}

    def inline_style(name: str) -> Markup:
        return Markup("<style>") + Markup(inline[name]) + Markup("</style>")

    app.jinja_env.globals["inline_style"] = inline_style
    plain = app.view_functions["static"]

    @app.url_defaults
    def _version(endpoint: str, values: dict) -> None:
        if endpoint == "static" and "v" not in values:
            asset = assets.get(values.get("filename", ""))
            if asset:
                values["v"] = asset.version

    def static(filename: str) -> Response:
        asset = assets.get(filename)
        if asset is None:
            return plain(filename=filename)
        response = Response(asset.body, mimetype=asset.mimetype)
        response.set_etag(asset.version)
        # The current version is forever; any other address (none, or a release gone) is
        # today's content, revalidated each time.
        current = request.args.get("v") == asset.version
        response.headers["Cache-Control"] = YEAR if current else "no-cache"
        return response.make_conditional(request)

    app.view_functions["static"] = static
    return [style_hash(text) for text in inline.values()]
