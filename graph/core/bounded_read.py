"""Reading a file that someone else may have put where flowbaby looks: a repository's committed file that a
memory references, a client's session file. Only a regular file whose real path (every link resolved) lies in
the folder it was looked up in is read, never more than a stated number of bytes, and never by blocking on a
FIFO or a device: a committed link to `~/.ssh/id_rsa` or `/dev/zero` reads as nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def contained(path: Path, base: Path) -> bool:
    """Whether `path`, links resolved, is `base` (links resolved) or lies inside it."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(base))
    except (OSError, ValueError):
        return False


def open_regular(path: Path, base: Path) -> int | None:
    """A read-only descriptor on `path` when it is a regular file inside `base` (see `contained`), else None;
    the caller closes it. Opened non-blocking, so a FIFO planted at the path cannot hang the reader."""
    if not contained(path, base):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return fd


def read_prefix(path: Path, base: Path, limit: int) -> bytes | None:
    """At most the first `limit` bytes of the regular file `path` inside `base`; None when it is not one."""
    fd = open_regular(path, base)
    if fd is None:
        return None
    try:
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
