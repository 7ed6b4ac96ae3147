"""The per-workspace audit trail: one JSON line per agent command in agent_audit.log.

It records who asked for what and how it ended, never the summary text itself:
the topic appears only as the first 8 hex digits of its sha256.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

from graph.core.contract import utc_now


def topic_digest(topic: str | None) -> str | None:
    if not topic:
        return None
    return hashlib.sha256(topic.encode("utf-8", "surrogatepass")).hexdigest()[:8]


class AuditLog:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()

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
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        # A rejected request may carry a lone surrogate; it is written as its JSON escape.
        with self._lock, open(self._path, "a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(line)
