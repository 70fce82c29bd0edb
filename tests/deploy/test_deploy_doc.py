"""docs/deploy.md works as written (issue 45): its marked command blocks, run in order.

Each `<!-- doc-test: NAME -->` in the doc is followed by an indented shell block; this test
runs those blocks with bash (`set -e`), as root, with only:

- the paths under a temporary root (/srv/ttt, /etc/ttt, /var/backups/ttt, /usr/local/lib/ttt,
  /etc/systemd/system), the ports 5001 and 5002 free ones, Redis a throwaway one, `<repo>` a
  clone of this checkout, `<commit>`/`<new>`/`<old>` its commits;
- stand-ins for what would change the machine: `apt-get`, `useradd` and `chown` record their
  call; `install` drops `-o`/`-g`; `sudo -u USER` runs the command; `git config --system`
  writes a file of the test's (GIT_CONFIG_SYSTEM); `python3 -m venv` makes a venv whose python
  and gunicorn are this interpreter with the release on its path, and whose `pip install`
  records its call (no network); `systemctl` starts the installed units' ExecStart and
  ExecStartPost as written (tests/support/doc_systemctl.py).

Then: install a release, start two processes and the timer, back up, restore (Redis: stop,
`--force`, start), upgrade to a newer
commit with the rolling restart, check build info, roll back to the first release, and then
to 7bc74e4, the oldest release the doc says a rollback reaches.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.support.servers import ROOT, RedisServer, free_port, need_binary
from tests.support.waiting import eventually

pytestmark = [pytest.mark.deploy, pytest.mark.server, pytest.mark.redis]

DOC = ROOT / "docs" / "deploy.md"
OLDEST = "7bc74e4"
BLOCK = re.compile(r"^<!-- doc-test: ([\w-]+) -->\n\n((?:    .*\n|\n)+)", re.M)


def blocks() -> dict[str, str]:
    """The doc's marked blocks, by name, unindented."""
    found = {name: "\n".join(line[4:] for line in body.splitlines()).strip() + "\n"
             for name, body in BLOCK.findall(DOC.read_text())}
    return found


def stubs(bin_dir: Path, venv_python: str) -> None:
    """The stand-ins, first on PATH."""
    bin_dir.mkdir()
    record = 'echo "$(basename "$0") $*" >> "$DOCTEST_STATE/calls"\n'
    scripts = {
        "apt-get": record, "useradd": record, "chown": record,
        "install": ('args=()\nwhile [ $# -gt 0 ]; do\n  case "$1" in\n'
                    '    -o|-g) shift 2 ;;\n    *) args+=("$1"); shift ;;\n  esac\ndone\n'
                    'exec /usr/bin/install "${args[@]}"\n'),
        "sudo": 'if [ "$1" = -u ]; then shift 2; fi\nexec "$@"\n',
        "systemctl": f'exec {venv_python} {ROOT / "tests" / "support" / "doc_systemctl.py"} "$@"\n',
        "python3": ('if [ "$1" = -m ] && [ "$2" = venv ]; then\n'
                    '  mkdir -p "$3/bin"\n'
                    '  release=$(cd "$(dirname "$3")" && pwd -P)\n'
                    f'  printf \'#!/bin/bash\\nPYTHONPATH=%s exec {venv_python} "$@"\\n\' '
                    '"$release" > "$3/bin/python"\n'
                    f'  printf \'#!/bin/bash\\nPYTHONPATH=%s exec {venv_python} -m gunicorn '
                    '"$@"\\n\' "$release" > "$3/bin/gunicorn"\n'
                    '  printf \'#!/bin/bash\\necho "pip $*" >> "$DOCTEST_STATE/calls"\\n\' '
                    '> "$3/bin/pip"\n'
                    '  chmod +x "$3/bin/python" "$3/bin/gunicorn" "$3/bin/pip"\n'
                    '  exit 0\nfi\nexec /usr/bin/python3 "$@"\n'),
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text("#!/bin/bash\n" + body)
        path.chmod(0o755)


class Site:
    """The temporary root, its substitutions, and bash to run the doc's blocks."""

    def __init__(self, tmp: Path, redis_port: int) -> None:
        self.root = tmp / "root"
        self.state = tmp / "state"
        self.state.mkdir()
        self.ports = {"5001": str(free_port()), "5002": str(free_port())}
        self.paths = [(p, f"{self.root}{p}") for p in
                      ("/srv/ttt", "/etc/ttt", "/var/backups/ttt", "/usr/local/lib/ttt",
                       "/etc/systemd/system")]
        for _, real in self.paths:  # what a Debian machine has before the install
            Path(real).parent.mkdir(parents=True, exist_ok=True)
        Path(f"{self.root}/etc/systemd/system").mkdir()
        # The env file's Redis: where Redis runs (the operator's edit of TTT_STORE).
        self.redis = [("127.0.0.1:6379", f"127.0.0.1:{redis_port}")]
        stubs(tmp / "bin", sys.executable)
        self.env = {**os.environ, "PATH": f"{tmp / 'bin'}:{os.environ['PATH']}",
                    "DOCTEST_STATE": str(self.state),
                    "DOCTEST_UNITS": f"{self.root}/etc/systemd/system",
                    "DOCTEST_MAP": json.dumps(self.paths + self.redis),
                    "GIT_CONFIG_SYSTEM": str(tmp / "gitconfig")}
        self.env.pop("PYTHONPATH", None)  # each release its own, as a venv would

    def text(self, block: str, values: dict[str, str]) -> str:
        for old, new in self.paths:
            block = block.replace(old, new)
        for port, real in self.ports.items():
            block = re.sub(rf"\b{port}\b", real, block)
        for old, new in self.redis:  # where Redis is
            block = block.replace(old, new)
        for name, value in values.items():
            block = block.replace(f"<{name}>", value)
        assert not re.search(r"<[a-z]+>", block), block
        return block

    def run(self, block: str, env: dict[str, str] | None = None, text: str | None = None,
            **values: str) -> str:
        """Run a block of the doc (or `text`, a block as the doc says to change it)."""
        script = self.text(text or blocks()[block], values)
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script],
                              env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=600, cwd=self.root)
        assert done.returncode == 0, (block, script, done.stdout, done.stderr,
                                      self.logs())
        return done.stdout

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}"
                         for p in sorted(self.state.glob("*.log")))

    def url(self, port: str) -> str:
        return f"http://127.0.0.1:{self.ports[port]}"

    def stop_all(self) -> None:
        systemctl = ROOT / "tests" / "support" / "doc_systemctl.py"
        subprocess.run([sys.executable, str(systemctl), "stop", "ttt@*", "ttt-worker@*"],
                       env=self.env, timeout=120, check=False)


def repository(tmp: Path) -> tuple[Path, str, str, str]:
    """A clone of this checkout's HEAD with one more commit: its path, HEAD, the newer
    commit, and the oldest release's full id."""
    repo = tmp / "repo"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(repo)], check=True)
    first = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                           capture_output=True, text=True).stdout.strip()
    (repo / "ttt" / "_release.py").write_text('"""A newer release (the doc test\'s)."""\n')
    subprocess.run(["git", "-C", str(repo), "add", "ttt/_release.py"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=doc", "-c", "user.email=doc@x",
                    "commit", "--quiet", "-m", "newer"], check=True)
    newer = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                           capture_output=True, text=True).stdout.strip()
    full = subprocess.run(["git", "-C", str(repo), "rev-parse", OLDEST], check=True,
                          capture_output=True, text=True).stdout.strip()
    return repo, first, newer, full


def wait_for_text(path: Path, text: str, timeout: float = 60) -> None:
    eventually(lambda: path.exists() and text in path.read_text(), timeout,
               lambda: f"no {text!r} in {path}: {path.read_text() if path.exists() else ''}",
               interval=0.1)


def commit_of(site: Site, port: str) -> str:
    token = next(line.split("=", 1)[1] for line in
                 Path(f"{site.root}/etc/ttt/ttt.env").read_text().splitlines()
                 if line.startswith("TTT_METRICS_TOKEN="))
    page = requests.get(site.url(port) + "/metrics", timeout=10,
                        headers={"Authorization": f"Bearer {token}"})
    if page.status_code == 404:  # a release from before the metrics token (7bc74e4)
        return "none"
    found = re.search(r'^ttt_build_info\{[^}]*commit="([^"]+)"', page.text, re.M)
    return found.group(1) if found else "none"


def install(site: Site, repo: Path, first: str) -> None:
    """Steps 1-4 and 6, then step 10's workers."""
    site.run("prepare")
    site.run("release", repo=str(repo), commit=first)
    site.run("switch", env={"REL": first})
    env_file = Path(f"{site.root}/etc/ttt/ttt.env")
    site.run("env")
    assert "=CHANGE-ME" not in env_file.read_text()
    assert oct(env_file.stat().st_mode & 0o777) == "0o640"
    text = env_file.read_text()
    for old, new in site.redis:  # the operator's edit: where Redis is
        text = text.replace(old, new)
    env_file.write_text(text)
    site.run("deploy-files")
    site.run("start")
    for port in ("5001", "5002"):
        assert requests.get(site.url(port) + "/readyz", timeout=10).status_code == 200
        assert commit_of(site, port) == first[:12]
    # Remote AI workers (here on the same root: their own machine in the doc), each saying
    # its build; the web processes take TTT_AI_QUEUE at their next start.
    site.run("worker")
    for worker in ("ttt-worker@1", "ttt-worker@2"):
        log = site.state / f"{worker}.log"
        wait_for_text(log, "searching for the queue 'ttt-ai-")
        assert f"+{first[:12]})" in log.read_text(), log.read_text()


def back_up_and_restore(site: Site) -> None:
    """A backup as the timer runs it, then the Redis restore: stop, --force, start."""
    out = site.run("backup")
    backup = Path(f"{site.root}/var/backups/ttt") / out.strip().splitlines()[-1]
    assert (backup / "manifest.json").exists() and (backup / "redis.rdb").exists()
    site.run("restore", time=backup.name.removeprefix("ttt-"))
    for port in ("5001", "5002"):
        assert requests.get(site.url(port) + "/readyz", timeout=10).status_code == 200


def upgrade(site: Site, repo: Path, newer: str) -> None:
    """Upgrade steps 2-5."""
    site.run("release", repo=str(repo), commit=newer)
    # Step 3: the deploy-files block from the new release's folder, then the switch.
    site.run("deploy-files", env={"REL": newer}, text=blocks()["deploy-files"].replace(
        "cd /srv/ttt/current", "cd /srv/ttt/releases/$REL"))
    site.run("switch", env={"REL": newer})
    site.run("restart")
    out = site.run("check")
    assert out.count(f'commit="{newer[:12]}"') == 2, out
    # The workers still run the first release: each new process refused each of them, once,
    # as the doc warns (upgrade step 6 says in which order to restart them).
    for port in ("5001", "5002"):
        log = (site.state / f"ttt@{site.ports[port]}.log").read_text()
        assert log.count("it is refused every search") == 2, log[-3000:]


def test_the_deploy_doc_installs_backs_up_upgrades_and_rolls_back(tmp_path):
    need_binary("redis-cli")
    assert set(blocks()) >= {"prepare", "release", "switch", "env", "deploy-files", "start",
                             "worker", "backup", "restore", "restart", "check", "rollback"}
    redis = RedisServer(need_binary("redis-server"), tmp_path)
    site = Site(tmp_path, int(redis.url.rsplit(":", 1)[1].split("/")[0]))
    repo, first, newer, oldest = repository(tmp_path)
    try:
        install(site, repo, first)
        back_up_and_restore(site)
        upgrade(site, repo, newer)
        # Roll back to the first release, then to the oldest one the doc names.
        site.run("rollback", old=first)
        assert [commit_of(site, p) for p in ("5001", "5002")] == [first[:12]] * 2
        site.run("release", repo=str(repo), commit=oldest)
        site.run("rollback", old=oldest)
        for port in ("5001", "5002"):
            health = requests.get(site.url(port) + "/healthz", timeout=10)
            assert health.status_code == 200, health.text
            assert requests.get(site.url(port) + "/readyz", timeout=10).status_code == 404
        calls = (site.state / "calls").read_text()
        assert "useradd --system" in calls and "pip install -e .[prod]" in calls
    finally:
        site.stop_all()
        redis.stop()
    for log in site.state.glob("ttt@*.log"):
        assert "Traceback" not in log.read_text(), (log.name, log.read_text()[-3000:])
