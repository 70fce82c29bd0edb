"""Names read right in Arabic (issue 46): a name such as "Bob (2)!" inside a right-to-left
status line keeps its own order (U+2068/U+2069 around it), read from the glyphs' places."""

from __future__ import annotations

import pytest

from tests.browser.test_languages import phones  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.server]

# The status line of a friend game as the page builds it (words.js), set in a right-to-left
# line; the x of each character of the name, as laid out.
PLACES = """async (name) => {
  const words = await import("/static/js/words.js");
  const game = { mode: "friend", status: "playing", variant: "classic", turn: "O", you: "X",
                 seats: { X: "p1", O: "p2" }, online: { X: true, O: true }, moves: [4],
                 board: "....X....", names: { X: null, O: name } };
  const line = document.createElement("p");
  line.dir = "rtl";
  line.style.cssText = "font-size: 24px; white-space: nowrap; position: absolute; top: 0";
  line.textContent = words.describe(game, "X");
  document.body.append(line);
  const text = line.firstChild;
  const start = text.data.indexOf(name);
  const places = [...name].map((_char, i) => {
    const range = document.createRange();
    range.setStart(text, start + i);
    range.setEnd(text, start + i + 1);
    return range.getBoundingClientRect().x;
  });
  line.remove();
  return { text: text.data, places };
}"""


def test_an_arabic_status_line_keeps_a_names_order(phones):  # noqa: F811
    page = phones("ar")
    page.wait_for_function("document.documentElement.lang === 'ar'")
    found = page.evaluate(PLACES, "Bob (2)!")
    assert "Bob (2)!" in found["text"], found["text"]
    assert found["text"].startswith("دور"), found["text"]  # "{Friend}'s turn": دور {friend}
    places = found["places"]
    # Left to right as written: B o b space ( 2 ) ! — the "!" after the ")", not before the "B".
    assert places == sorted(places), places
    assert places[-1] > places[0]
