"""Retrieval: the requests of retrieveForAgent, retrieveMemory, chunk search and graph snapshots, and
the entries, freshness and replies they answer with."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from graph.core.contract.base import (
    MAX_QUERY_CHARS,
    ContractFailure,
    FlowbabyError,
    MemoryStatus,
    Succeeded,
    _absent,
    _Strict,
)
from graph.core.contract.scope import PROJECT, Scope
from graph.core.contract.validation import validate_request

DEFAULT_HALF_LIFE_DAYS = 90.0


class RetrievalErrorCode(str, Enum):
    """Retrieval reply codes (INGEST_CONTRACT.md 5.2)."""

    INVALID_REQUEST = "INVALID_REQUEST"
    RATE_LIMIT_EXCEEDED = "RATE_LIMIT_EXCEEDED"
    QUEUE_FULL = "QUEUE_FULL"
    BRIDGE_TIMEOUT = "BRIDGE_TIMEOUT"
    NOT_INITIALIZED = "NOT_INITIALIZED"
    FLOWBABY_ERROR = "FLOWBABY_ERROR"
    """An unexpected exception, framed by the bridge in the retrieval shape."""
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"
    """Team backend: the database does not answer (as ErrorCode.DATABASE_UNAVAILABLE)."""
    DATABASE_BUSY = "DATABASE_BUSY"
    """Team backend: no pooled connection freed up in time (as ErrorCode.DATABASE_BUSY)."""


class RetrievalError(ContractFailure):
    """Retrieval failures use their own shape: `error` carries the code, `message` the text."""

    code: RetrievalErrorCode

    def to_response(self) -> dict[str, Any]:
        return {**super().to_response(), "error": self.code.value, "message": self.message}


class FlowbabyContextRequest(_Strict):
    query: str = Field(max_length=MAX_QUERY_CHARS)
    maxResults: int = Field(default=3, ge=1, le=50)
    maxTokens: int = Field(default=2000, ge=1, le=200_000)
    includeSuperseded: bool = False
    halfLifeDays: float = Field(default=DEFAULT_HALF_LIFE_DAYS, ge=1, le=36_500)
    contextHints: list[str] = Field(default_factory=list, max_length=20)
    abstain: bool = True
    """Return nothing (abstained, with the reason) when no memory shows evidence of being about the query."""
    includeSessions: bool = False
    """Also search the agents' imported sessions: their turns come back as entries (source "session")
    ranked in one list with the memories. Off by default: transcripts are raw and unreviewed, and
    curated memories are what an agent should read first."""
    scope: Literal["project", "user", "all"] | None = None
    """One store, or both (`all`, the default: docs/contract/21-user-scope.md)."""

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return value

    @field_validator("halfLifeDays", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        # strict mode refuses an int for a float; an agent writing 30 means 30.0
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("contextHints")
    @classmethod
    def _hints(cls, value: list[str]) -> list[str]:
        return [hint for hint in value if hint.strip()]


class RetrieveMemoryRequest(FlowbabyContextRequest):
    """The LM-tool surface: at most 10 results."""

    maxResults: int = Field(default=3, ge=1, le=10)


class ChunkSearchRequest(_Strict):
    """Raw chunk search (HTTP `GET /api/agent/search`)."""

    q: str = Field(max_length=MAX_QUERY_CHARS)
    limit: int = Field(default=20, ge=1, le=100)

    @field_validator("q")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return value


class ChunkHit(BaseModel):
    """One chunk near the query: cosine distance, lower is nearer."""

    embedding_id: str
    distance: float
    chunk_text: str
    topicId: str
    chunk_index: int
    field: str


class ChunkSearchResponse(Succeeded):
    results: list[ChunkHit]
    count: int


class GraphSnapshotRequest(_Strict):
    """`graphSnapshot` / `GET /api/graph`: the whole graph, or one topic's neighbourhood."""

    topicId: str | None = Field(default=None, min_length=1, max_length=256)
    hops: int = Field(default=2, ge=1, le=3)


class SessionTurnRef(BaseModel):
    """Where a session entry comes from: its turn's best chunk (sessionsContext shows its neighbours)."""

    source: str
    sessionId: str
    turnId: str
    embeddingId: str
    chunkIndex: int
    title: str
    distance: float | None
    """The chunk's vector distance (1 - cosine), null when it has no vector yet."""


ReferenceState = Literal["current", "changed", "moved", "missing", "unknown"]
FreshnessState = Literal["current", "changed", "missing", "unknown", "none"]


class CommitInfo(BaseModel):
    """The newest commit that touched a reference since the memory was written."""

    id: str
    date: str
    subject: str


class ReferenceFreshness(BaseModel):
    """One code reference of a memory (a file, a folder or a symbol) checked against the code now."""

    reference: str
    kind: Literal["file", "folder", "symbol"]
    path: str | None
    """Relative to the workspace; for a bare symbol, the file it was found in (null if none)."""
    symbol: str | None = None
    state: ReferenceState
    commits: int | None = None
    """Commits touching it since the memory's updatedAt (null on the mtime basis)."""
    newest: CommitInfo | None = None
    movedTo: str | None = None
    reason: str | None = None
    """Why a reference is missing or unknown."""


class Freshness(BaseModel):
    """Whether a memory's code references still hold (graph.code.freshness)."""

    state: FreshnessState
    basis: Literal["git", "mtime", "off"]
    references: list[ReferenceFreshness] = Field(default_factory=list)


NO_FRESHNESS = Freshness(state="none", basis="off")


class RetrievalEntry(BaseModel):
    summaryText: str
    topic: str
    context: str
    topicId: str
    planId: str | None
    sessionId: str | None
    createdAt: str
    updatedAt: str
    status: MemoryStatus
    version: int
    memoryId: str
    score: float
    decisions: list[str]
    lanes: list[str]
    tokens: int
    via: str | None = None
    """For a memory placed by the graph: the memory it was reached from and the names they share."""
    possiblySupersededBy: str | None = None
    """The topicId of a newer memory that seems to replace this one (implicit supersession)."""
    source: Literal["memory", "session"] = "memory"
    """"session": a turn of an imported agent session (includeSessions), described by `sessionTurn`."""
    sessionTurn: SessionTurnRef | None = None
    weak: bool = False
    """Listed among weakCandidates: below the evidence the answer needs (the query abstained)."""
    freshness: Freshness = NO_FRESHNESS
    """Whether the code the memory names is as it was when the memory was written."""
    branch: str | None = None
    """The git branch the memory was made on (null: detached, outside a repository, or made before it was recorded)."""
    commit: str | None = None
    """The commit checked out when it was made."""
    unmerged: bool = False
    """Made on a commit the reader's checkout does not contain: a branch not merged into the current one."""
    scope: Scope = PROJECT
    """The store that holds it: the project's or the user's (docs/contract/21-user-scope.md)."""
    overriddenBy: str | None = None
    """A user memory only: the topicId of this project's memory on the same subject, which wins here."""


class _Answer(Succeeded):
    entries: list[RetrievalEntry]
    totalResults: int
    tokensUsed: int
    abstained: bool = False
    abstainReason: str | None = None
    weakCandidates: list[RetrievalEntry] = Field(default_factory=list)
    """When abstained: up to two best entries anyway, each flagged `weak`, for the agent to judge."""


class _Notes(BaseModel):
    """What a retrieval says about what it could not search, after its answer; absent when nothing."""

    indexing: dict[str, Any] | None = Field(default=None, exclude_if=_absent)
    """Stored memories not searchable yet (section 4)."""
    sessionsNotSearched: str | None = Field(default=None, exclude_if=_absent)
    userNotSearched: str | None = Field(default=None, exclude_if=_absent)
    """The user store was stuck or skipped (docs/contract/21-user-scope.md): the answer is the project's."""


class FlowbabyContextResponse(_Notes, _Answer):
    """retrieveForAgent's reply (a model's later base comes first: the answer, then its notes)."""


class _MarkdownAnswer(_Answer):
    markdown: str


class RetrieveMemoryResponse(_Notes, _MarkdownAnswer):
    """retrieveMemory's reply: retrieveForAgent's and its markdown, before the notes."""


RetrievalReply = FlowbabyContextResponse | RetrieveMemoryResponse
"""A retrieval's reply: with `markdown` (retrieveMemory) or without."""


def validate_retrieval(model: type[_Strict], params: Any) -> Any:
    """Like validate_request, but failures are INVALID_REQUEST in the retrieval shape."""
    try:
        return validate_request(model, params)
    except FlowbabyError as error:
        raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, error.message, **error.details) from None
