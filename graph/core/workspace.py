"""Where a workspace keeps its state, and the OS lock that makes one process its owner.

cognee's embedded graph database and SQLite allow one writer, so a second process
on the same workspace is refused at once with WORKSPACE_BUSY instead of failing
later on a lock deep inside cognee. flock is released by the kernel when the owner
dies, so a lock left by a killed process is taken over without any stale-file logic.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from graph.core.contract import ErrorCode, FlowbabyError

DATA_DIR = ".flowbaby"


@dataclass(frozen=True)
class WorkspacePaths:
    root: Path

    @property
    def data(self) -> Path:
        return self.root / DATA_DIR

    @property
    def store_db(self) -> Path:
        return self.data / "memories.sqlite"

    @property
    def vectors(self) -> Path:
        return self.data / "vectors.lance"

    @property
    def cognee_system(self) -> Path:
        return self.data / "cognee" / "system"

    @property
    def cognee_data(self) -> Path:
        return self.data / "cognee" / "data"

    @property
    def cognee_cache(self) -> Path:
        return self.data / "cognee" / "cache"

    @property
    def cognee_env(self) -> Path:
        # An empty file: pins cognee's dotenv lookup so no .env above the cwd leaks in.
        return self.data / "cognee" / "cognee.env"

    @property
    def projection(self) -> Path:
        return self.data / "graph" / "projection.json"

    @property
    def logs(self) -> Path:
        return self.data / "logs"

    @property
    def audit_log(self) -> Path:
        return self.data / "agent_audit.log"

    @property
    def lock_file(self) -> Path:
        return self.data / "owner.lock"

    @property
    def env_file(self) -> Path:
        return self.root / ".env"

    @property
    def git_ignore(self) -> Path:
        return self.data / ".gitignore"


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
"""Memories, logs and the audit trail are the user's alone, whatever the umask (INGEST_CONTRACT.md 9)."""
GIT_IGNORE = (
    "# Written by flowbaby: nothing here belongs in git (the API token, the memories, the indexed\n"
    "# agent transcripts). Delete this file only if you mean to commit them.\n*\n"
)


def resolve_workspace(path: str | os.PathLike[str] | None, *, create: bool = True) -> WorkspacePaths:
    """Check that the workspace folder exists and create its data folder (0700), unless
    `create` is false (read-only readers such as graph inspection write nothing)."""
    if path is None or not str(path).strip():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, "A workspace path is required")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FlowbabyError(
            ErrorCode.INVALID_WORKSPACE_PATH, f"Workspace path does not exist or is not a directory: {root}"
        )
    paths = WorkspacePaths(root.resolve())
    if not create:
        return paths
    try:
        paths.data.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        if paths.data.stat().st_mode & 0o077 and paths.data.stat().st_uid == os.getuid():
            os.chmod(paths.data, PRIVATE_DIR_MODE)  # created by an older version under umask 022
        for folder in (paths.logs, paths.projection.parent, paths.cognee_system.parent):
            folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        keep_out_of_git(paths)
    except OSError as exc:
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"Workspace is not writable: {exc}") from None
    return paths


def keep_out_of_git(paths: WorkspacePaths) -> None:
    """`.flowbaby/.gitignore` ignoring everything in the folder, so `git add -A` in the project never
    takes the token or the memories; a file of the user's own at that path is left as it is."""
    with contextlib.suppress(FileExistsError):
        fd = os.open(paths.git_ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(GIT_IGNORE)


def create_private(path: Path) -> None:
    """Create an empty file readable by its owner only (no-op if it exists): SQLite gives its
    -wal and -shm files the database file's mode, and log handlers keep an existing file's."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))


class WorkspaceLock:
    """An exclusive, non-blocking flock on .flowbaby/owner.lock holding the owner's pid."""

    def __init__(self, paths: WorkspacePaths) -> None:
        self._path = paths.lock_file
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise FlowbabyError(
                ErrorCode.WORKSPACE_BUSY,
                f"Workspace {self._path.parent.parent} is owned by another Flowbaby process (pid {owner})",
                ownerPid=int(owner) if owner.isdigit() else None,
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
