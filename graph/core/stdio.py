"""Keeping a process's stdout for its protocol: the bridge's JSON-RPC lines and the
worker's reply lines. Libraries (cognee above all) print to stdout; after the
takeover their prints land on stderr and can never corrupt a protocol line."""

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
