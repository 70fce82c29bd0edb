"""The player's language: chosen, remembered, and its words for the page.

Flask-Babel translates the server's words (templates, the page's refusals) from the gettext
catalogs in ttt/translations/ (`make translations` extracts, updates and compiles them). The
page's own words (static/js, marked with t()/tn()) travel to the browser as the player's
language's catalog inside `config`: only that language, only the page's messages.

The language: `?lang=` (a language menu link, which remembers it in the session cookie), else
the one remembered, else the browser's Accept-Language, else English. A share link carries no
language, so the friend who opens it reads their own.
"""

from __future__ import annotations

import gettext
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from babel import Locale
from babel.messages.pofile import read_po
from flask import Flask, request, session
from flask_babel import Babel, format_decimal, get_locale
from flask_babel import gettext as translate
from markupsafe import Markup

TRANSLATIONS = Path(__file__).resolve().parents[1] / "translations"

# code -> (its own name, writing direction). English first: the source language.
LANGUAGES: dict[str, tuple[str, str]] = {
    "en": ("English", "ltr"),
    "es": ("Español", "ltr"),
    "pt_BR": ("Português (Brasil)", "ltr"),
    "fr": ("Français", "ltr"),
    "de": ("Deutsch", "ltr"),
    "ar": ("العربية", "rtl"),
}
DEFAULT = "en"
# Where the page's words are: their messages go to the browser, the rest stay on the server.
# Besides static/js, the refusals a person reads on the page (marked N_,
# ttt.runtime.translation): the wire carries them in English and the page shows its catalog's
# words for them.
PAGE_SOURCES = ("static/js/", "ttt/")
SERVER_ONLY = ("ttt/web/", "ttt/bots/")  # their words are the server's pages' (gettext there)


def _known(code: str | None) -> str | None:
    """The supported language a `?lang=` or remembered value names, or None."""
    if not isinstance(code, str):
        return None
    code = code.replace("-", "_")
    for known in LANGUAGES:
        if code.lower() == known.lower():
            return known
    return None


def select_locale() -> str:
    """The request's language: asked for (and then remembered), remembered, or the browser's."""
    asked = _known(request.args.get("lang"))
    if asked:
        session["lang"] = asked
        return asked
    remembered = _known(session.get("lang"))
    if remembered:
        return remembered
    return negotiate(request.headers.get("Accept-Language", ""))


# Accept-Language, read in bounded time: the first MAX_RANGES ranges of at most MAX_HEADER
# characters (a browser sends a handful; a 7.5 kB header costs no more than this).
MAX_HEADER = 1024
MAX_RANGES = 24
_RANGE = re.compile(r"([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*q\s*=\s*([0-9.]{1,5}))?",
                    re.ASCII)
# Each language's primary subtag, and the one a bare "pt" means.
_PRIMARY = {code.split("_")[0].lower(): code for code in LANGUAGES}


def ranges(header: str) -> list[tuple[str, float]]:
    """Accept-Language's ranges with their q, as sent (q=1 when absent), bounded: malformed
    ranges are skipped, a q outside 0..1 is read as 0."""
    found: list[tuple[str, float]] = []
    for part in header[:MAX_HEADER].split(",", MAX_RANGES)[:MAX_RANGES]:
        match = _RANGE.fullmatch(part.strip())
        if not match:
            continue
        try:
            quality = float(match.group(2)) if match.group(2) is not None else 1.0
        except ValueError:
            continue
        found.append((match.group(1).lower(), quality if 0 <= quality <= 1 else 0.0))
    return found


def negotiate(header: str) -> str:
    """The language a visitor's Accept-Language means: its ranges in the visitor's order of q
    (ties in the order sent), each matched by its primary subtag ("es-MX" is our es, "pt" and
    "pt-PT" our pt_BR), the first that matches; "q=0" means "not this one". Werkzeug's
    best_match prefers a lower-q exact match to a higher-q regional one ("en-US,es;q=0.9"
    picked es): a visitor who puts English first means English."""
    said = ranges(header)
    refused = {tag for tag, quality in said if quality == 0}
    for tag, _quality in sorted((r for r in said if r[1] > 0), key=lambda r: -r[1]):
        primary = tag.split("-")[0]
        if primary == "*":
            continue
        code = _PRIMARY.get(primary)
        if code and primary not in refused and html_lang(code).lower() not in refused:
            return code
    return DEFAULT


def current() -> str:
    """The request's language code (one of LANGUAGES)."""
    return str(get_locale() or DEFAULT)


def html_lang(code: str | None = None) -> str:
    """`<html lang>`'s value: BCP 47, "pt-BR"."""
    return (code or current()).replace("_", "-")


def direction(code: str | None = None) -> str:
    """"rtl" or "ltr"."""
    return LANGUAGES.get(code or current(), ("", "ltr"))[1]


def _catalog_path(code: str) -> Path:
    return TRANSLATIONS / code / "LC_MESSAGES" / "messages.po"


def _plural_map(code: str, expression: str) -> dict[str, int]:
    """CLDR plural category (what the browser's Intl.PluralRules says) -> gettext form index,
    found by sampling numbers: the catalog's Plural-Forms is what the translator wrote for."""
    rule = Locale.parse(code).plural_form
    index = gettext.c2py(expression)
    found: dict[str, int] = {}
    for n in [*range(0, 250), 1000, 1001, 100000, 1000000, 2000000]:
        found.setdefault(rule(n), index(n))
    return found


def message_key(msgid: str) -> str:
    """A page message's key in `config`: 5 base-36 digits of the FNV-1a hash of its UTF-8 bytes
    (static/js/squares.js computes the same). Not the English itself: the catalog that every first
    load carries is a fifth smaller (tests/test_i18n.py checks that no two messages share one)."""
    value = 0x811C9DC5
    for byte in msgid.encode():
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    digits = ""
    while len(digits) < 5:
        value, digit = divmod(value, 36)
        digits += "0123456789abcdefghijklmnopqrstuvwxyz"[digit]
    return digits


@cache
def page_catalog(code: str) -> dict[str, Any]:
    """The page's words in `code`: {"messages": {key: text or [forms]}, "plurals": {...}}.
    English sends no messages (the page's msgids are English)."""
    path = _catalog_path(code)
    if code == DEFAULT or not path.exists():
        return {"messages": {}, "plurals": {"one": 0, "other": 1}}
    with path.open("rb") as file:
        catalog = read_po(file, locale=code)
    messages: dict[str, Any] = {}
    for message in catalog:
        if not message.id or message.fuzzy:
            continue
        if not any(where.startswith(PAGE_SOURCES) and not where.startswith(SERVER_ONLY)
                   for where, _line in message.locations):
            continue
        if isinstance(message.id, tuple):
            forms = list(message.string)
            if all(forms):
                messages[message_key(message.id[0])] = forms
        elif message.string:
            messages[message_key(message.id)] = message.string
    expression = catalog.plural_expr
    return {"messages": messages, "plurals": _plural_map(code, expression)}


def page_words() -> dict[str, Any]:
    """What `config` carries for the page's words: the language, its direction, its catalog."""
    code = current()
    return {"lang": html_lang(code), "dir": direction(code), **page_catalog(code)}


def menu(path: str) -> list[dict[str, str]]:
    """The language menu's entries for the page at `path`: each language's link to it."""
    return [{"code": code, "lang": html_lang(code), "name": name,
             "href": f"{path}?lang={code}", "current": code == current()}
            for code, (name, _dir) in LANGUAGES.items()]


def page_json(value: Any) -> Markup:
    """`tojson` for the page's <script type="application/json">: compact, and UTF-8 rather than
    \\u escapes (an Arabic catalog is half the bytes), still safe inside HTML."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("'", "\\u0027"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return Markup(text)


NAMES = frozenset({"name", "other", "owner"})  # a refusal's placeholders that hold a name


# Letters of a right-to-left script (Hebrew, Arabic, Syriac, Thaana, N'Ko, their forms).
RIGHT_TO_LEFT = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


def isolate(name: Any) -> str:
    """A name inside a translated sentence or a title, between U+2068 (first strong isolate)
    and U+2069 (pop directional isolate): "Bob (2)!" keeps its order in Arabic. Needed where
    the page or the name runs right to left (static/js/words.js decides the same way). Plain
    text, escaped as any other; markup around a name uses <bdi> instead."""
    if not name:
        return ""
    text = str(name)
    if direction() == "rtl" or RIGHT_TO_LEFT.search(text):
        return f"\u2068{text}\u2069"
    return text


def said(message: Any) -> str | None:
    """A refusal's English message (from the master) or a BotError in the player's language,
    when the catalog has it (those marked N_); else as it came. A BotError's {placeholders}
    are filled after translation, into the translator's sentence."""
    if message is None or message == "":
        return message
    if isinstance(message, Exception) and hasattr(message, "template"):
        text = translate(message.template)
        params = {key: isolate(value) if key in NAMES else value
                  for key, value in getattr(message, "params", {}).items()}
        try:
            return text.format(**params) if params else text
        except (KeyError, IndexError, ValueError):  # a catalog's mistake: the English then
            return str(message)
    return translate(message)


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_TRANSLATION_DIRECTORIES", str(TRANSLATIONS))
    app.config.setdefault("BABEL_DEFAULT_LOCALE", DEFAULT)
    Babel(app, locale_selector=select_locale)
    # Numbers as the language writes them ("1.234", "١٢"): the move counts, clocks, rows.
    app.jinja_env.filters["format_number"] = format_decimal
    app.jinja_env.globals["page_words"] = page_words
    app.jinja_env.filters["page_json"] = page_json
    app.jinja_env.filters["isolate"] = isolate

    @app.after_request
    def _said_in(response):
        """A page says its language and that it depends on the visitor's choice: a shared
        cache then keeps one copy per language (Accept-Language) and per remembered choice
        (the session cookie)."""
        if response.mimetype == "text/html":
            response.headers["Content-Language"] = html_lang()
            response.vary.add("Accept-Language")
            response.vary.add("Cookie")
        return response

    @app.context_processor
    def _language() -> dict[str, Any]:
        # A form's answer (a POST) links to the home page: its own address takes no GET.
        here = request.path if request.method == "GET" else "/"
        return {"html_lang": html_lang(), "html_dir": direction(), "language_menu": menu(here)}
