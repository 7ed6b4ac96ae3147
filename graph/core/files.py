"""Every file flowbaby writes whole goes through here: made under a fresh name beside its target, then
renamed over it.

A fixed temporary name (`.F.partial`, `F.tmp`) opened with O_CREAT|O_TRUNC writes through whatever is
already at that name, and a cloned repository can commit a symlink there (to `~/.bashrc`).
`tempfile.mkstemp` creates a new random name with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600, so nothing
that was there before is ever opened; `os.replace` then puts the file in the target's place (a link
at the target itself is replaced, never written through). A reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PRIVATE_MODE = 0o600
"""The default: anything flowbaby writes may hold memories, secrets or paths."""


def _user_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_writer(
    path: str | os.PathLike[str], *, binary: bool = False, mode: int | None = PRIVATE_MODE, durable: bool = False
) -> Iterator[IO[Any]]:
    """A handle on a new temporary file beside `path`; on a clean exit it replaces `path`, on an
    error it is removed and `path` is left as it was. `mode` None: the mode the user's umask gives a
    new file (a config file of theirs); `durable`: fsync the file and its folder (survives power loss)."""
    target = Path(path)
    fd, staging = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        chosen = _user_mode() if mode is None else mode
        if chosen != PRIVATE_MODE:
            os.fchmod(fd, chosen)
        handle = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")
        with handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(staging, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise
    if durable:
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = PRIVATE_MODE, durable: bool = False
) -> None:
    """`data` as the whole new content of `path` (see atomic_writer)."""
    with atomic_writer(path, binary=isinstance(data, bytes), mode=mode, durable=durable) as handle:
        handle.write(data)


def remove_leftovers(path: str | os.PathLike[str]) -> None:
    """The temporary files a write of `path` cut short (a kill, a full disk) left beside it. Only
    where the caller holds the lock that orders the writes of `path` (another's may be in flight)."""
    target = Path(path)
    for stale in target.parent.glob(f".{target.name}.*.tmp"):
        with contextlib.suppress(OSError):
            stale.unlink()
