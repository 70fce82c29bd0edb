"""Every friend in their own language (issue 35): the catalogs complete and in step with the
code, the glossary kept, nothing a person reads left unmarked, the language chosen well."""

from __future__ import annotations

import ast
import gettext
import io
import json
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from ttt.web import i18n

ROOT = Path(__file__).resolve().parents[3]
TRANSLATIONS = ROOT / "ttt" / "translations"
LANGS = [code for code in i18n.LANGUAGES if code != i18n.DEFAULT]
GLOSSARY = json.loads((TRANSLATIONS / "glossary.json").read_text(encoding="utf-8"))
PLACEHOLDER = re.compile(r"\{\w+\}|%\(\w+\)s")
# A plural form may spell its number out ("ثانيتان": two seconds).
COUNTS = {"{n}", "%(num)s", "%(count)s"}


def catalog(code: str):
    with (TRANSLATIONS / code / "LC_MESSAGES" / "messages.po").open("rb") as file:
        return read_po(file, locale=code)


def forms(message) -> list[str]:
    return list(message.string) if isinstance(message.id, tuple) else [message.string]


def english(message) -> str:
    return message.id[0] if isinstance(message.id, tuple) else message.id


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> set:
    """The msgids `make translations` extracts from the code now (its pybabel command)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    keywords = re.search(r"extract -F babel.cfg ((?:-k \S+ )+)", makefile).group(1).split()
    out = tmp_path_factory.mktemp("pot") / "messages.pot"
    subprocess.run([sys.executable, "-c", "from babel.messages.frontend import main; main()",
                    "-q", "extract", "-F", "babel.cfg", *keywords, "-o", str(out), "."],
                   cwd=ROOT, check=True)
    with out.open("rb") as file:
        return {(m.context, m.id) for m in read_po(file) if m.id}


@pytest.mark.parametrize("code", LANGS)
def test_every_catalog_is_complete_with_no_fuzzy_entry(code):
    problems = []
    for message in catalog(code):
        if not message.id:
            continue
        if message.fuzzy:
            problems.append(f"fuzzy: {message.id!r}")
        texts = forms(message)
        if not all(texts):
            problems.append(f"missing: {message.id!r}")
            continue
        wanted = set(PLACEHOLDER.findall(english(message)))
        for text in texts:
            found = set(PLACEHOLDER.findall(text))
            if isinstance(message.id, tuple):
                wanted, found = wanted - COUNTS, found - COUNTS
            if found != wanted:
                problems.append(f"placeholders {sorted(found)} != {sorted(wanted)}: {text!r}")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("code", LANGS)
def test_every_catalog_holds_every_marked_string(code, extracted):
    held = {(m.context, m.id) for m in catalog(code) if m.id}
    assert extracted - held == set(), "run `make translations` and translate the new strings"
    assert held - extracted == set(), "run `make translations`: these are no longer used"


@pytest.mark.parametrize("code", LANGS)
def test_the_committed_mo_is_the_po_compiled(code):
    built = io.BytesIO()
    write_mo(built, catalog(code))
    built.seek(0)
    committed = TRANSLATIONS / code / "LC_MESSAGES" / "messages.mo"
    with committed.open("rb") as file:
        assert gettext.GNUTranslations(file)._catalog == gettext.GNUTranslations(built)._catalog, \
            "run `make translations` (pybabel compile)"


@pytest.mark.parametrize("code", LANGS)
def test_each_catalog_uses_the_glossary_words(code):
    words = GLOSSARY[code]
    problems = []
    for message in catalog(code):
        if not message.id:
            continue
        source = re.sub(r"<[^>]+>", "", PLACEHOLDER.sub("", english(message)))
        for term, pattern in GLOSSARY["terms"].items():
            if not re.search(pattern, source, re.IGNORECASE):
                continue
            for text in forms(message):
                if not any(word.lower() in text.lower() for word in words[term]):
                    problems.append(f"{term} ({'/'.join(words[term])}): {text!r}")
    assert problems == [], "\n".join(problems)


def test_the_glossary_covers_the_game_words_in_every_language():
    for code in LANGS:
        assert set(GLOSSARY[code]) == set(GLOSSARY["terms"]), code
    assert {"board", "square", "turn", "draw", "claim", "rematch", "clock"} <= set(
        GLOSSARY["terms"])


# ---- Nothing left behind: every word a person reads is marked for translation. ----

# Literal text that is the same in every language: marks, sizes, names, symbols, codes.
ALLOWED_TEMPLATE_TEXT = {"X", "O", "ttt", "· ttt", "#", "–", "·", "…", "🤖", "3×3", "9×9", "sdk.py"}
# The page's literals that are not words for people: keys, errors, events, storage values.
ALLOWED_JS = {
    "Escape", "Enter", "Home", "End", "ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown",
    "AbortError", "NotAllowedError", "Tab", "Space", "Backspace", "Delete", "PageUp",
    "PageDown", "Spacebar",
    "io client disconnect",  # socket.io's reason for a disconnect the page asked for
}
SAID = ("aria-label", "title", "alt", "placeholder", "aria-description")
GAP = "\x00"
GETTEXT = {"_", "gettext", "ngettext", "pgettext", "npgettext"}
SKIPPED_TAGS = {"script", "style", "code", "pre", "kbd"}


VOID = {"input", "img", "br", "meta", "link", "hr", "source", "col", "wbr"}


class Words(HTMLParser):
    """The text a person reads or hears in a piece of HTML: text and the said attributes.
    Code, keys and what is marked lang="en" (the bot guide's API reference under its
    translated headings) are not the page's words."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.skipping = 0
        self.open: list[bool] = []  # per open element: whether it started a skipped part

    def handle_starttag(self, tag, attrs):
        skipped = tag in SKIPPED_TAGS or dict(attrs).get("lang") == "en"
        if tag not in VOID:
            self.open.append(skipped)
            self.skipping += skipped
        if self.skipping:
            return
        for name, value in attrs:
            if name in SAID and value:
                self.found.append(value)

    def handle_endtag(self, tag):
        if tag not in VOID and self.open:
            self.skipping -= self.open.pop()

    def handle_data(self, data):
        if not self.skipping and data.strip():
            self.found.append(data.strip())


def wordy(text: str) -> bool:
    return re.search(r"[^\W\d_]{2,}", text) is not None


def test_no_template_text_is_left_unmarked(app):
    """Each template's HTML with every Jinja part (and {% trans %} block) as a gap: no text
    or said attribute with words may remain, nor a wordy string literal outside _()."""
    env = app.jinja_env
    problems = []
    for path in sorted((ROOT / "templates").glob("*.html")):
        source = path.read_text(encoding="utf-8")
        skeleton: list[str] = []
        in_trans = False
        calls: list[str | None] = []
        previous = previous_name = None
        for line, kind, value in env.lex(source):
            if kind == "name" and value == "trans" and previous == "block_begin":
                in_trans = True
            elif kind == "name" and value == "endtrans":
                in_trans = False
            if kind == "operator" and value == "(":
                calls.append(previous_name)
            elif kind == "operator" and value == ")" and calls:
                calls.pop()
            if kind == "data" and not in_trans:
                skeleton.append(value)
            elif not skeleton or skeleton[-1] != GAP:
                skeleton.append(GAP)
            if kind == "string" and not (calls and calls[-1] in GETTEXT) and \
                    re.fullmatch(r"[A-Z]?[a-z]+(?: [a-z]+)+[.!?…]?|[A-Z][a-z]{2,}", value):
                problems.append(f"{path.name}:{line}: string {value!r}")
            previous_name = value if kind == "name" else None
            previous = kind if kind != "whitespace" else previous
        parser = Words()
        parser.feed("".join(skeleton))
        for found in parser.found:
            problems += [f"{path.name}: {text.strip()!r}" for text in found.split(GAP)
                         if wordy(text) and text.strip() not in ALLOWED_TEMPLATE_TEXT]
    assert problems == [], "\n".join(problems)


T_CALL = re.compile(r'\btn?\(\s*"(?:[^"\\]|\\.)*"(?:\s*,\s*"(?:[^"\\]|\\.)*")?')
JS_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`')


def test_no_page_words_are_left_unmarked():
    problems = []
    for path in sorted((ROOT / "static" / "js").glob("*.js")):
        code = path.read_text(encoding="utf-8")
        code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
        code = "\n".join(re.sub(r"(^|\s)//.*$", "", line) for line in code.splitlines())
        code = T_CALL.sub("t(", code)
        for match in JS_LITERAL.finditer(code):
            text = match.group(1) if match.group(1) is not None else match.group(2)
            text = re.sub(r"\$\{[^}]*\}", " ", text)
            if text in ALLOWED_JS or re.search(r"[#.\[\]=/:@(]|^[a-z-]+$", text) \
                    or re.fullmatch(r"[a-z0-9 -]*-[a-z0-9 -]*", text):
                continue  # selectors, URLs, attribute names, codes
            if re.search(r"[A-Za-z]{2,}[ ,!?—;’']+[A-Za-z]{2,}", text) or \
                    re.fullmatch(r"[A-Z][a-z]{2,}", text.strip()):
                problems.append(f"{path.name}: {text!r}")
    assert problems == [], "\n".join(problems)


def test_refusals_a_person_reads_are_marked():
    """The page shows a not_allowed refusal's message: each is marked N_ (ttt.master.replies)."""
    problems = []
    for path in sorted((ROOT / "ttt").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "MatchError"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and node.args[0].value == "not_allowed" and len(node.args) > 1):
                reason = node.args[1]
                marked = isinstance(reason, ast.Call) and getattr(reason.func, "id", "") == "N_"
                if isinstance(reason, ast.IfExp):
                    marked = all(isinstance(part, ast.Call) and part.func.id == "N_"
                                 for part in (reason.body, reason.orelse))
                if not marked and not isinstance(reason, ast.Call):  # str(error): a rule's own
                    problems.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert problems == [], "\n".join(problems)


# ---- The language chosen well, and the pages in it. ----

def lang_of(html: str) -> tuple[str, str]:
    found = re.search(r'<html lang="([^"]+)" dir="(ltr|rtl)">', html)
    return found.group(1), found.group(2)


def test_the_first_visit_follows_accept_language_and_the_menu_is_remembered(app):
    client = app.test_client()
    html = client.get("/", headers={"Accept-Language": "es-ES,es;q=0.9,en;q=0.8"}).text
    assert lang_of(html) == ("es", "ltr")
    assert "Nueva partida" in html and '"lang":"es"' in html
    # The menu: links to this page in each language, each name in its own.
    assert 'href="/?lang=ar" lang="ar"' in html and ">العربية<" in html
    assert lang_of(client.get("/?lang=ar").text) == ("ar", "rtl")
    # Remembered in the session cookie, over the browser's language.
    assert lang_of(client.get("/", headers={"Accept-Language": "es"}).text) == ("ar", "rtl")
    other = app.test_client()
    assert lang_of(other.get("/", headers={"Accept-Language": "pt-BR,pt;q=0.9"}).text)[0] == \
        "pt-BR"
    assert lang_of(app.test_client().get("/", headers={"Accept-Language": "pt"}).text)[0] == \
        "pt-BR"
    assert lang_of(app.test_client().get("/", headers={"Accept-Language": "de-AT"}).text)[0] \
        == "de"
    assert lang_of(app.test_client().get("/", headers={"Accept-Language": "ja"}).text)[0] == "en"
    assert lang_of(app.test_client().get("/?lang=xx").text)[0] == "en"


def test_an_answer_to_a_request_sent_before_the_choice_does_not_undo_it(app, monkeypatch):
    """The page before the menu's link still fetches (its files, the service worker's
    precache) as the link is followed: an answer that sent back the cookie its request brought
    undid the choice (a browser test met it on a loaded machine). The cookie goes out only
    when it changes: a new player, a language chosen, at most once a day (its 400 days)."""
    client = app.test_client()
    first = client.get("/", headers={"Accept-Language": "es"})
    assert "Set-Cookie" in first.headers
    before = client.get_cookie("session").value
    assert "Set-Cookie" in client.get("/?lang=de").headers
    late = app.test_client()  # requests that left with the cookie from before the choice
    late.set_cookie("session", before)
    script = re.search(r'src="(/static/[^"]+)"', first.text).group(1)
    for path in ("/", script, "/sw.js", "/manifest.webmanifest", "/healthz", "/bots"):
        answer = late.get(path, headers={"Accept-Language": "es"})
        assert answer.status_code == 200, path
        assert "Set-Cookie" not in answer.headers, path
    assert lang_of(client.get("/", headers={"Accept-Language": "es"}).text)[0] == "de"
    # The next day's first page sends it again, with the choice: the 400 days start again.
    day = time.time() + 86400
    monkeypatch.setattr(time, "time", lambda: day)
    assert "Set-Cookie" in client.get("/").headers
    assert "Set-Cookie" not in client.get("/").headers
    assert lang_of(client.get("/").text)[0] == "de"


def test_only_the_players_language_is_sent_with_the_page(app):
    html = app.test_client().get("/", headers={"Accept-Language": "ar"}).text
    config = json.loads(re.search(r'<script type="application/json" id="config">(.*?)</script>',
                                  html, re.S).group(1))
    words = config["words"]
    assert words["lang"] == "ar" and words["dir"] == "rtl"
    key = i18n.message_key
    assert words["messages"][key("Your turn")] == "دورك"
    assert words["messages"][key("{n} draw")][2] == "تعادلان"  # "two draws": the dual form
    assert words["plurals"] == {"zero": 0, "one": 1, "two": 2, "few": 3, "many": 4, "other": 5}
    # Only the page's words: no template's or other language's.
    assert key("Invite a friend") not in words["messages"] and "دورك" in html
    assert "Nueva partida" not in html
    english = json.loads(re.search(
        r'id="config">(.*?)</script>',
        app.test_client().get("/", headers={"Accept-Language": "en"}).text, re.S).group(1))
    assert english["words"]["messages"] == {}


def test_no_two_page_messages_share_a_key(extracted):
    """The page finds its words by a 5-digit hash of the English (message_key): each unique."""
    keys = {i18n.message_key(msgid if isinstance(msgid, str) else msgid[0])
            for _context, msgid in extracted}
    assert len(keys) == len({m if isinstance(m, str) else m[0] for _c, m in extracted})


def test_each_request_has_its_own_language_in_shared_macros(app):
    """_macros.html's square names are the request's language, not the first request's (an
    import without context is cached by Jinja: the templates import it `with context`)."""
    client = app.test_client()
    assert "arriba a la izquierda" in client.get("/r/40812",
                                                 headers={"Accept-Language": "es"}).text
    english = client.get("/r/40812", headers={"Accept-Language": "en"}).text
    assert "top left" in english and "arriba" not in english


def test_numbers_and_plurals_on_the_server_follow_the_language(app):
    client = app.test_client()
    assert "Partida sin terminar · 2 jugadas" in client.get(
        "/r/40", headers={"Accept-Language": "es"}).text
    assert "Partida sin terminar · 1 jugada" in client.get(
        "/r/4", headers={"Accept-Language": "es"}).text
    assert "مباراة لم تكتمل · نقلتان" in client.get("/r/40", headers={"Accept-Language": "ar"}).text


ENGLISH_WORDS = {"the", "your", "you", "and", "with", "game", "move", "moves", "play", "friend",
                 "draw", "win", "board", "square", "turn", "link", "this", "that", "not"}


def visible_words(html: str) -> list[str]:
    parser = Words()
    parser.feed(html)
    return parser.found


@pytest.mark.parametrize("path", ["/", "/r/40812", "/r/u/40.36.4", "/g/nosuchgameatall123",
                                  "/nothing", "/bots"])
def test_a_page_in_spanish_has_no_english_sentence(app, path):
    html = app.test_client().get(path, headers={"Accept-Language": "es"}).text
    spanish = {english(m): forms(m)[0] for m in catalog("es") if m.id}
    problems = []
    for text in visible_words(html):
        if text in {"English"}:  # the language menu names each language in itself
            continue
        words = set(re.findall(r"[a-z]+", text.lower()))
        if words & ENGLISH_WORDS:
            problems.append(text)
        for source, translated in spanish.items():
            if len(source.split()) >= 3 and source != translated and source in text:
                problems.append(text)
    assert problems == [], "\n".join(problems)
