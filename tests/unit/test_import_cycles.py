"""No import cycles in ttt/ (issue 36): every import counts, inside functions too, but not one
under `if TYPE_CHECKING:` (it never runs).

Modules are read with `ast`, never imported. `from pkg import name` is an edge to `pkg.name`
when that is a module of ttt/, else to `pkg` (its __init__); relative imports are resolved.
A package's implicit import of its parents when a submodule loads is not an edge: only what a
module names itself. So a submodule that takes `get_store` from its package's __init__ while
that __init__ imports the submodule back is a cycle, as it is at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ttt"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(tree: ast.AST, typed: bool = False):
    """Every import node, skipping the bodies of `if TYPE_CHECKING:` (not their else) unless
    `typed`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if not typed and isinstance(node, ast.If) and type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def edges(name: str, path: Path, known: set[str], typed: bool = False) -> set[str]:
    """The modules of ttt/ that module imports (`typed`: those only type checking reads too)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in imports(ast.parse(path.read_text(), str(path)), typed):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        for target in targets:
            while target and target not in known:  # `import ttt.x.y` of a name inside
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph(typed: bool = False) -> dict[str, set[str]]:
    found = modules()
    return {name: edges(name, path, set(found), typed) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [path_through(graph, set(c)) for c in components]


def path_through(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle from the component's first module back to it, for the message."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in sorted(graph[node] & component):
            if other == start:
                return paths[node] + [start]
            if other not in paths:
                paths[other] = paths[node] + [other]
                queue.append(other)
    return sorted(component)


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles in ttt/:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_import_cycles_even_through_imports_for_type_checking_only():
    """Issue 43: a circle drawn only by type hints is still a circle a reader walks."""
    found = cycles(graph(typed=True))
    assert not found, "type-only import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_walker_sees_a_cycle_through_a_function_and_not_under_type_checking(tmp_path):
    """The checker itself: an import inside a function counts, one under TYPE_CHECKING not,
    and relative and `from pkg import module` forms resolve to modules."""
    known = {"ttt.a", "ttt.b", "ttt.pkg", "ttt.pkg.c"}
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from ttt import b\n")
    b = tmp_path / "b.py"
    b.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ttt.pkg import c\n"
                 "from .a import f\n")
    c = tmp_path / "c.py"
    c.write_text("from . import thing\n")
    assert edges("ttt.a", a, known) == {"ttt.b"}
    assert edges("ttt.b", b, known) == {"ttt.a"}
    assert edges("ttt.b", b, known, typed=True) == {"ttt.a", "ttt.pkg.c"}
    assert edges("ttt.pkg.c", c, known) == {"ttt.pkg"}
    assert cycles({"ttt.a": {"ttt.b"}, "ttt.b": {"ttt.a"}}) == [["ttt.a", "ttt.b", "ttt.a"]]
    assert cycles({"ttt.a": {"ttt.b"}, "ttt.b": set()}) == []


def test_the_bot_pages_share_a_kit_not_the_api_blueprint():
    """api.py is only a blueprint: the bot pages and the ladder import their helpers from
    ttt.web.bots.kit, and nothing but the wiring (ttt.web.bots.site) imports the API."""
    found = graph()
    importers = {m for m, targets in found.items() if "ttt.web.bots.api" in targets}
    assert importers == {"ttt.web.bots.site"}
    for page in ("ttt.web.bots.making", "ttt.web.bots.pages", "ttt.web.bots.ladder"):
        assert "ttt.web.bots.kit" in found[page]


def test_the_hub_is_kept_in_the_app_and_hears_every_push_through_the_one_publisher():
    from ttt.web import create_app, get_socketio
    from ttt.web.extensions import get_hub, get_publisher

    app = create_app({"TESTING": True, "TTT_STORE": "memory://"})
    socketio = get_socketio(app)
    assert get_hub(app) is app.extensions["ttt_bots"] is get_publisher(app).bots
    assert get_publisher(app).socketio is socketio
    assert not hasattr(socketio, "ttt_bots")
