"""The per-workspace audit trail: one JSON line per agent command in agent_audit.log.

It records who asked for what and how it ended, never the summary text itself:
the topic appears only as the first 8 hex digits of its sha256. On a team server the user of
the request's token is recorded too (`AUDIT_USER`, set by the HTTP front per request), and with
FLOWBABY_DATABASE_URL the entries go to the namespace's `audit_log` table instead of the file
(graph.backends.team.audit).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NotRequired, Protocol, TypedDict, Unpack

from graph.core.contract import utc_now
from graph.core.workspace import PRIVATE_FILE_MODE

log = logging.getLogger("flowbaby.audit")
WARN_EVERY_SEC = 60.0
"""A failing audit write (full disk) is logged at most this often."""
AUDIT_USER: ContextVar[str | None] = ContextVar("flowbaby_audit_user", default=None)
"""The user of the current request's per-user token (None: the workspace's own token, stdio)."""


def topic_digest(topic: str | None) -> str | None:
    if not topic:
        return None
    return hashlib.sha256(topic.encode("utf-8", "surrogatepass")).hexdigest()[:8]


class AuditFields(TypedDict):
    """What an entry says besides its command; every sink's `record` takes these."""

    agent_name: str | None
    topic: str | None
    result: str
    error_code: str | None
    duration_ms: float
    redacted: NotRequired[int | None]


def audit_entry(command: str, **fields: Unpack[AuditFields]) -> dict[str, Any]:
    """One entry; `user` only when a per-user token made the call (the file stays as it was);
    `redacted` only on a stored memory: how many secrets its text lost."""
    agent_name = fields["agent_name"]
    entry = {
        "timestamp": utc_now(),
        "command": command,
        "agentName": agent_name[:256] if agent_name else agent_name,
        "topicDigest": topic_digest(fields["topic"]),
        "result": fields["result"],
        "errorCode": fields["error_code"],
        "durationMs": round(fields["duration_ms"], 3),
    }
    user = AUDIT_USER.get()
    if user is not None:
        entry["user"] = user
    redacted = fields.get("redacted")
    if redacted is not None:
        entry["redacted"] = redacted
    return entry


class AuditSink(Protocol):
    def record(self, command: str, **fields: Unpack[AuditFields]) -> None: ...
    def tail(self, limit: int) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


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
