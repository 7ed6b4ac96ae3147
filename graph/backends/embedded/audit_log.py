"""The embedded backend's audit trail: `.flowbaby/agent_audit.log`, one JSON line per agent
command (graph.core.audit.audit_entry), appended and never rewritten; the team backend's
counterpart is graph.backends.team.audit."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Unpack

from graph.core.audit import WARN_EVERY_SEC, AuditFields, audit_entry
from graph.core.workspace import PRIVATE_FILE_MODE

log = logging.getLogger("flowbaby.audit")

TAIL_BLOCK = 64 * 1024


def read_tail(path: Path, limit: int) -> list[dict[str, Any]]:
    """The last `limit` entries of an audit file, newest first, read backwards from its end (the
    file only grows); a line that is not an entry (cut by a full disk) is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return []
    with os.fdopen(fd, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        data = b""
        while end > 0 and data.count(b"\n") <= limit:
            start = max(0, end - TAIL_BLOCK)
            handle.seek(start)
            data = handle.read(end - start) + data
            end = start
    entries: list[dict[str, Any]] = []
    for line in reversed(data.splitlines()[-(limit + 1) :]):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "command" in entry:
            entries.append(entry)
    return entries[:limit]


class AuditLog:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._warned_at = -WARN_EVERY_SEC
        self.dropped = 0
        """Lines that could not be written (see record)."""

    def record(self, command: str, **fields: Unpack[AuditFields]) -> None:
        entry = audit_entry(command, **fields)
        # A rejected request may carry a lone surrogate; it is written as its JSON escape.
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
        with self._lock:
            try:
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
            except OSError as exc:
                # Best-effort: the command already happened (a memory is committed before this
                # line is written), so a full disk must not turn its success into a failure
                # that a client would retry into a duplicate version.
                self.dropped += 1
                now = time.monotonic()
                if now - self._warned_at >= WARN_EVERY_SEC:
                    self._warned_at = now
                    log.warning("audit log not written (%s); %d lines dropped so far", exc, self.dropped)

    def tail(self, limit: int) -> list[dict[str, Any]]:
        return read_tail(self._path, limit)

    def close(self) -> None:
        """Each line is written and closed at once: nothing to flush."""
