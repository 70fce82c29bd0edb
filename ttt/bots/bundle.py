"""The bot client as one file (served at `/bots/sdk.py`), built from the parts of `ttt.bots.sdk`.

Each part's body goes in, in `PARTS` order, under one block of the standard-library imports
they use; the imports of the other parts (`from ttt.bots.sdk.PART import ...`) are dropped,
since in one file every name is already there. The file runs on its own: `python3 sdk.py`.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from ttt.bots.sdk import PARTS

HOME = Path(__file__).resolve().parent / "sdk"
OWN = "ttt.bots.sdk."  # the parts' imports of each other


def _split(name: str) -> tuple[list[ast.stmt], str]:
    """A part's leading imports and the rest of its text (what it defines)."""
    text = (HOME / f"{name}.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body.pop(0)  # the part's docstring: the bundle has its own
    imports: list[ast.stmt] = []
    while body and isinstance(body[0], ast.Import | ast.ImportFrom):
        imports.append(body.pop(0))
    if not body:
        raise ValueError(f"sdk part {name} defines nothing")
    start = imports[-1].end_lineno if imports else body[0].lineno - 1
    return imports, "".join(text.splitlines(keepends=True)[start:]).strip("\n")


def _import_lines(imports: list[ast.stmt]) -> list[str]:
    """One `import` block for every part: the standard library's, merged and sorted."""
    plain: set[str] = set()
    named: dict[str, set[str]] = {}
    for node in imports:
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "__future__" or module.startswith(OWN):
                continue
            if node.level:
                raise ValueError(f"the sdk's parts import absolutely, not .{module}")
            named.setdefault(module, set()).update(
                a.name if a.asname is None else f"{a.name} as {a.asname}" for a in node.names)
        else:
            plain.update(a.name if a.asname is None else f"{a.name} as {a.asname}"
                         for a in node.names)
    return ([f"import {name}" for name in sorted(plain)]
            + [f"from {module} import {', '.join(sorted(names))}"
               for module, names in sorted(named.items())])


@functools.cache
def build() -> str:
    """The one-file client, as served (before the site's address is written in)."""
    docstring = ast.get_docstring(ast.parse((HOME / "__init__.py").read_text("utf-8")))
    imports: list[ast.stmt] = []
    bodies = []
    for name in PARTS:
        own, body = _split(name)
        imports += own
        bodies.append(f"# --- {_summary(name)} (ttt/bots/sdk/{name}.py)\n\n{body}")
    head = (f'"""{docstring}\n"""\n\n# Built from ttt/bots/sdk/ ({", ".join(PARTS)}) by '
            "ttt/bots/bundle.py.\n\nfrom __future__ import annotations\n\n"
            + "\n".join(_import_lines(imports)))
    tail = 'if __name__ == "__main__":\n    sys.exit(main())\n'
    return "\n\n\n".join([head, *bodies, tail])


def _summary(name: str) -> str:
    """A part's docstring's first line, for its heading in the bundle."""
    docstring = ast.get_docstring(ast.parse((HOME / f"{name}.py").read_text("utf-8"))) or ""
    return docstring.splitlines()[0].rstrip(".") if docstring else name
