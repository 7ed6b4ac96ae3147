"""Keeping a process's stdout for its protocol: the bridge's JSON-RPC lines and the
children's replies (the cognee worker, the LanceDB child). Libraries (cognee above all) print to
stdout; after the takeover their prints land on stderr and can never corrupt a protocol line."""

from __future__ import annotations

import os
import sys
from typing import BinaryIO


def take_stdout() -> BinaryIO:
    """A private, unbuffered duplicate of fd 1 for the protocol; fd 1 and sys.stdout
    then point at stderr."""
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def die_with_parent() -> None:
    """Linux PR_SET_PDEATHSIG, for a child of the owning process: if the owner is killed, the
    child (and its locks) go too."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        return
    if os.getppid() == 1:  # the owner died before the signal was armed
        os._exit(1)
