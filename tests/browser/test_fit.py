"""The toggles and the claim button fit a 320 px phone in every language (issue 46): the
Evaluations switch keeps its track and its word inside the button, and "Claim the win in 0:56"
takes at most two lines, nothing cut, in en, es, pt-BR, fr, de and ar."""

from __future__ import annotations

import pytest

from tests.browser.test_languages import phones  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.server]

PHONE_320 = {"viewport": {"width": 320, "height": 568}, "device_scale_factor": 2,
             "is_mobile": True, "has_touch": True}

# The switch's parts inside its box; the claim button shown in its slot with the longest text
# it takes (a countdown in minutes), its lines counted from its height.
FIT = """async () => {
  const { t, clockWords } = await import("/static/js/squares.js");
  const inside = (element) => {
    const box = element.getBoundingClientRect();
    return [...element.children].filter((child) => child.getClientRects().length)
      .every((child) => {
        const part = child.getBoundingClientRect();
        return part.left >= box.left - 0.5 && part.right <= box.right + 0.5;
      }) && element.scrollWidth <= element.clientWidth + 1;
  };
  const toggle = document.getElementById("evaluations-switch");
  toggle.hidden = false;
  const slot = document.querySelector("#actions .slot");
  for (const button of slot.querySelectorAll(".btn")) button.hidden = true;
  const claim = document.getElementById("claim");
  claim.hidden = false;
  claim.disabled = true;
  claim.textContent = t("Claim the win in {time}", { time: clockWords(56) });
  const style = getComputedStyle(claim);
  const lines = Math.round((claim.getBoundingClientRect().height
    - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom))
    / parseFloat(style.lineHeight));
  const range = document.createRange();
  range.selectNodeContents(claim);
  const text = [...range.getClientRects()];
  return { toggle: inside(toggle), toggleText: toggle.textContent.trim(),
           claim: claim.textContent, lines: new Set(text.map((r) => Math.round(r.top))).size,
           claimFits: claim.scrollWidth <= claim.clientWidth + 1, height: lines };
}"""


@pytest.mark.parametrize("language", ["en", "es", "pt-BR", "fr", "de", "ar"])
def test_the_toggles_and_the_claim_button_fit_at_320_px(phones, language):  # noqa: F811
    page = phones(language, device=PHONE_320)
    page.wait_for_function(f"document.documentElement.lang === '{language}'")
    page.wait_for_function("document.getElementById('status').textContent.trim() !== ''")
    found = page.evaluate(FIT)
    assert found["toggle"], f"{found['toggleText']!r} runs out of its button"
    assert found["claimFits"], found
    assert found["lines"] <= 2, f"{found['claim']!r} takes {found['lines']} lines"
