"""The per-workspace audit trail: one JSON line per agent command in agent_audit.log.

It records who asked for what and how it ended, never the summary text itself:
the topic appears only as the first 8 hex digits of its sha256, and a forget takes even that and the
agent name out of the lines that staged the forgotten memory (`scrub`). On a team server the user of
the request's token is recorded too (`AUDIT_USER`, set by the HTTP front per request), and with
FLOWBABY_DATABASE_URL the entries go to the namespace's `audit_log` table instead of the file
(graph.backends.team.audit). This module holds what both share: the entry's shape and the sink's
Protocol; the file itself is graph.backends.embedded.audit_log.
"""

from __future__ import annotations

import hashlib
import logging
from contextvars import ContextVar
from typing import Any, NotRequired, Protocol, TypedDict, Unpack

from graph.core.contract import utc_now

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
    reconcile: NotRequired[dict[str, Any] | None]


def audit_entry(command: str, **fields: Unpack[AuditFields]) -> dict[str, Any]:
    """One entry; `user` only when a per-user token made the call (the file stays as it was);
    `redacted` only on a stored memory: how many secrets its text lost; `reconcile` only on a
    reconciled write: its decision (INGEST_CONTRACT.md section 7)."""
    agent_name = fields["agent_name"]
    entry: dict[str, Any] = {
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
    reconcile = fields.get("reconcile")
    if reconcile is not None:
        entry["reconcile"] = reconcile
    return entry


FORGOTTEN = "[forgotten]"
"""The agent name of an audit line whose memory was forgotten."""
STAGING_COMMANDS = ("ingestForAgent", "storeMemory")
ForgottenKey = tuple[str | None, str | None]
"""(topic digest, agent name) of a forgotten version, as the line that staged it holds them."""


def forgotten_key(topic: str, agent_name: str | None) -> ForgottenKey:
    """How a forgotten version's staging lines are found: its stored topic's digest and its agent name."""
    return topic_digest(topic), agent_name[:256] if agent_name else agent_name


def scrub(entry: dict[str, Any], keys: set[ForgottenKey]) -> bool:
    """Take the agent name and topic digest out of a line that staged a forgotten version (both are
    the memory's own text, or derived from it); True when the entry was changed."""
    if entry.get("command") not in STAGING_COMMANDS or entry.get("result") != "success":
        return False
    if (entry.get("topicDigest"), entry.get("agentName")) not in keys:
        return False
    entry["agentName"], entry["topicDigest"] = FORGOTTEN, None
    return True


class AuditSink(Protocol):
    def record(self, command: str, **fields: Unpack[AuditFields]) -> None: ...
    def tail(self, limit: int) -> list[dict[str, Any]]: ...
    def forget(self, keys: set[ForgottenKey]) -> None:
        """Scrub (`scrub`) every written line that staged a forgotten version, before the store forgets it."""
        ...

    def close(self) -> None: ...
