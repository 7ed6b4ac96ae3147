"""The embedded backend's audit trail: `.flowbaby/agent_audit.log`, one JSON line per agent
command (graph.core.audit.audit_entry), appended; rewritten only by a forget, which scrubs the lines
that staged the forgotten memory. The team backend's counterpart is graph.backends.team.audit."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Unpack

from graph.core.audit import WARN_EVERY_SEC, AuditFields, ForgottenKey, audit_entry, scrub
from graph.core.files import write_atomic
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

    def forget(self, keys: set[ForgottenKey]) -> None:
        """Rewrite the file with the forgotten memory's lines scrubbed, whole through
        graph.core.files (a new 0600 file renamed over it), under the lock every append takes (the
        owner is the file's only writer). Left as it is when no line changes."""
        if not keys:
            return
        with self._lock:
            try:
                source = os.open(self._path, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                return
            except OSError as exc:  # a link (never written through) or unreadable: the forget goes on
                log.warning("audit log not scrubbed (%s)", exc)
                return
            lines, changed = _scrubbed(source, keys)
            try:
                if changed:
                    write_atomic(self._path, b"".join(lines), durable=True)
            except OSError as exc:  # a full disk: the file stays as it was, the forget goes on
                log.warning("audit log not scrubbed (%s)", exc)

    def close(self) -> None:
        """Each line is written and closed at once: nothing to flush."""


def _scrubbed(source: int, keys: set[ForgottenKey]) -> tuple[list[bytes], int]:
    """The open file's lines with its forgotten lines scrubbed (graph.core.audit.scrub), and how many were."""
    changed = 0
    out: list[bytes] = []
    with os.fdopen(source, "rb") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if isinstance(entry, dict) and scrub(entry, keys):
                line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
                changed += 1
            out.append(line)
    return out, changed
