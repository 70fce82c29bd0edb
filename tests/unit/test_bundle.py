"""The page's modules bundled at start-up (issue 42): what the bundler reads, what it refuses,
and (in Node, when there is one) that a bundle runs like the modules it holds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.servers import in_ci
from ttt.web.http import assets, bundle

ROOT = Path(__file__).resolve().parents[2]

# A small graph: the entry imports a and b (a imports b), renames an import, awaits a module
# loaded later (which imports b too), and reads through a function what b changes.
GRAPH = {
    "js/main.js": """import { a } from "./a.js";
import { count, bump as add, later } from "./b.js";
const log = [];
log.push(a(), count());
add();
log.push(count(), later());
const { c } = await import("./c.js");
log.push(c(), later());
console.log(JSON.stringify(log));
""",
    "js/a.js": ('import { bump } from "./b.js";\n// a comment\n'
                'export function a() { bump(); return "a"; }\n'),
    "js/b.js": """let bumps = 0;
export const later = () => bumps;
export function count() { return bumps; }
export function bump() { bumps += 1; }
""",
    "js/c.js": 'import { bump } from "./b.js";\nexport function c() { bump(); return "c"; }\n',
}


def test_the_entrys_imports_go_first_and_its_loads_later():
    first, later = bundle.bundle("js/main.js", GRAPH, lambda body: "./main.later.js?v=1")
    assert first.index('"js/b.js": function') < first.index('"js/a.js": function')
    assert '"js/c.js": function' not in first and '"js/c.js": function' in later
    assert 'import("./main.later.js?v=1")' in first
    assert "// a comment" not in first
    assert not re.search(r"^\s*(import|export)\b", first, re.M)


def test_a_bundle_without_later_modules_has_no_later_file():
    first, later = bundle.bundle("js/a.js", GRAPH)
    assert later is None and '"js/b.js": function' in first


@pytest.mark.parametrize("source", [
    'import * as b from "./b.js";\n',
    'import b from "./b.js";\n',
    "export default 1;\n",
    "export let b = 1;\n",
    'export { bump } from "./b.js";\n',
    "const name = './b.js';\nimport(name);\n",
    "const __require = 1;\n",
])
def test_forms_outside_the_subset_are_refused_at_start_up(source):
    with pytest.raises(bundle.BundleError):
        bundle.bundle("js/main.js", {"js/main.js": source, "js/b.js": "export const b = 1;\n"})


def test_an_import_cycle_is_refused():
    cycle = {"js/main.js": 'import { a } from "./a.js";\n',
             "js/a.js": 'import { b } from "./b.js";\nexport const a = 1;\n',
             "js/b.js": 'import { a } from "./a.js";\nexport const b = 1;\n'}
    with pytest.raises(bundle.BundleError, match="cycle"):
        bundle.bundle("js/main.js", cycle)


def node() -> str:
    """Node's path: skipped without it, except in CI (`make system` installs it)."""
    found = shutil.which("node")
    if found is None:
        if in_ci():
            pytest.fail("node is required in CI to run a bundle (make system)")
        pytest.skip("node is not installed (make system); CI fails instead")
    return found


def test_a_bundle_runs_like_its_modules(tmp_path):
    node_path = node()
    (tmp_path / "package.json").write_text('{"type": "module"}')
    for name, source in GRAPH.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(source)
    expected = subprocess.run([node_path, str(tmp_path / "js" / "main.js")], capture_output=True,
                              text=True, timeout=60, check=True).stdout
    built = assets.bundles(GRAPH)
    out = tmp_path / "bundle"
    out.mkdir()
    for name, asset in built.items():
        # Node reads the version as part of the name: the file is written under that name.
        (out / Path(name).name.replace(".js", ".mjs")).write_bytes(
            asset.body.replace(b".later.js?v=", b".later.mjs?v="))
    ran = subprocess.run([node_path, str(out / "main.mjs")], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    # Each module run once, in the same order; a later module shares the first file's.
    assert ran == expected and ran.strip() == '["a",1,2,2,"c",3]'


def test_the_real_pages_bundle_parses():
    """Every bundle of static/ (built from the real modules) is a script Node can parse."""
    node_path = node()
    built = {name: asset for name, asset in assets.build(ROOT / "static").items()
             if name.startswith("bundle/")}
    assert {"bundle/main.js", "bundle/main.later.js", "bundle/replay.js"} <= built.keys()
    for name, asset in built.items():
        checked = subprocess.run([node_path, "--input-type=module", "--check"], input=asset.body,
                                 capture_output=True, timeout=60)
        assert checked.returncode == 0, (name, checked.stderr.decode())


def test_a_modules_this_is_undefined_as_in_a_module(tmp_path):
    node_path = node()
    graph = {"js/main.js": 'import { seen } from "./a.js";\nconsole.log(seen);\n',
             "js/a.js": "export const seen = String(this) + String((() => this)());\n"}
    (tmp_path / "main.mjs").write_bytes(assets.bundles(graph)["bundle/main.js"].body)
    ran = subprocess.run([node_path, str(tmp_path / "main.mjs")], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert ran.strip() == "undefinedundefined"
