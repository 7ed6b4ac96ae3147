"""Where a workspace keeps its state, and the OS lock that makes one process its owner.

cognee's embedded graph database and SQLite allow one writer, so a second process
on the same workspace is refused at once with WORKSPACE_BUSY instead of failing
later on a lock deep inside cognee. flock is released by the kernel when the owner
dies, so a lock left by a killed process is taken over without any stale-file logic.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
from pathlib import Path

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.files import write_atomic
from graph.core.seal import seal_path, write_sealed_file
from graph.core.workspace_root import (  # noqa: F401 (re-exported)
    DATA_DIR,
    LINK_FILE,
    LINK_PURPOSE,
    WorkspacePaths,
    main_checkout,
    read_link,
    shared_root,
)

API_TOKEN_PURPOSE = "api-token"
"""The API token's seal purpose (graph.core.seal)."""


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
"""Memories, logs and the audit trail are the user's alone, whatever the umask (INGEST_CONTRACT.md 9)."""
GIT_IGNORE = (
    "# Written by flowbaby, and again at each start: nothing here belongs in git (the API token, the\n"
    "# memories, the indexed agent transcripts). To commit an export, write it outside this folder.\n*\n"
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
    paths = WorkspacePaths(shared_root(root.resolve()))
    if os.path.lexists(paths.data):
        check_data_folder(paths)
    if not create:
        return paths
    try:
        paths.data.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
        if paths.data.stat().st_mode & 0o077:
            os.chmod(paths.data, PRIVATE_DIR_MODE)  # created by an older version under umask 022
        for folder in (paths.logs, paths.projection.parent, paths.cognee_system.parent):
            folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        keep_out_of_git(paths)
    except OSError as exc:
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"Workspace is not writable: {exc}") from None
    return paths


def check_data_folder(paths: WorkspacePaths) -> None:
    """Refuse a .flowbaby that is a symlink, not a folder, or another user's: its owner.json
    and owner.sock decide which process a front sends memories to; and one that holds a symlink,
    a FIFO or a device anywhere (INGEST_CONTRACT.md 9.1)."""
    info = paths.data.lstat()
    problem = (
        "is a symlink"
        if stat.S_ISLNK(info.st_mode)
        else "is not a folder"
        if not stat.S_ISDIR(info.st_mode)
        else f"is owned by uid {info.st_uid}, not this user (uid {os.getuid()})"
        if info.st_uid != os.getuid()
        else None
    )
    if problem:
        raise FlowbabyError(
            ErrorCode.INVALID_WORKSPACE_PATH,
            f"Refusing the workspace's data folder {paths.data}: it {problem}",
        )
    found = unsafe_entry(paths.data)
    if found is not None:
        entry, what = found
        raise FlowbabyError(
            ErrorCode.INVALID_WORKSPACE_PATH,
            f"Refusing the workspace's data folder {paths.data}: {entry} is {what}; flowbaby never "
            "writes through links (a .flowbaby that came with a repository is not yours: remove it)",
        )


def unsafe_entry(folder: Path) -> tuple[str, str] | None:
    """The first entry under `folder` that is a symlink, or neither a folder, a regular file nor a
    socket (a FIFO or a device), with what it is; None when there is none. Every file flowbaby,
    cognee, LanceDB and SQLite write under .flowbaby is opened by path, so one link committed with a
    repository (`logs/flowbaby.log` -> ~/.bashrc) would send writes outside it: checking the tree
    once at open covers them all. One scandir per folder; d_type answers without a stat."""
    stack = [os.fspath(folder)]
    while stack:
        path = stack.pop()
        try:
            entries = os.scandir(path)
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed by the running owner meanwhile
        except OSError as exc:
            return path, f"a folder that cannot be listed ({exc.strerror})"
        with entries:
            for entry in entries:
                try:
                    if entry.is_symlink():
                        return entry.path, "a symlink"
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif not entry.is_file(follow_symlinks=False) and not stat.S_ISSOCK(
                        entry.stat(follow_symlinks=False).st_mode
                    ):
                        return entry.path, "not a regular file, a folder or a socket"
                except FileNotFoundError:
                    continue
    return None


def link_workspace(folder: str | os.PathLike[str], target: str | os.PathLike[str] | None) -> dict[str, str | None]:
    """`flowbaby link`: make `folder` (a clone) use `target`'s memory, or undo that with target None."""
    here = Path(folder).expanduser().resolve()
    if not here.is_dir():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"Not a folder: {here}")
    path = here / DATA_DIR / LINK_FILE
    if target is None:
        for stale in (path, seal_path(path)):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        return {"workspace": str(here), "linkedTo": None}
    there = Path(target).expanduser()
    if not there.is_dir():
        raise FlowbabyError(
            ErrorCode.INVALID_WORKSPACE_PATH, f"Workspace path does not exist or is not a directory: {there}"
        )
    final = shared_root(there.resolve())  # link to where the target's memory really is: no chains
    if final == here:
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"{here} cannot be linked to itself")
    path.parent.mkdir(mode=PRIVATE_DIR_MODE, exist_ok=True)
    write_sealed_file(path, LINK_PURPOSE, here, json.dumps({"workspace": str(final)}))
    return {"workspace": str(here), "linkedTo": str(final)}


def keep_out_of_git(paths: WorkspacePaths) -> None:
    """`.flowbaby/.gitignore` ignoring everything in the folder, so `git add -A` in the project never
    takes the token or the memories. The file is flowbaby's: any other content (a repository's, whose
    `!` lines re-include the store, or a link) is replaced, atomically, at every open. The deepest
    `.gitignore` wins in git, and `*` here also keeps git out of every subfolder's own `.gitignore`."""
    try:
        fd = os.open(paths.git_ignore, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if (
                stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
                and handle.read(len(GIT_IGNORE) + 1) == GIT_IGNORE.encode()
            ):
                return
    except OSError:
        pass  # none yet, a link (ELOOP) or no regular file: replaced below
    write_atomic(paths.git_ignore, GIT_IGNORE)


def open_no_follow(path: str, flags: int) -> int:
    """An `opener` for open() that never follows a link at the last step (ELOOP instead): the tree
    is checked at open (check_data_folder), this keeps a link made later (a `git pull` while the
    owner runs) from redirecting the logs."""
    return os.open(path, flags | os.O_NOFOLLOW, PRIVATE_FILE_MODE)


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
        try:  # never through a link: the pid is written over the file's contents
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        except OSError as exc:
            reason = "is a symlink" if exc.errno == errno.ELOOP else f"cannot be opened: {exc.strerror}"
            raise FlowbabyError(
                ErrorCode.INVALID_WORKSPACE_PATH, f"Refusing the lock file {self._path}: it {reason}"
            ) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            os.close(fd)
            raise FlowbabyError(
                ErrorCode.INVALID_WORKSPACE_PATH,
                f"Refusing the lock file {self._path}: it is not a regular file of this user",
            )
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
