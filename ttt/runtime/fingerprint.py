"""Which build of ttt this process runs: the package version and the git commit.

The commit comes from `TTT_COMMIT` when the deploy sets it, else from the checkout the code
was imported from (`git rev-parse HEAD` there), else "unknown". Read once per process.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def version() -> str:
    """The package version (pyproject.toml), or "unknown" when ttt is not installed."""
    try:
        return metadata.version("ttt")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def commit() -> str:
    """The commit of the code this process imported."""
    if os.environ.get("TTT_COMMIT"):
        return os.environ["TTT_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def release() -> str:
    """`version+commit`, as recorded beside a store's migrations."""
    return f"{version()}+{commit()}"


@functools.cache
def code_fingerprint() -> str:
    """A hash of the ttt package's source as this process first read it: a worker process
    spawned later from the same folder compares, so code changed on disk under a running
    server (a checkout updated before the restart) is refused, not mixed in."""
    digest = hashlib.sha256()
    package = ROOT / "ttt"
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
