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
    child (and its locks) go too. Its owner alone ends it otherwise (closing its stdin, or SIGKILL):
    a SIGTERM, SIGINT or SIGHUP sent to a whole process tree, as a client ends its session, must
    leave the child's work to the owner's shutdown, which parks it without counting an attempt
    (it read as a crash, "exited at start-up (code -15)"). The owner also starts it in a session
    of its own, out of reach of signals to the owner's process group."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        return
    if os.getppid() == 1:  # the owner died before the signal was armed
        os._exit(1)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
