"""`systemctl` for tests/deploy/test_deploy_doc.py: the installed unit files, started as written.

It reads the units the doc's commands installed (under the test's root), maps their paths
and ports to the test's (DOCTEST_MAP, a JSON list of [from, to] pairs, applied in order),
and for `start`, `restart`, `stop` and `enable --now`:

- `ttt@PORT`: `ExecStart` in the background (cwd `WorkingDirectory`, the `EnvironmentFile`'s
  variables), then `ExecStartPost` (the readiness wait) in the foreground: a failure stops
  the process and fails the command, as systemd fails the unit; `stop` sends SIGTERM
  (`KillSignal`) and waits for the process to end;
- `ttt-backup` (`Type=oneshot`): `ExecStart` in the foreground;
- timers, `daemon-reload`, `enable` alone, `reload nginx`: recorded only.

Every call is appended to DOCTEST_STATE/calls. Not systemd: no cgroups, users or sandboxing.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

STATE = Path(os.environ["DOCTEST_STATE"])
UNITS = Path(os.environ["DOCTEST_UNITS"])
MAPPING = [tuple(pair) for pair in json.loads(os.environ["DOCTEST_MAP"])]


def mapped(text: str) -> str:
    for old, new in MAPPING:
        text = text.replace(old, new)
    return text


def unit(name: str) -> tuple[dict[str, str], str]:
    """The unit's [Service] settings (later lines win; paths mapped), and its instance."""
    base, _, rest = name.partition("@")
    instance = rest.removesuffix(".service") if rest else ""
    file = UNITS / (f"{base}@.service" if rest else name if "." in name else f"{name}.service")
    settings: dict[str, str] = {}
    for line in file.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            settings[key.strip()] = mapped(value.strip().replace("%i", instance))
    return settings, instance


def environment(settings: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    path = settings.get("EnvironmentFile")
    if path:
        for line in Path(path.lstrip("-")).read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                key, _, value = line.partition("=")
                env[key.strip()] = mapped(value.strip())
    return env


def pid_file(name: str) -> Path:
    return STATE / f"{name}.pid"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def start(name: str) -> int:
    if name.endswith(".timer"):
        return 0
    settings, _ = unit(name)
    env = environment(settings)
    if settings.get("Type") == "oneshot":
        return subprocess.run(shlex.split(settings["ExecStart"]), env=env,
                              cwd=settings.get("WorkingDirectory")).returncode
    known = pid_file(name)
    if known.exists() and alive(int(known.read_text())):
        return 0  # started already: systemctl start does nothing
    with open(STATE / f"{name}.log", "ab") as out:
        proc = subprocess.Popen(shlex.split(settings["ExecStart"]), env=env,
                                cwd=settings["WorkingDirectory"], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    known.write_text(str(proc.pid))
    post = settings.get("ExecStartPost")
    if post and subprocess.run(shlex.split(post), env=env).returncode != 0:
        stop(name)
        print(f"Job for {name} failed (ExecStartPost)", file=sys.stderr)
        return 1
    return 0


def stop(name: str) -> int:
    known = pid_file(name)
    if not known.exists():
        return 0
    pid = int(known.read_text())
    if alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 40  # TimeoutStopSec
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    known.unlink()
    return 0


def running(pattern: str) -> list[str]:
    return sorted(p.name.removesuffix(".pid") for p in STATE.glob("*.pid")
                  if fnmatch.fnmatch(p.name.removesuffix(".pid"), pattern))


def main(argv: list[str]) -> int:
    with open(STATE / "calls", "a") as calls:
        calls.write(shlex.join(argv) + "\n")
    args = [a for a in argv if not a.startswith("-")]
    if not args:
        return 0
    verb, names = args[0], [mapped(n) for n in args[1:]]
    if verb == "enable" and "--now" in argv or verb == "start":
        return max([start(n) for n in names] or [0])
    if verb == "restart":
        return max([stop(n) or start(n) for n in names] or [0])
    if verb == "stop":
        return max([stop(r) for n in names for r in running(n)] or [0])
    return 0  # daemon-reload, enable, reload nginx: nothing to do here


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
