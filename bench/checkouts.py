"""The source trees a side-by-side benchmark runs: this one, or another revision checked out
in a temporary git worktree, and what each one is (its commit, and whether it has changes)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source_state(root: Path) -> str:
    """The commit a tree is at, and whether its server code has uncommitted changes."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "ttt",
                                "app.py"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (head or "unknown") + (" + uncommitted changes" if dirty.strip() else "")


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """A source tree of `ref`: the path itself, or a temporary worktree of that revision."""
    if (Path(ref) / "app.py").is_file():
        yield Path(ref).resolve()
        return
    here = ROOT
    place = Path(tempfile.mkdtemp(prefix="ttt-ref-")) / "tree"
    subprocess.run(["git", "-C", str(here), "worktree", "add", "--detach", "--quiet",
                    str(place), ref], check=True, timeout=120)
    try:
        yield place
    finally:
        subprocess.run(["git", "-C", str(here), "worktree", "remove", "--force", str(place)],
                       check=False, timeout=120)
        shutil.rmtree(place.parent, ignore_errors=True)
