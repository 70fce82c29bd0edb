"""Lighthouse (npm, against Debian's Chromium) on the pages a phone opens: `/`, a `/g/` link,
`/bots` and the guide, mobile. Prints each page's category scores and its render-blocking
resources; exit 1 when a page misses the targets (performance >= 98, the rest 100, nothing
render-blocking). `make lighthouse` installs Lighthouse into .lighthouse/ and runs this.

    python scripts/lighthouse.py --lighthouse .lighthouse/node_modules/.bin/lighthouse
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.servers import Remote, Server, close_all  # noqa: E402 (the repository's helpers)

CHROME_FLAGS = "--headless --no-sandbox --disable-gpu --no-first-run --disable-dev-shm-usage"
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")
TARGET = {"performance": 98, "accessibility": 100, "best-practices": 100, "seo": 100}


def blocking_in_head(html: str) -> list[str]:
    """What in a page's <head> blocks its first paint: stylesheets, and classic scripts that
    are neither async nor deferred (a module script is deferred)."""
    head = html.split("</head>", 1)[0]
    found = re.findall(r'<link[^>]*rel="stylesheet"[^>]*href="([^"]+)"', head)
    for tag in re.findall(r"<script\b[^>]*>", head):
        if not re.search(r'type="(module|application/json|importmap)"|\basync\b|\bdefer\b', tag):
            found.append(tag)
    return found


def audit(lighthouse: str, url: str, out: Path) -> dict:
    """One Lighthouse run (mobile, its default): the categories' scores and what blocks."""
    env = {**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", "/usr/bin/chromium")}
    subprocess.run([lighthouse, url, "--quiet", "--output=json", f"--output-path={out}",
                    f"--chrome-flags={CHROME_FLAGS}", "--form-factor=mobile",
                    f"--only-categories={','.join(CATEGORIES)}"],
                   env=env, check=False, timeout=300)
    report = json.loads(out.read_text(encoding="utf-8"))
    scores = {name: round((report["categories"][name]["score"] or 0) * 100)
              for name in CATEGORIES}
    blocking = report["audits"].get("render-blocking-resources", {})
    if blocking.get("scoreDisplayMode") == "error":
        # Lighthouse's trace engine fails on this audit with Debian's Chromium (PITFALLS): the
        # page's head is read instead, for what blocks a first paint.
        items = [{"url": url} for url in blocking_in_head(requests.get(url, timeout=10).text)]
    else:
        items = (blocking.get("details") or {}).get("items", [])
    lcp = report["audits"].get("largest-contentful-paint", {}).get("displayValue", "?")
    failed = sorted(key for key, value in report["audits"].items()
                    if value.get("score") is not None and value["score"] < 1
                    and value.get("scoreDisplayMode") in ("binary", "numeric", "metricSavings"))
    return {"url": url, **scores, "blocking": [item.get("url") for item in items], "lcp": lcp,
            "below_1": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lighthouse",
                        default=str(ROOT / ".lighthouse/node_modules/.bin/lighthouse"))
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ttt-lighthouse-"))
    server = Server({"TTT_STORE": "memory://", "TTT_SECRET_KEY": "lighthouse"},
                    log=work / "server.log").start()
    host = None
    try:
        host = Remote(server.url)
        game = host.call("new_game", {"mode": "friend", "you": "X"})["game"]["id"]
        pages = ["/", f"/g/{game}", "/bots", "/bots/guide"]
        for page in pages:  # a served site is warm: its templates compiled before a visitor
            requests.get(server.url + page, timeout=10).raise_for_status()
        results = [audit(args.lighthouse, server.url + page, work / f"{index}.json")
                   for index, page in enumerate(pages)]
    finally:
        if host:
            close_all([host])
        server.stop()
    missed = False
    print(f"{'page':<32} " + " ".join(f"{name[:5]:>5}" for name in CATEGORIES) + "  LCP  blocking")
    for result in results:
        path = result["url"].split("/", 3)[-1]
        print(f"/{path:<31} " + " ".join(f"{result[name]:>5}" for name in CATEGORIES)
              + f"  {result['lcp']}  {len(result['blocking'])}")
        if result["below_1"]:
            print(f"    audits under 1: {', '.join(result['below_1'])}")
        missed |= (any(result[name] < TARGET[name] for name in CATEGORIES)
                   or bool(result["blocking"]))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
