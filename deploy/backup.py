"""Back up and restore a ttt site's data while it serves: the store and the secret key.

    python deploy/backup.py backup --to /var/backups/ttt [--store URL] [--instance DIR]
                                   [--env-file /etc/ttt/ttt.env] [--keep 14]
    python deploy/backup.py restore BACKUP_DIR --store URL [--instance DIR] [--force]

The store is TTT_STORE (read from --env-file or the environment; default the SQLite file in
instance/). Backups run online, the servers playing on:

- SQLite: SQLite's online backup API (what `sqlite3 ttt.sqlite3 ".backup x"` does), which
  copies the recent moves still in the -wal file too; a plain `cp` of a live file does not.
  The copy is checked with `PRAGMA integrity_check`.
- Redis: `redis-cli --rdb`, a point-in-time snapshot fetched over the connection (no access to
  Redis's own files needed). Restored through a throwaway redis-server that loads it, each key
  copied with DUMP/RESTORE (its time to live kept) into the running Redis, whose AOF records it.
- The secret key (instance/secret_key, or TTT_SECRET_KEY inside the env file): without it
  every player's cookie is void and every player loses their seat.

Restore SQLite with every ttt process stopped; restore Redis into a Redis that holds no ttt
keys (or --force to delete them first). Each backup is a directory `ttt-<UTC time>` of mode
700 with a manifest.json; --keep N removes all but the newest N.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "ttt:"  # every Redis key the store writes (ttt/store/redis_keys.py)


def read_env(path: Path | None) -> dict[str, str]:
    """KEY=value lines of a systemd EnvironmentFile, over the process environment."""
    env = dict(os.environ)
    if path:
        for line in path.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, _, value = line.partition("=")
                env[key.strip()] = value.strip().strip('"').strip("'")
    return env


def store_url(given: str | None, env: dict[str, str], instance: Path) -> str:
    return given or env.get("TTT_STORE") or f"sqlite:///{instance / 'ttt.sqlite3'}"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sqlite_copy(source: str, target: Path) -> dict:
    """An online, consistent copy of a live SQLite file (WAL included), checked."""
    if not os.path.exists(source):
        raise SystemExit(f"no SQLite store at {source}")
    src = sqlite3.connect(source, timeout=30)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst, pages=1024, sleep=0.005)  # in steps: writers are never held long
        check = dst.execute("PRAGMA integrity_check").fetchone()[0]
        version = dst.execute("PRAGMA user_version").fetchone()[0]
        games = dst.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    finally:
        dst.close()
        src.close()
    if check != "ok":
        raise SystemExit(f"backup of {source} failed its integrity check: {check}")
    return {"schema_version": version, "games": games}


def redis_snapshot(url: str, target: Path) -> dict:
    """A point-in-time RDB snapshot of the Redis at `url`, through redis-cli --rdb."""
    subprocess.run(["redis-cli", "-u", url, "--rdb", str(target)], check=True,
                   stdout=subprocess.DEVNULL)
    with open(target, "rb") as f:
        if f.read(5) != b"REDIS":
            raise SystemExit(f"{target} is not an RDB file")
    return {"db": _db(url)}


def _db(url: str) -> int:
    path = urlparse(url).path.strip("/")
    return int(path) if path.isdigit() else 0


def backup(args: argparse.Namespace) -> Path:
    env = read_env(args.env_file)
    instance = args.instance
    url = store_url(args.store, env, instance)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    args.to.mkdir(parents=True, exist_ok=True)
    folder = args.to / f"ttt-{stamp}"
    for n in range(2, 100):  # two backups within one second: the second is ttt-<time>-2
        try:
            folder.mkdir(mode=0o700)
            break
        except FileExistsError:
            folder = args.to / f"ttt-{stamp}-{n}"
    manifest: dict = {"time": stamp, "store": url.split("://")[0], "files": {}}
    if url.startswith("sqlite:///"):
        manifest.update(sqlite_copy(url.removeprefix("sqlite:///"), folder / "ttt.sqlite3"))
    elif url.startswith(("redis://", "rediss://", "unix://")):
        manifest.update(redis_snapshot(url, folder / "redis.rdb"))
    else:
        raise SystemExit(f"nothing to back up in store {url!r}")
    key = instance / "secret_key"
    if key.exists():
        shutil.copy2(key, folder / "secret_key")
    elif not env.get("TTT_SECRET_KEY"):
        print(f"warning: no {key} and no TTT_SECRET_KEY: the secret key is not backed up",
              file=sys.stderr)
    if args.env_file:  # TTT_SECRET_KEY and the other tokens, when set there
        shutil.copy2(args.env_file, folder / "ttt.env")
    for name in os.listdir(folder):
        os.chmod(folder / name, 0o600)
        manifest["files"][name] = sha256(folder / name)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    os.chmod(folder / "manifest.json", 0o600)
    if args.keep:
        old = sorted(p for p in args.to.glob("ttt-*") if p.is_dir())[:-args.keep]
        for path in old:
            shutil.rmtree(path)
    print(folder)
    return folder


def restore(args: argparse.Namespace) -> None:
    folder: Path = args.backup
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, digest in manifest["files"].items():
        if sha256(folder / name) != digest:
            raise SystemExit(f"{folder / name} does not match its manifest: not restored")
    env = read_env(None)
    url = store_url(args.store, env, args.instance)
    if url.startswith("sqlite:///"):
        sqlite_restore(folder / "ttt.sqlite3", Path(url.removeprefix("sqlite:///")))
    else:
        redis_restore(folder / "redis.rdb", url, manifest.get("db", 0), args.force)
    if (folder / "secret_key").exists():
        args.instance.mkdir(parents=True, exist_ok=True)
        target = args.instance / "secret_key"
        shutil.copy2(folder / "secret_key", target)
        os.chmod(target, 0o600)
    print(f"restored {folder} into {url}")


def sqlite_restore(copy: Path, target: Path) -> None:
    """Put the copy in place of the file (every ttt process stopped): its stale -wal and -shm
    go, or SQLite would read them as part of the restored file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_name(target.name + ".restoring")
    shutil.copy2(copy, staged)
    os.chmod(staged, 0o600)
    for suffix in ("-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    os.replace(staged, target)


def redis_restore(rdb: Path, url: str, db: int, force: bool) -> None:
    """Load the snapshot in a throwaway redis-server, copy its ttt keys into the Redis at
    `url` (DUMP/RESTORE, times to live kept): online, and recorded by that Redis's AOF."""
    import redis

    target = redis.Redis.from_url(url)
    present = list(target.scan_iter(match=PREFIX + "*", count=1000))
    if present and not force:
        raise SystemExit(f"{url} already holds {len(present)} ttt keys: --force deletes them")
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(rdb, Path(scratch) / "dump.rdb")
        sock = Path(scratch) / "redis.sock"
        proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", str(sock), "--dir", scratch,
             "--dbfilename", "dump.rdb", "--appendonly", "no", "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            source = redis.Redis(unix_socket_path=str(sock), db=db)
            deadline = time.monotonic() + 60
            while True:
                try:
                    if source.ping() and not source.info("persistence")["loading"]:
                        break
                except (redis.ConnectionError, redis.BusyLoadingError):
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the snapshot did not load into a redis-server")
                time.sleep(0.05)
            for chunk in _chunks(present, 500):
                target.delete(*chunk)
            copied = 0
            for chunk in _chunks(list(source.scan_iter(match=PREFIX + "*", count=1000)), 500):
                read = source.pipeline(transaction=False)
                for key in chunk:
                    read.dump(key)
                    read.pttl(key)
                values = read.execute()
                write = target.pipeline(transaction=False)
                for i, key in enumerate(chunk):
                    data, ttl = values[2 * i], values[2 * i + 1]
                    if data is not None:
                        write.restore(key, max(ttl, 0), data, replace=True)
                        copied += 1
                write.execute()
            print(f"{copied} keys restored")
        finally:
            proc.terminate()
            proc.wait(10)


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("backup", help="back up the store and the secret key, online")
    make.add_argument("--to", type=Path, required=True, help="folder that holds the backups")
    make.add_argument("--env-file", type=Path, help="the servers' settings (/etc/ttt/ttt.env)")
    make.add_argument("--keep", type=int, default=0, help="keep only the newest N backups")
    back = commands.add_parser("restore", help="restore a backup (SQLite: servers stopped)")
    back.add_argument("backup", type=Path, help="a ttt-<time> folder made by `backup`")
    back.add_argument("--force", action="store_true", help="Redis: replace its ttt keys")
    for command in (make, back):
        command.add_argument("--store", help="the store's URL (default TTT_STORE)")
        command.add_argument("--instance", type=Path, default=ROOT / "instance",
                             help="the folder of the secret key (default instance/)")
    args = parser.parse_args(argv)
    backup(args) if args.command == "backup" else restore(args)


if __name__ == "__main__":
    main()
