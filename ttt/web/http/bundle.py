"""A page's scripts as one file, and one more for the parts it loads later, made at start-up.

Unbundled, a first visit over HTTP/1.1 fetches ~22 modules in four waves over six connections
(board-ready 4 s at a 400 ms round trip). A bundle holds an entry's static imports, each module a
function in a registry run once, at its first `require`, in the order the imports name them
(as the browser runs them); the entry's own code runs last, at the bundle's top level (so it may
await). The modules its `import()`s reach, with what they import that the first file lacks, form
the second file, fetched the first time one of them is asked for.

The modules are our own, in the small subset this reads (anything else is refused at start-up):
`import { a, b as c } from "./x.js"`, `export function|const|class` (no `export let`: an import
is bound once, when its line runs, so what it names must not change), `export { a as b }` (the
vendored client), `import("./x.js")` with a literal path, and no cycle among static imports.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

# A script's whole-line comments (`// …`, `/** … */` opening a line): no browser reads them.
# Safe because no script has a template literal over several lines (tests/test_assets.py).
SCRIPT_COMMENTS = re.compile(r"^[ \t]*(?://[^\n]*|/\*(?:[^*]|\*(?!/))*\*/[ \t]*)\n", re.M)
IMPORT_LIST = re.compile(r"""^import\s*\{([^}]*)\}\s*from\s*(["'])(\.{1,2}/[^"']+)\2;?[ \t]*$""",
                         re.M)
DYNAMIC = re.compile(r"""\bimport\s*\(\s*(["'])(\.{1,2}/[^"']+)\1\s*\)""")
EXPORT_DECLARED = re.compile(
    r"^export\s+((?:async\s+)?function\b\s*\*?\s*|const\s+|class\s+)([A-Za-z_$][\w$]*)",
    re.M)
EXPORT_LIST = re.compile(r"(?:^|(?<=[;}]))export\s*\{([^}]*)\}(?!\s*from\b)[ \t]*;?", re.M)
LEFT_OVER = re.compile(r"^[ \t]*(?:import|export)\b|\bimport\s*\(", re.M)
NAMES = ("__define", "__require", "__load", "__modules", "__done", "__later")


class BundleError(ValueError):
    """A script the bundler does not read (a form of import or export outside its subset)."""


@dataclass(frozen=True)
class Module:
    """One script as the bundle holds it: its body and what it imports."""

    body: str
    imports: tuple[str, ...]  # static, in order
    loads: tuple[str, ...]  # by import()


def _resolve(name: str, specifier: str) -> str:
    return posixpath.normpath(posixpath.join(posixpath.dirname(name), specifier))


def _bindings(names: str) -> str:
    parts = [part.strip() for part in names.split(",") if part.strip()]
    return ", ".join(re.sub(r"\s+as\s+", ": ", part) for part in parts)


def read(name: str, source: str) -> Module:
    """`source` as a registry function's body: imports as `__require`/`__load` calls, exports
    as getters handed to `__define` (live, as an ES module's are)."""
    source = SCRIPT_COMMENTS.sub("", source)
    for reserved in NAMES:
        if reserved in source:
            raise BundleError(f"{name} uses {reserved}, a name of the bundle's own")
    imports: list[str] = []
    loads: list[str] = []
    exported: dict[str, str] = {}

    def imported(match: re.Match) -> str:
        imports.append(_resolve(name, match.group(3)))
        return f"const {{ {_bindings(match.group(1))} }} = __require({json.dumps(imports[-1])});"

    def loaded(match: re.Match) -> str:
        loads.append(_resolve(name, match.group(2)))
        return f"__load({json.dumps(loads[-1])})"

    def declared(match: re.Match) -> str:
        exported[match.group(2)] = match.group(2)
        return match.group(1) + match.group(2)

    def listed(match: re.Match) -> str:
        for part in filter(None, (part.strip() for part in match.group(1).split(","))):
            local, _, public = part.partition(" as ")
            exported[(public or local).strip()] = local.strip()
        return ""

    body = IMPORT_LIST.sub(imported, source)
    body = DYNAMIC.sub(loaded, body)
    body = EXPORT_LIST.sub(listed, EXPORT_DECLARED.sub(declared, body))
    left = LEFT_OVER.search(body)
    if left:
        line = body[:left.start()].count("\n") + 1
        raise BundleError(f"{name}: an import or export the bundler does not read (line {line})")
    if exported:
        getters = ", ".join(f"{json.dumps(public)}: () => {local}"
                            for public, local in exported.items())
        body = f"__define({{ {getters} }});\n{body}"
    return Module(body, tuple(imports), tuple(loads))


class _Modules(dict):
    """Scripts read as they are reached (one outside every bundle is never read)."""

    def __init__(self, sources: dict[str, str]) -> None:
        super().__init__()
        self.sources = sources

    def __contains__(self, name: object) -> bool:
        return name in self.sources

    def __missing__(self, name: str) -> Module:
        self[name] = read(name, self.sources[name])
        return self[name]


def _closure(roots: list[str], modules: dict[str, Module]) -> list[str]:
    """The static imports of `roots`, each after what it imports (the order they run in)."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            raise BundleError(f"an import cycle: {' -> '.join((*path, name))}")
        if name not in modules:
            raise BundleError(f"{path[-1] if path else name} imports {name}, which is not there")
        state[name] = "open"
        for dep in modules[name].imports:
            visit(dep, (*path, name))
        state[name] = "done"
        order.append(name)

    for root in roots:
        visit(root, ())
    return order


def _registry(names: list[str], modules: dict[str, Module]) -> str:
    return "".join(f"{json.dumps(name)}: function (__define, __require, __load) {{\n"
                   f"{modules[name].body}\n}},\n" for name in names)


LOADER = """const __done = {};
function __require(name) {
  let found = __done[name];
  if (!found) {
    const exports = found = __done[name] = {};
    const define = (getters) => {
      for (const key in getters) {
        Object.defineProperty(exports, key, { get: getters[key], enumerable: true });
      }
    };
    const run = __modules[name]; // called plainly: `this` is undefined, as in a module
    run(define, __require, __load);
  }
  return found;
}
let __later = null;
function __load(name) {
  if (name in __modules) return Promise.resolve().then(() => __require(name));
  __later ??= %s.then((file) => { Object.assign(__modules, file.default); },
    (error) => { __later = null; throw error; });
  return __later.then(() => __require(name));
}
"""


def bundle(entry: str, sources: dict[str, str], address: Callable[[str], str] = lambda _: ""
           ) -> tuple[str, str | None]:
    """The entry's first file and its later file (None when it loads nothing later); the first
    fetches the later one at `address(later)` (relative to itself, with its version). `sources`
    holds every script by its path under static/."""
    modules = _Modules(sources)
    first = [name for name in _closure([entry], modules) if name != entry]
    seen = {*first, entry}
    later: list[str] = []
    pending = [load for name in (*first, entry) for load in modules[name].loads]
    while pending:
        for name in _closure(pending, modules):
            if name not in seen:
                seen.add(name)
                later.append(name)
        pending = [load for name in later for load in modules[name].loads if load not in seen]
    later_body = (f"export default {{\n{_registry(later, modules)}}};\n" if later else None)
    loader = LOADER % (f"import({json.dumps(address(later_body))})" if later_body
                       else 'Promise.reject(new Error("nothing loads later"))')
    first_body = (f"const __modules = {{\n{_registry(first, modules)}}};\n{loader}"
                  f"{modules[entry].body}\n")
    return first_body, later_body
