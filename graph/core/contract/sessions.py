"""Session memory (docs/contract/14-session-memory.md): the parameters every sessions operation draws from,
and the objects each answers (Vapor's shapes, so their names are snake_case)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from graph.core.contract.base import _absent, _Strict
from graph.core.contract.inspection import _Reply

SessionOp = Literal["list", "current", "status", "search", "search_all", "context", "import", "update", "repair"]


class SessionsRequest(_Strict):
    """Types only: which fields an operation needs, and their ranges, are its own (graph.sessions.agent_api)."""

    session_id: str | None = None
    cwd: str | None = None
    source: str | None = None
    q: str | None = None
    limit: int | None = None
    context_turns: int | None = None
    abstain: bool | None = None


class SessionIndexStatus(_Reply):
    """14.3: exactly Vapor's status object."""

    status: Literal["missing", "repair_needed", "indexing", "dirty", "partial", "ready"]
    can_search: bool
    needs_update: bool
    needs_repair: bool
    chunks: int
    vectors: int
    coverage: float
    model: str
    message: str


class SessionDescription(_Reply):
    """sessionsCurrent, and each session of sessionsList."""

    source: str
    session_id: str
    title: str
    directory: str
    updated_at: str
    message_count: int
    index_status: SessionIndexStatus


class SessionListResponse(_Reply):
    sessions: list[SessionDescription]
    count: int
    problems: list[str]


class _SessionRef(_Reply):
    session_id: str
    source: str


class SessionStatusResponse(SessionIndexStatus, _SessionRef):
    """sessionsStatus: the session, then its status object (a model's later base comes first in its fields)."""


class SessionSearchResponse(_Reply):
    """sessionsSearch and sessionsSearchAll (one result per turn, 14.7); `abstained` and `weak_candidates`
    only when the search abstained, `sessions_searched` only across sessions."""

    results: list[dict[str, Any]]
    count: int
    sessions_searched: int | None = Field(default=None, exclude_if=_absent)
    abstained: str | None = Field(default=None, exclude_if=_absent)
    weak_candidates: list[dict[str, Any]] | None = Field(default=None, exclude_if=_absent)


class SessionContextResponse(_Reply):
    session_id: str
    q: str
    context_turns: int
    results: list[dict[str, Any]]
    count: int


class _ActionCounts(_Reply):
    """What an action read and embedded (repair: `embedded` only; nothing when the source could not be
    read, then its problem is in index_status.message)."""

    action: Literal["import", "update", "repair"]
    messages: int | None = Field(default=None, exclude_if=_absent)
    chunks: int | None = Field(default=None, exclude_if=_absent)
    embedded: int | None = Field(default=None, exclude_if=_absent)


class SessionActionResponse(SessionDescription, _ActionCounts):
    """sessionsImport, sessionsUpdate, sessionsRepair: the counts first, then the session."""


SessionsResponse = (
    SessionListResponse
    | SessionDescription
    | SessionStatusResponse
    | SessionSearchResponse
    | SessionContextResponse
    | SessionActionResponse
)
"""What a sessions operation answers (which one, its op says: SESSION_REPLIES)."""


class WatchingSessions(_Reply):
    """watch_sessions: whether this process keeps the workspace's sessions fresh (FLOWBABY_SESSIONS_WATCH)."""

    watching: bool


SESSION_REPLIES: dict[SessionOp, type[_Reply]] = {
    "list": SessionListResponse,
    "current": SessionDescription,
    "status": SessionStatusResponse,
    "search": SessionSearchResponse,
    "search_all": SessionSearchResponse,
    "context": SessionContextResponse,
    "import": SessionActionResponse,
    "update": SessionActionResponse,
    "repair": SessionActionResponse,
}
