"""The production stack on loopback, from the files in deploy/: redis, gunicorn, nginx."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests
import socketio

from tests.support.servers import ROOT, Remote, free_port
from tests.support.waiting import eventually

DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "ttt@.service"
METRICS_TOKEN = "deploy-test-metrics-token"


class Gunicorn:
    """One `gunicorn -c deploy/gunicorn.conf.py` process on a loopback port."""

    def __init__(self, env: dict[str, str], log: Path, port: int | None = None,
                 nofile: int | None = None) -> None:
        self.port = port or free_port()
        # Under the unit's descriptor limit (prlimit), as systemd would start it.
        self.prefix = ["prlimit", f"--nofile={nofile}:{nofile}"] if nofile else []
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **env}
        self.log = log
        self.proc: subprocess.Popen | None = None

    def launch(self) -> None:
        """Start the process and return at once (as `systemctl start` of a Type=simple unit)."""
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [*self.prefix, sys.executable, "-m", "gunicorn", "-c",
                 str(DEPLOY / "gunicorn.conf.py"), "-b", f"127.0.0.1:{self.port}"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)

    def start(self, timeout: float = 90) -> Gunicorn:
        self.launch()
        assert self.proc is not None
        wait_healthy(self.url, self.proc, timeout)
        return self

    def terminate(self) -> None:
        """SIGTERM, as systemd's stop: the process drains and exits by itself."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 40) -> None:
        if self.proc and self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def metrics(self) -> str:
        answer = requests.get(self.url + "/metrics", timeout=10,
                              headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        answer.raise_for_status()
        return answer.text


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float) -> None:
    def healthy() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: exited with {proc.returncode}")
        try:
            return requests.get(url + "/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    eventually(healthy, timeout, f"{url} did not become healthy", interval=0.1)


def nginx_conf(site: Path, listen: int, upstreams: list[int], workdir: Path,
               main: Path = DEPLOY / "nginx-main.conf") -> str:
    """deploy/nginx-main.conf with deploy/nginx.conf in place of its conf.d include, with only
    ports and paths changed (the sizes, worker_connections and worker_rlimit_nofile, as
    shipped)."""
    text = site.read_text()
    default_ports = re.findall(r"server 127\.0\.0\.1:(\d+)", text)
    assert len(default_ports) == len(upstreams), "deploy/nginx.conf lists the processes"
    for old, new in zip(default_ports, upstreams, strict=True):
        text = text.replace(f"server 127.0.0.1:{old} ", f"server 127.0.0.1:{new} ")
    text = re.sub(r"^(\s*)listen 80;", rf"\1listen 127.0.0.1:{listen};", text, flags=re.M)
    text = text.replace("/var/log/nginx/", f"{workdir}/")  # the site's JSON access log
    temp = "\n".join(f"    {kind}_temp_path {workdir / kind};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    whole = main.read_text()
    # As root the workers would drop to `nobody`, who cannot write the test's folders.
    user = "user root;" if os.geteuid() == 0 else ""
    changes = [  # each line replaced whole, by text taken literally
        (r"^user .*;$", user),
        (r"^pid .*;$", ""),  # given on the command line
        (r"^error_log .*;$", f"error_log {workdir / 'error.log'};"),
        (r"^include /etc/nginx/modules-enabled/\*\.conf;$", ""),
        (r"^\s*access_log .*;$",
         "    log_format upstream '$request $status $upstream_addr $ttt_sticky';\n"
         f"    access_log {workdir / 'access.log'} upstream;\n{temp}"),
        (r"^\s*include /etc/nginx/conf\.d/\*\.conf;$", text),
    ]
    if not Path("/etc/nginx/mime.types").exists():
        changes.append((r"^\s*include /etc/nginx/mime\.types;$", ""))
    for pattern, replacement in changes:
        whole, count = re.subn(pattern, lambda _, r=replacement: r, whole, count=1, flags=re.M)
        assert count == 1, f"deploy/nginx-main.conf: no line {pattern}"
    return whole


def shipped(path: Path, name: str) -> str:
    """The value of a directive (`name value;`) or setting (`Name=value`) in a shipped file."""
    found = re.search(rf"^\s*{re.escape(name)}\s*[= ]\s*([^;#\n]+)", path.read_text(), re.M)
    assert found, f"{path.name}: no {name}"
    return found.group(1).strip()


class Nginx:
    """nginx in the foreground with a generated conf, its pid and logs in a folder."""

    def __init__(self, binary: str, workdir: Path, upstreams: list[int],
                 main: Path = DEPLOY / "nginx-main.conf", site: Path = DEPLOY / "nginx.conf"
                 ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        conf = workdir / "nginx.conf"
        conf.write_text(nginx_conf(site, self.port, upstreams, workdir, main))
        with open(workdir / "stderr.log", "wb") as err:
            self.proc = subprocess.Popen(
                [binary, "-p", str(workdir), "-c", str(conf), "-e", str(workdir / "error.log"),
                 "-g", f"daemon off; pid {workdir / 'nginx.pid'};"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited: " + (workdir / "stderr.log").read_text()
                                   + (workdir / "error.log").read_text())
            try:
                requests.get(self.url + "/metrics", timeout=2)
                return
            except requests.RequestException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # nginx's graceful stop
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def player(url: str, transports: list[str], reconnect: bool = False) -> Remote:
    """A player through the front on these transports, its cookie in its HTTP session (the
    python client sends a Cookie header given to connect() with the first request only)."""
    remote = Remote(url, connect=False)
    remote.sio = socketio.Client(reconnection=reconnect, reconnection_delay=0.2,
                                 reconnection_delay_max=1, http_session=remote.http)
    for name in ("game", "rematch", "record", "reaction"):
        remote.sio.on(name, remote._collector(name))

    remote.drops = 0  # type: ignore[attr-defined]

    def dropped(*_: object) -> None:
        remote.drops += 1  # type: ignore[attr-defined]
        # python-engineio's client leaves the socket of a websocket that broke under it open
        # (a ResourceWarning, an error here): close it as a browser would.
        ws = getattr(remote.sio.eio, "ws", None)
        if ws is not None:
            ws.shutdown()

    remote.sio.on("disconnect", dropped)
    disconnect = remote.close

    def close() -> None:
        disconnect()
        remote.http.close()  # its pooled polling connections: the client does not own it

    remote.close = close  # type: ignore[method-assign]
    remote.sio.connect(url, transports=transports, wait_timeout=10)
    return remote


class LimitedApp:
    """`python app.py` (the threaded server) under `prlimit --nofile=N`, as under a unit's
    LimitNOFILE."""

    def __init__(self, nofile: int, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **env}
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                ["prlimit", f"--nofile={nofile}:{nofile}", sys.executable,
                 str(ROOT / "app.py"), "--port", str(self.port)],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
        try:
            wait_healthy(self.url, self.proc, 90)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def answer_ms(url: str, source: str = "127.0.0.1", timeout: float = 10) -> tuple[int, float]:
    """One GET on a fresh connection from `source`: its status and milliseconds."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    started = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout,
                                      source_address=(source, 0))
    try:
        conn.request("GET", parts.path or "/")
        answer = conn.getresponse()
        answer.read()
        return answer.status, (time.perf_counter() - started) * 1000
    finally:
        conn.close()
