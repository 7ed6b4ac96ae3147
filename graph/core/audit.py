"""The per-workspace audit trail: one JSON line per agent command in agent_audit.log.

It records who asked for what and how it ended, never the summary text itself:
the topic appears only as the first 8 hex digits of its sha256.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from pathlib import Path

from graph.core.contract import utc_now
from graph.core.workspace import PRIVATE_FILE_MODE

log = logging.getLogger("flowbaby.audit")
WARN_EVERY_SEC = 60.0
"""A failing audit write (full disk) is logged at most this often."""


def topic_digest(topic: str | None) -> str | None:
    if not topic:
        return None
    return hashlib.sha256(topic.encode("utf-8", "surrogatepass")).hexdigest()[:8]


class AuditLog:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._warned_at = -WARN_EVERY_SEC
        self.dropped = 0
        """Lines that could not be written (see record)."""

    def record(
        self,
        command: str,
        *,
        agent_name: str | None,
        topic: str | None,
        result: str,
        error_code: str | None,
        duration_ms: float,
    ) -> None:
        entry = {
            "timestamp": utc_now(),
            "command": command,
            "agentName": agent_name[:256] if agent_name else agent_name,
            "topicDigest": topic_digest(topic),
            "result": result,
            "errorCode": error_code,
            "durationMs": round(duration_ms, 3),
        }
        # A rejected request may carry a lone surrogate; it is written as its JSON escape.
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
        with self._lock:
            try:
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE_MODE)
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
