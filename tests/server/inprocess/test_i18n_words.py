"""Every word right in every language (issue 46): every string a person reads is in the
catalogs (wherever the code says it), the forms take what browsers send and answer in the
visitor's language, refused pages in the site's shell, the language the visitor meant."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from flask import abort

from tests.server.inprocess.test_i18n import LANGS, catalog, english
from ttt.bots import ABOUT_LENGTH, BotError, check_about
from ttt.web import create_app
from ttt.web.i18n import negotiate, ranges

ROOT = Path(__file__).resolve().parents[3]
SITE = {"Origin": "http://localhost"}

# ---- Every string extracted: the code's own calls, not the extractor's word for them. ----

JS_STRING = r'"((?:[^"\\\n]|\\.)*)"'
# t("…") and tn("…", "…", n) anywhere, inside a template literal's ${…} too (pybabel's
# JavaScript extractor skips those: PITFALLS "Fourth-round lessons").
JS_CALL = re.compile(r'(?<![\w.$])(tn?)\(\s*' + JS_STRING)
TEMPLATE_CALL = re.compile(r"(?<![\w.])(?:_|gettext|ngettext)\(\s*"
                           r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')""")
PY_MARKERS = {"_", "gettext", "ngettext", "N_", "lazy_gettext"}


def _js_code(path: Path) -> str:
    code = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
    return "\n".join(re.sub(r"(^|\s)//.*$", "", line) for line in code.splitlines())


def said_in_code() -> dict[str, str]:
    """Every msgid the code passes to a translation call, where: the page's t()/tn(), the
    templates' _(), the server's _() and N_ (refusals, form errors, error pages)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "static" / "js").glob("*.js")):
        for match in JS_CALL.finditer(_js_code(path)):
            found.setdefault(json.loads(f'"{match.group(2)}"'), path.name)
    for path in sorted((ROOT / "templates").glob("*.html")):
        text = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)
        for match in TEMPLATE_CALL.finditer(text):
            msgid = match.group(1) if match.group(1) is not None else match.group(2)
            found.setdefault(msgid.replace("\\'", "'").replace('\\"', '"'), path.name)
    for path in sorted((ROOT / "ttt").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in PY_MARKERS
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value, str(path.relative_to(ROOT)))
    return found


def test_the_code_finds_the_strings_the_extractor_used_to_miss():
    said = said_in_code()
    for msgid in ("{seconds} s a move", "play here", "to be played in"):
        assert msgid in said


@pytest.mark.parametrize("code", LANGS)
def test_every_string_the_code_says_is_in_the_catalog_and_translated(code):
    held = {english(m): m for m in catalog(code) if m.id}
    missing = [f"{where}: {msgid!r}" for msgid, where in said_in_code().items()
               if msgid not in held]
    assert missing == [], "run `make translations`, then translate:\n" + "\n".join(missing)


def _bot_errors(tree: ast.AST):
    """(function name, BotError call) for each BotError(...) in a module."""
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "BotError":
                    yield function.name, node


# The bot API's answers to programs (a bad JSON body, a ladder request, the command line): read
# by whoever wrote the program, never shown on a page.
FOR_PROGRAMS = {"ttt/web/bots/api.py", "ttt/web/bots/ladder.py", "ttt/bots/cli.py",
                "ttt/web/bots/kit.py:payload"}


def test_every_refusal_a_person_can_read_is_marked_and_has_no_baked_in_values():
    """A BotError a page shows (the /bots/new form, Play this bot) says its message as N_
    with {placeholders} and their values apart, never an f-string: the page translates the
    sentence, then fills it in."""
    problems = []
    for path in sorted((ROOT / "ttt").rglob("*.py")):
        where = str(path.relative_to(ROOT))
        for function, call in _bot_errors(ast.parse(path.read_text(encoding="utf-8"))):
            if where in FOR_PROGRAMS or f"{where}:{function}" in FOR_PROGRAMS:
                continue
            if len(call.args) < 2:
                continue
            message = call.args[1]
            if isinstance(message, ast.Name):  # a module constant, marked where it is made
                continue
            if not (isinstance(message, ast.Call) and getattr(message.func, "id", "") == "N_"):
                problems.append(f"{where}:{call.lineno}")
    assert problems == [], "\n".join(problems)


# ---- Forms that take what browsers send, in the visitor's language. ----

def new_app(**config):
    return create_app({"TESTING": True, "SECRET_KEY": "test-secret", "TTT_STORE": "memory://",
                       "TTT_RATE_LIMIT": 0, **config})


def test_a_crlf_newline_is_one_newline_and_one_character():
    assert check_about("first line\r\nsecond line") == "first line\nsecond line"
    assert check_about("a\rb") == "a\nb"
    assert len(check_about("x\r\n" * (ABOUT_LENGTH // 2))) <= ABOUT_LENGTH  # 140 newlines
    with pytest.raises(BotError):
        check_about("a\x07b")


def test_a_two_line_description_from_the_form_is_taken():
    app = new_app()
    client = app.test_client()
    client.get("/bots/new")
    made = client.post("/bots/new", data={"name": "twoliner",
                                          "about": "Plays the centre.\r\nNever resigns."},
                       headers=SITE)
    assert made.status_code == 200, made.text
    bot = app.extensions["ttt_bots_book"].by_name("twoliner")
    assert bot.about == "Plays the centre.\nNever resigns."
    app.extensions["ttt_store"].close()


@pytest.mark.parametrize(("lang", "words"), [
    ("es", "ya tienes 2 bots: revoca uno primero"),
    ("fr", "tu as déjà 2 bots : révoque-en un d’abord"),
    ("de", "du hast schon 2 Bots: lege zuerst einen still"),
    ("pt_BR", "você já tem 2 bots: revogue um primeiro"),
    ("ar", "بلغتَ الحد الأقصى من البوتات (2): ألغِ واحدًا أولًا"),
])
def test_a_form_error_with_a_number_is_in_the_visitors_language(lang, words):
    app = new_app(TTT_BOT_MAX_PER_PERSON=2)
    client = app.test_client()
    client.get(f"/bots/new?lang={lang}")
    for name in ("one", "two"):
        assert client.post("/bots/new", data={"name": name}, headers=SITE).status_code == 200
    refused = client.post("/bots/new", data={"name": "three"}, headers=SITE)
    assert refused.status_code == 409
    assert words in refused.text.replace("\u202f", " ")
    assert "revoke one first" not in refused.text
    app.extensions["ttt_store"].close()


def test_an_about_too_long_is_said_in_french():
    app = new_app()
    client = app.test_client()
    client.get("/bots/new?lang=fr")
    refused = client.post("/bots/new", data={"name": "longbot", "about": "x" * 300},
                          headers=SITE)
    assert refused.status_code == 400
    assert "280" in refused.text and "printable characters" not in refused.text


@pytest.mark.parametrize(("path", "spanish", "english"), [
    ("/r/44", "la jugada 2", "is taken"),
    ("/r/012345678", "la jugada 8", "game is over"),
    ("/r/u/40.40", "la jugada 2", "is taken"),
    ("/r/u/40.1", "la jugada 2", "small board"),
])
def test_a_bad_replay_links_reason_is_in_the_visitors_language(client, path, spanish, english):
    page = client.get(path, headers={"Accept-Language": "es"})
    assert page.status_code == 404
    assert spanish in page.text and english not in page.text


# ---- Refused pages in the site's shell and the visitor's language. ----

@pytest.fixture(scope="module")
def erring_app():
    app = new_app()
    app.config["PROPAGATE_EXCEPTIONS"] = False
    for code in (403, 413, 429, 500):
        app.add_url_rule(f"/refuse/{code}", f"refuse{code}",
                         (lambda code=code: abort(code)))
    yield app
    app.extensions["ttt_store"].close()


@pytest.mark.parametrize("lang", ["es", "ar", "de"])
@pytest.mark.parametrize(("code", "path", "method"), [
    (403, "/refuse/403", "get"), (404, "/nothing/here", "get"), (405, "/bots/new", "put"),
    (413, "/refuse/413", "get"), (429, "/refuse/429", "get"), (500, "/refuse/500", "get"),
])
def test_every_error_page_is_the_sites_own_in_the_visitors_language(
        erring_app, lang, code, path, method):
    answer = getattr(erring_app.test_client(), method)(path, headers={"Accept-Language": lang})
    assert answer.status_code == code
    html = answer.text
    assert f'<html lang="{lang}"' in html and 'class="brand notfound-brand"' in html
    assert "Werkzeug" not in html and "<!doctype html>\n<html lang=en>" not in html
    h1 = re.search(r"<h1>(.*?)</h1>", html).group(1)
    held = {english(m): m.string for m in catalog(lang) if m.id}
    assert h1 in held.values(), h1
    assert answer.headers["Content-Language"] == lang
    if code == 405:
        assert "POST" in answer.headers["Allow"]


# ---- The language the visitor meant. ----

@pytest.mark.parametrize(("header", "lang"), [
    ("en-US,es;q=0.9", "en"),
    ("de-AT,es;q=0.5", "de"),
    ("es-MX,en;q=0.9", "es"),
    ("fr-CA,en;q=0.8", "fr"),
    ("es;q=0", "en"),
    ("es;q=0,fr;q=0.5", "fr"),
    ("en;q=0.2,ar", "ar"),
    ("pt-PT", "pt-BR"),
    ("es-ES,es;q=0.9,en;q=0.8", "es"),
    ("ja,zh;q=0.9", "en"),
])
def test_the_page_is_in_the_language_the_visitor_meant(app, header, lang):
    answer = app.test_client().get("/", headers={"Accept-Language": header})
    assert re.search(r'<html lang="([^"]+)"', answer.text).group(1) == lang
    assert answer.headers["Content-Language"] == lang


def test_a_language_with_q_zero_is_never_chosen():
    assert negotiate("es;q=0") == "en"
    assert negotiate("es-MX;q=0.8,es;q=0,fr;q=0.1") == "fr"
    assert negotiate("*;q=0.5,de;q=0") == "en"


def test_a_huge_accept_language_is_read_in_bounded_time():
    header = ",".join(f"x{i}-yy;q=0.{i % 9}" for i in range(800)) + ",de"  # ~7.5 kB
    assert len(header) > 7000
    assert len(ranges(header)) <= 24
    assert negotiate(header) == "en"  # the 801st range is not read
    assert negotiate("de;q=1.5,es") == "es"  # a q over 1 is no q


@pytest.mark.parametrize("path", ["/", "/bots", "/bots/new", "/r/40812", "/bots/guide",
                                  "/nothing"])
def test_every_page_says_its_language_and_varies_on_the_visitors_choice(app, path):
    answer = app.test_client().get(path, headers={"Accept-Language": "de",
                                                  "Accept-Encoding": "gzip"})
    assert answer.headers["Content-Language"] == "de"
    vary = {part.strip() for part in answer.headers["Vary"].split(",")}
    assert {"Accept-Language", "Cookie"} <= vary, answer.headers["Vary"]


# ---- French typography: a narrow no-break space before : ; ? ! and inside « ». ----

NNBSP = "\u202f"
NOT_PROSE = re.compile(r"<(code|kbd|pre)>.*?</\1>|<[^>]+>|&\w+;|https?://\S+|\{\w+\}|%\(\w+\)s"
                       r"|\d:\d\d|\w+://", re.S)


def french_typography_problems(text: str) -> list[str]:
    prose = NOT_PROSE.sub("\x00", text)
    problems = []
    for match in re.finditer(r"[:;?!]", prose):
        before = prose[match.start() - 1] if match.start() else ""
        if before not in (NNBSP, "\x00", "?", "!") and not (before == "" and match.start() == 0):
            problems.append(f"{prose[max(0, match.start() - 12):match.end() + 4]!r}")
    for match in re.finditer(r"«(.)|(.)»", prose):
        if NNBSP not in (match.group(1), match.group(2)):
            problems.append(f"guillemets: {match.group(0)!r}")
    return problems


def test_french_puts_a_narrow_no_break_space_before_high_punctuation():
    assert french_typography_problems("Langue : Français") != []
    assert french_typography_problems("Langue\u202f: %(language)s") == []
    problems = []
    for message in catalog("fr"):
        if not message.id:
            continue
        for text in (message.string if isinstance(message.string, tuple) else [message.string]):
            problems += [f"{english(message)!r}: {p}" for p in french_typography_problems(text)]
    assert problems == [], "\n".join(problems)


# ---- pofilter (translate-toolkit): a placeholder or markup mistake fails the run. ----

POFILTER_TESTS = ("printf", "pythonbraceformat", "xmltags", "escapes", "newlines", "tabs")
COUNTS = {"{n}", "%(num)s", "%(count)s"}
PLACEHOLDER = re.compile(r"\{\w+\}|%\(\w+\)s")
TAG = re.compile(r"</?\w+[^>]*>")


def pofilter(po: Path, out: Path, code: str) -> list:
    """pofilter's hits on a catalog: the messages it flags, each with its notes."""
    from tests.support.servers import in_ci

    if in_ci():  # make test installs the dev extras: in CI a missing pofilter is a failure
        import translate.filters.pofilter  # noqa: F401
    pytest.importorskip("translate.filters.pofilter",
                        reason="translate-toolkit is a dev extra: pip install -e '.[dev]'")
    import subprocess
    import sys

    from babel.messages.pofile import read_po

    tests = [arg for test in POFILTER_TESTS for arg in ("-t", test)]
    subprocess.run([sys.executable, "-m", "translate.filters.pofilter", "--progress=none",
                    f"--language={code}", *tests, str(po), str(out)], check=True)
    if not out.exists():  # nothing flagged: pofilter writes no file
        return []
    with out.open("rb") as file:
        return [m for m in read_po(file) if m.id]


def explained(message) -> bool:
    """pofilter's false positives here, each for a reason the other checks cover:
    - a plural form that spells its number out (Arabic "ثانيتان", two seconds): the counts
      {n}/%(num)s/%(count)s may be absent from a form, every other placeholder is there;
    - markup the same but for dir="ltr" on a code (Arabic keeps a path left to right)."""
    notes = " ".join(c for c in message.user_comments if "(pofilter)" in c)
    source = english(message)
    texts = list(message.string) if isinstance(message.id, tuple) else [message.string]
    wanted = set(PLACEHOLDER.findall(source))
    for text in texts:
        found = set(PLACEHOLDER.findall(text))
        if isinstance(message.id, tuple):
            wanted, found = wanted - COUNTS, found - COUNTS
        if found != wanted:
            return False
        if "xmltags" in notes and [re.sub(r' dir="ltr"', "", tag) for tag in TAG.findall(text)] \
                != TAG.findall(source):
            return False
    return "escapes" not in notes and "newlines" not in notes and "tabs" not in notes


@pytest.mark.parametrize("code", LANGS)
def test_pofilter_finds_no_unexplained_mistake(code, tmp_path):
    po = ROOT / "ttt" / "translations" / code / "LC_MESSAGES" / "messages.po"
    hits = [m for m in pofilter(po, tmp_path / "hits.po", code) if not explained(m)]
    assert hits == [], "\n".join(f"{english(m)!r}: {m.user_comments}" for m in hits)


def test_pofilter_catches_a_broken_placeholder_and_tag(tmp_path):
    po = tmp_path / "broken.po"
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                  '#, python-format\nmsgid "Revoke %(name)s"\nmsgstr "Revocar %(nombre)s"\n\n'
                  '#, python-brace-format\nmsgid "{name} joined"\nmsgstr "{nombre} entró"\n\n'
                  'msgid "Write <code>move(game)</code>"\nmsgstr "Escribe move(game)"\n',
                  encoding="utf-8")
    hits = pofilter(po, tmp_path / "hits.po", "es")
    assert len([m for m in hits if not explained(m)]) == 3


# ---- Names isolated on the server's pages. ----

def test_a_bots_name_is_isolated_in_an_arabic_page_and_marked_up_as_bdi(app):

    client = app.test_client()
    client.get("/bots/new")
    assert client.post("/bots/new", data={"name": "bob-2"}, headers=SITE).status_code == 200
    arabic = client.get("/bot/bob-2?lang=ar").text
    assert "<title>\u2068bob-2\u2069" in arabic and '<bdi class="bot-name">bob-2</bdi>' in arabic
    english = client.get("/bot/bob-2?lang=en").text
    assert "<title>bob-2 (bot)" in english  # a left-to-right name in a left-to-right page


@pytest.mark.parametrize("code", LANGS)
def test_msgfmt_check_passes(code):
    """GNU msgfmt's own check (format strings against their flags, the plural header)."""
    import subprocess

    from tests.support.servers import need_binary

    msgfmt = need_binary("msgfmt")  # Debian's gettext: `make system` installs it
    po = ROOT / "ttt" / "translations" / code / "LC_MESSAGES" / "messages.po"
    done = subprocess.run([msgfmt, "--check", "-o", "/dev/null", str(po)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_scripts_notes_for_translators_stay_out_of_the_first_load(client):
    import gzip

    on_disk = (ROOT / "static" / "js" / "words.js").read_text(encoding="utf-8")
    assert "// Translators:" in on_disk
    with client.get("/static/js/words.js", headers={"Accept-Encoding": "gzip"}) as served:
        assert served.headers["Content-Encoding"] == "gzip"
        script = gzip.decompress(served.data).decode("utf-8")
    assert "Translators:" not in script and "export function describe" in script
