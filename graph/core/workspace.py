"""Where a workspace keeps its state, and the OS lock that makes one process its owner.

cognee's embedded graph database and SQLite allow one writer, so a second process
on the same workspace is refused at once with WORKSPACE_BUSY instead of failing
later on a lock deep inside cognee. flock is released by the kernel when the owner
dies, so a lock left by a killed process is taken over without any stale-file logic.
"""

from __future__ import annotations

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


def resolve_workspace(path: str | os.PathLike[str] | None) -> WorkspacePaths:
    """Check that the workspace folder exists and create its data folder."""
    if path is None or not str(path).strip():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, "A workspace path is required")
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FlowbabyError(
            ErrorCode.INVALID_WORKSPACE_PATH, f"Workspace path does not exist or is not a directory: {root}"
        )
    paths = WorkspacePaths(root.resolve())
    try:
        for folder in (paths.data, paths.logs, paths.projection.parent, paths.cognee_system.parent):
            folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"Workspace is not writable: {exc}") from None
    return paths


class WorkspaceLock:
    """An exclusive, non-blocking flock on .flowbaby/owner.lock holding the owner's pid."""

    def __init__(self, paths: WorkspacePaths) -> None:
        self._path = paths.lock_file
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
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
