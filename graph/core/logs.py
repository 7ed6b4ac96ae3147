"""Logging for the owning process: a rotating file under .flowbaby/logs/ and stderr.

Never stdout: the bridge's stdout carries protocol messages only.
"""

from __future__ import annotations

import logging
import sys
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path

from graph.core.workspace import create_private, open_no_follow

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _NoFollowRotatingHandler(RotatingFileHandler):
    """Opens (and reopens after each rotation) without following a link."""

    def _open(self) -> TextIOWrapper:
        return open(self.baseFilename, "a", encoding=self.encoding, errors=self.errors, opener=open_no_follow)


def configure_logging(log_dir: Path, level: str = "INFO", *, to_stderr: bool = True) -> None:
    root = logging.getLogger("flowbaby")
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    root.propagate = False
    create_private(log_dir / "flowbaby.log")
    file_handler = _NoFollowRotatingHandler(
        log_dir / "flowbaby.log", maxBytes=5 * 1024 * 1024, backupCount=3, encoding="utf-8"
    )
    file_handler.setFormatter(logging.Formatter(_FORMAT))
    root.addHandler(file_handler)
    if to_stderr:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(logging.Formatter(_FORMAT))
        stream.setLevel("WARNING")
        root.addHandler(stream)
