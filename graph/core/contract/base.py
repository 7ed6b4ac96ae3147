"""What every surface of the contract shares: the limits, error codes and errors, timestamps and the
strict request model."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

MAX_PAYLOAD_CHARS = 100_000
"""Upper bound on the summed length of every text field of one summary."""
MAX_QUERY_CHARS = 4_000
MAX_LIST_ITEMS = 500
"""Items per list field of a summary (decisions, rationale, ...); more is INVALID_PAYLOAD."""

TEXT_LIST_FIELDS = ("decisions", "rationale", "openQuestions", "nextSteps", "references")


class ErrorCode(str, Enum):
    """Ingest-side reply codes (INGEST_CONTRACT.md 5.1; a test holds the two in step)."""

    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    MISSING_API_KEY = "MISSING_API_KEY"
    INVALID_WORKSPACE_PATH = "INVALID_WORKSPACE_PATH"
    WORKSPACE_BUSY = "WORKSPACE_BUSY"
    BRIDGE_TIMEOUT = "BRIDGE_TIMEOUT"
    FLOWBABY_ERROR = "FLOWBABY_ERROR"
    BACKLOG = "429_FLOWBABY_BACKLOG"
    NOT_FOUND = "NOT_FOUND"
    UNAUTHORIZED = "UNAUTHORIZED"
    """HTTP front only: a missing or wrong bearer token."""
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    """HTTP front only: a route asked with a method it does not take (405, with Allow)."""
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
    """Team backend: the database does not answer; nothing was changed, retry after retryAfterSec."""
    DATABASE_BUSY = "DATABASE_BUSY"
    """Team backend: no pooled connection freed up in time; nothing was changed, retry after retryAfterSec."""

    INVALID_NAMESPACE = "INVALID_NAMESPACE"
    """HTTP front only: a namespace name that breaks the rule, or a path and header that disagree."""
    NAMESPACE_FORBIDDEN = "NAMESPACE_FORBIDDEN"
    """HTTP front only: a valid token used on a namespace outside its scope."""
    NAMESPACE_UNAVAILABLE = "NAMESPACE_UNAVAILABLE"
    """HTTP front only: the team server could not open the namespace (e.g. served elsewhere)."""
    PERSON_WRITTEN = "PERSON_WRITTEN"
    """A write by an agent, a capture or an import would change a memory the person wrote (or a user-scope
    memory the person holds): nothing was stored; the person changes it, or it is stored under a new topicId."""


DATABASE_FAULTS = (ErrorCode.DATABASE_UNAVAILABLE, ErrorCode.DATABASE_BUSY)
"""The team database's transient faults: the request changed nothing and may be retried after retryAfterSec."""


class BackgroundErrorCode(str, Enum):
    """Background operation outcomes (INGEST_CONTRACT.md 5.3): recorded in the ledger and
    reported by backgroundStatus and notifications, never as replies."""

    COGNIFY_FAILED = "COGNIFY_FAILED"
    WORKER_CRASHED = "WORKER_CRASHED"
    LLM_ERROR = "LLM_ERROR"
    LLM_TIMEOUT = "LLM_TIMEOUT"
    LLM_RATE_LIMITED = "LLM_RATE_LIMITED"
    BRIDGE_TIMEOUT = "BRIDGE_TIMEOUT"
    FLOWBABY_ERROR = "FLOWBABY_ERROR"


class ContractFailure(Exception):
    """A failure with a contract error code; fronts render it with to_response()."""

    def __init__(self, code: Enum, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_response(self) -> dict[str, Any]:
        return {"success": False, "error": self.message, "errorCode": self.code.value, **self.details}


class FlowbabyError(ContractFailure):
    """Ingest-side failures: `error` carries the message."""

    code: ErrorCode


class MemoryStatus(str, Enum):
    ACTIVE = "Active"
    SUPERSEDED = "Superseded"
    DECISION_RECORD = "DecisionRecord"
    PROPOSED = "Proposed"
    """An agent's user-scope write, waiting for the person to accept or dismiss it: no retrieval, recall or
    briefing shows it as theirs (docs/contract/21-user-scope.md). Set by the engine, never by a write."""


Writer = Literal["person", "agent", "capture", "import"]
"""Who wrote a memory, as the front that took the write knows it (never the request's word): the person
(the CLI, the browser page), an agent (MCP, the HTTP agent routes, the bridge), a session capture (hooks),
an import (`flowbaby import`, importMemories, ADRs and design documents)."""
PERSON: Writer = "person"
AGENT: Writer = "agent"
CAPTURE: Writer = "capture"
IMPORT: Writer = "import"
AGENT_STATUSES = (MemoryStatus.ACTIVE, MemoryStatus.DECISION_RECORD)
"""The statuses a write that is not the person's may give (a Superseded one would hide a topic unforgotten)."""


def parse_timestamp(value: str) -> datetime:
    """ISO-8601 to an aware UTC datetime; a naive stamp is taken as UTC."""
    parsed = datetime.fromisoformat(value.strip())
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+01:00 lies before year 1 in UTC
        raise ValueError(f"{value!r} is out of range in UTC") from None


def _is_timestamp(value: str) -> bool:
    try:
        parse_timestamp(value)
    except ValueError:
        return False
    return True


def format_timestamp(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _stamp(value: str) -> str:
    """A field's timestamp in the stored form; the error every request with a bad one gets."""
    try:
        return format_timestamp(parse_timestamp(value))
    except ValueError:
        raise ValueError("must be an ISO-8601 timestamp") from None


def utc_now() -> str:
    return format_timestamp(datetime.now(UTC))


def _absent(value: Any) -> bool:
    return value is None


class Succeeded(BaseModel):
    """`success: true`, the first field of every success reply: declared once for all of them."""

    success: Literal[True] = True


class _Strict(BaseModel):
    """Unknown fields are ignored (documented); strings are never coerced from numbers."""

    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)


def _memory_status(value: Any, *, proposed: bool = False) -> MemoryStatus:
    """A request's status; `Proposed` only where a stored version is carried as it was (an export line)."""
    allowed = [s.value for s in MemoryStatus if proposed or s is not MemoryStatus.PROPOSED]
    if value not in allowed:
        raise ValueError(f"must be one of {', '.join(allowed)}")
    return MemoryStatus(value)
