"""A workspace's service: the one `flowbaby serve` that `flowbaby start`, the hooks and `flowbaby ui`
start and find (INGEST_CONTRACT.md 9.2).

It holds `.flowbaby/service.lock` (flock) for its whole life, so a second service started at the same
moment leaves at once, and publishes `.flowbaby/service.json` (pid, port, since, idle figures) for
`ui`, `status`, `stop` and the extension. The record is trusted as owner.json is: a private regular
file of this user, not a link, naming a live process of this user that runs `flowbaby serve`.
Standard library only (the hook mirrors the start command without importing this).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graph.core.child_python import child_env, module_command
from graph.core.environment import Environment
from graph.core.files import write_atomic
from graph.core.workspace_root import WorkspacePaths

IDLE_EXIT_ENV = "FLOWBABY_IDLE_EXIT_SEC"
DEFAULT_IDLE_EXIT_SEC = 1800.0
"""A started service leaves after this long without a call, a connected front or graph work."""
START_WAIT_SEC = 60.0
"""How long `flowbaby start` and `flowbaby ui` wait for a service they started to answer."""


def server_proof(token: str, port: int, challenge: str) -> str:
    """What only a server holding the workspace's token answers to `challenge` on `port` (the port the
    caller connected to, so a listener relaying to the real server elsewhere fails): `flowbaby ui`
    checks it before it sends the token anywhere (INGEST_CONTRACT.md 11)."""
    message = f"flowbaby-server-proof\0{port}\0{challenge}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


class ServiceFailed(Exception):
    """The service this process started exited with an error before it answered: `said` is the last line
    it wrote to service.log (a refusal: `flowbaby serve: CODE: message`), `code` its exit code."""

    def __init__(self, said: str, code: int) -> None:
        super().__init__(said)
        self.said, self.code = said, code


def lock_file(paths: WorkspacePaths) -> Path:
    return paths.data / "service.lock"


def record_file(paths: WorkspacePaths) -> Path:
    return paths.data / "service.json"


def idle_exit_sec() -> float:
    """FLOWBABY_IDLE_EXIT_SEC, or the default; 0 never exits for idleness."""
    try:
        return max(0.0, float(Environment.read().get(IDLE_EXIT_ENV, str(DEFAULT_IDLE_EXIT_SEC))))
    except ValueError:
        return DEFAULT_IDLE_EXIT_SEC


def claim(paths: WorkspacePaths) -> int | None:
    """The service lock's descriptor (held until the process exits; the file holds its pid), or None
    when another service holds it. The lock file is opened without following a link and must be this user's."""
    fd = os.open(lock_file(paths), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise OSError(f"{lock_file(paths)} is not a regular file of this user")
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)  # what a hook reads: a service is starting
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def release(fd: int) -> None:
    """Empty the service lock (no pid left for a hook to wait on) and let it go."""
    os.ftruncate(fd, 0)
    os.close(fd)


def publish(paths: WorkspacePaths, record: dict[str, Any]) -> None:
    """Write service.json (0600) whole, through graph.core.files (a new file, renamed into place)."""
    write_atomic(record_file(paths), json.dumps({"pid": os.getpid(), **record}))


def withdraw(paths: WorkspacePaths) -> None:
    """Remove service.json if this process wrote it."""
    with contextlib.suppress(OSError, ValueError):
        if json.loads(record_file(paths).read_text(encoding="utf-8")).get("pid") == os.getpid():
            record_file(paths).unlink()


def _runs_serve(pid: int) -> bool:
    """A live process of this user running `flowbaby serve` (Linux: its /proc entry; elsewhere alive)."""
    proc = Path(f"/proc/{pid}")
    if proc.is_dir():
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
            return proc.stat().st_uid == os.getuid() and b"flowbaby" in b" ".join(words) and b"serve" in words
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def running(paths: WorkspacePaths) -> dict[str, Any] | None:
    """The running service's record, or None: no record, one not trusted (not a private regular file
    of this user, garbled), or one whose process is gone."""
    try:
        fd = os.open(record_file(paths), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        try:
            record = json.loads(handle.read(64 * 1024))
        except ValueError:
            return None
    if not isinstance(record, dict) or not all(isinstance(record.get(key), int) for key in ("pid", "port")):
        return None
    return record if _runs_serve(record["pid"]) else None


def command(root: Path, idle_sec: float) -> list[str]:
    """The service's command line: `flowbaby serve` on a free loopback port that leaves when idle."""
    return module_command("flowbaby", "serve", "--workspace", str(root), "--port", "0", "--idle-exit", str(idle_sec))


def spawn(paths: WorkspacePaths, idle_sec: float) -> tuple[subprocess.Popen[bytes], int]:
    """Start the service detached (a session of its own, nothing inherited but its log), isolated from
    the working folder like every child; its output goes to .flowbaby/logs/service.log. The process,
    and the log's size before it (where its own lines begin)."""
    paths.logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    log = os.open(paths.logs / "service.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        offset = os.fstat(log).st_size
        child = subprocess.Popen(
            command(paths.root, idle_sec),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            cwd=paths.root,
            env=child_env(),
        )
    finally:
        os.close(log)
    return child, offset


def last_line(paths: WorkspacePaths, offset: int) -> str:
    """The last line written to service.log after `offset`, printable characters only, at most 500; "" for none."""
    try:
        fd = os.open(paths.logs / "service.log", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        handle.seek(max(offset, os.fstat(fd).st_size - 8192))
        lines = [line for line in handle.read(8192).decode("utf-8", "replace").splitlines() if line.strip()]
    return "".join(c for c in lines[-1] if c.isprintable())[:500] if lines else ""


def wait_running(
    paths: WorkspacePaths, timeout: float, failed: Callable[[], bool] | None = None
) -> dict[str, Any] | None:
    """The service's record once it is published (it publishes when it answers), or None after
    `timeout` or once `failed()` says the service we started exited with an error (one that found
    another service starting exits 0, and that one's record is waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = running(paths)
        if record is not None:
            return record
        if failed is not None and failed():
            return None
        time.sleep(0.1)
    return None


def ensure(
    paths: WorkspacePaths, idle_sec: float, timeout: float = START_WAIT_SEC
) -> tuple[dict[str, Any] | None, bool]:
    """The running service's record, starting one first if none runs: (record or None, whether this
    call started it). None when it did not answer within `timeout`; ServiceFailed when the one started
    exited with an error (its refusal, for the caller to print rather than a pointer to the log)."""
    record = running(paths)
    if record is not None:
        return record, False
    child, offset = spawn(paths, idle_sec)
    record = wait_running(paths, timeout, lambda: child.poll() not in (None, 0))
    if record is None and child.poll() not in (None, 0):
        raise ServiceFailed(last_line(paths, offset) or f"it exited with {child.returncode}", child.returncode)
    return record, record is not None and record["pid"] == child.pid


def stop(paths: WorkspacePaths, timeout: float) -> tuple[dict[str, Any] | None, bool]:
    """SIGTERM the running service and wait for it to exit: (its record or None, whether it exited)."""
    import signal

    record = running(paths)
    if record is None:
        return None, True
    with contextlib.suppress(ProcessLookupError):
        os.kill(record["pid"], signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _runs_serve(record["pid"]):
            return record, True
        time.sleep(0.05)
    return record, False
