"""Static files fingerprinted (issue 42): versioned addresses are immutable, pages are not."""

from __future__ import annotations

import re

import pytest

from ttt.web.http import assets

STATIC = re.compile(r'(?:src|href)="(/static/[^"]+)"')


@pytest.mark.parametrize("path", ["/", "/bots", "/bots/guide"])
def test_pages_link_versioned_static_files_and_stay_no_cache(client, path):
    page = client.get(path)
    assert page.status_code == 200
    assert page.headers["Cache-Control"] in ("no-cache", "public, max-age=300")
    linked = STATIC.findall(page.get_data(as_text=True))
    assert linked, "the page links no static file"
    for url in linked:
        assert "?v=" in url, url
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert answer.headers["Cache-Control"] == "public, max-age=31536000, immutable", url


def test_game_page_html_is_no_cache(client):
    assert client.get("/").headers["Cache-Control"] == "no-cache"


def test_unversioned_or_stale_address_is_revalidated(client):
    plain = client.get("/static/js/main.js")
    assert plain.status_code == 200 and plain.headers["Cache-Control"] == "no-cache"
    stale = client.get("/static/js/main.js?v=000000000000")
    assert stale.status_code == 200 and stale.headers["Cache-Control"] == "no-cache"
    again = client.get("/static/js/main.js", headers={"If-None-Match": plain.headers["ETag"]})
    assert again.status_code == 304


def test_the_game_page_loads_its_modules_as_one_bundle(client):
    html = client.get("/").get_data(as_text=True)
    scripts = re.findall(r'<script type="module" src="([^"]+)"', html)
    assert len(scripts) == 1 and scripts[0].startswith("/static/bundle/main.js?v="), scripts
    assert "modulepreload" not in html  # nothing else to fetch before the board works
    source = client.get(scripts[0]).get_data(as_text=True)
    # Every module main.js imports, and what they import, inside; the later file by version.
    for name in ("js/socket.js", "vendor/socket.io.esm.min.js", "js/session.js", "js/words.js"):
        assert f'"{name}": function' in source, name
    later = re.search(r'import\("\./(main\.later\.js\?v=[0-9a-f]{12})"\)', source).group(1)
    answer = client.get(f"/static/bundle/{later}")
    assert answer.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    for name in ("js/ultimate.js", "js/games.js", "js/leave.js"):
        assert f'"{name}": function' in answer.get_data(as_text=True), name
        assert f'"{name}": function' not in source, name


def test_a_change_in_an_imported_file_changes_the_importers_version(tmp_path):
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "a.js").write_text('import { b } from "./b.js";\n')
    (tmp_path / "js" / "b.js").write_text("export const b = 1;\n")
    (tmp_path / "js" / "c.js").write_text("export const c = 1;\n")
    before = assets.build(tmp_path)
    (tmp_path / "js" / "b.js").write_text("export const b = 2;\n")
    after = assets.build(tmp_path)
    assert before["js/a.js"].version != after["js/a.js"].version
    assert before["js/c.js"].version == after["js/c.js"].version
    assert f'"./b.js?v={after["js/b.js"].version}"'.encode() in after["js/a.js"].body


def test_service_worker_precaches_versioned_files_and_offline_pages(client):
    source = client.get("/sw.js").get_data(as_text=True)
    precache = re.search(r"const PRECACHE = (\[.*?\]);", source).group(1)
    assert '"/"' in precache
    optional = re.search(r"const OPTIONAL = (\[.*?\]);", source).group(1)
    assert '"/bots"' in optional and '"/bots/guide"' in optional
    statics = re.findall(r'"(/static/[^"]+)"', precache)
    assert statics and all("?v=" in url for url in statics)


@pytest.mark.parametrize("lang,name,direction", [("fr", "Morpion · ttt", "ltr"),
                                                 ("ar", "إكس-أو · ttt", "rtl")])
def test_the_manifest_speaks_the_pages_language(client, lang, name, direction):
    page = client.get(f"/?lang={lang}").get_data(as_text=True)
    href = re.search(r'<link rel="manifest" href="([^"]+)"', page).group(1)
    assert href == f"/manifest.webmanifest?hl={lang}"
    manifest = client.get(href).get_json(force=True)
    assert manifest["name"] == name and manifest["dir"] == direction
    assert manifest["lang"] == lang and manifest["description"] != ""


def test_the_manifest_background_is_the_light_page_colour(client):
    manifest = client.get("/manifest.webmanifest").get_json(force=True)
    # A dark splash flashes on a light phone: the page's light background instead.
    assert manifest["background_color"].lower() == "#f4f1ec"
    assert manifest["name"] == "Tic-tac-toe · ttt"


@pytest.mark.parametrize("path", ["/", "/bots", "/bots/guide", "/r/40812", "/?lang=ar"])
def test_nothing_in_the_head_blocks_the_first_paint(client, path):
    page = client.get(path)
    head = page.get_data(as_text=True).split("</head>", 1)[0]
    assert 'rel="stylesheet"' not in head
    assert all(re.search(r'type="(module|application/json)"', tag)
               for tag in re.findall(r"<script\b[^>]*>", head))
    # The inline stylesheets are the ones the CSP allows, by hash.
    policy = page.headers["Content-Security-Policy"]
    for style in re.findall(r"<style>(.*?)</style>", head, re.S):
        assert assets.style_hash(style) in policy
    assert "'unsafe-inline'" not in policy


def test_scripts_are_served_without_their_whole_line_comments_and_nothing_else(client):
    """The gzipped scripts lose their comment lines (a third of their weight) and keep every
    other line; safe only while no template literal spans lines, which this checks too."""
    import gzip
    import re
    from pathlib import Path

    from ttt.web.http.gzipping import _SCRIPT_COMMENTS

    sample = b"a();\n  // gone\n/** gone\n * too */\nb(); /* kept */\n/* x */ c();\nd();\n"
    assert _SCRIPT_COMMENTS.sub(b"", sample) == b"a();\nb(); /* kept */\n/* x */ c();\nd();\n"
    for path in sorted((Path(__file__).resolve().parents[3] / "static" / "js").glob("*.js")):
        source = path.read_text()
        assert all(line.count("`") % 2 == 0 for line in source.splitlines()), path.name
        served = client.get(f"/static/js/{path.name}", headers={"Accept-Encoding": "gzip"})
        body = gzip.decompress(served.data).decode() if served.headers.get(
            "Content-Encoding") == "gzip" else served.get_data(as_text=True)
        assert not re.search(r"^[ \t]*//", body, re.M), path.name
        kept = [line for line in source.splitlines() if not re.match(r"\s*(//|/\*|\*)", line)]
        unversioned = re.sub(r"\.js\?v=\w+", ".js", body)  # imports carry their versions
        assert [line for line in unversioned.splitlines()
                if not re.match(r"\s*(//|/\*|\*)", line)] == kept, path.name


def test_the_status_and_its_detail_are_in_the_first_paint(client):
    """Painted with the HTML, so that the script's later words are no new LCP (issue 42)."""
    home = client.get("/?lang=fr").get_data(as_text=True)
    assert re.search(r'<p class="status" id="status">Connexion…</p>', home)
    assert re.search(r'<p class="detail" id="detail">Ta partie se prépare</p>', home)
    client.get("/?lang=en")
    with client.session_transaction() as session:
        player = session["pid"]
    from ttt.game.match import create
    from ttt.web.extensions import get_store
    with client.application.app_context():
        match = create("friend", player, 0.0, you="X")
        get_store().create(match)
    link = client.get(f"/g/{match.id}").get_data(as_text=True)
    assert '<p class="detail" id="detail">Opening this link\'s game</p>' in link
