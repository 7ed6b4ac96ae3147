"""The ingest contract: request and response models shared by every front.

INGEST_CONTRACT.md is the prose statement of these models; keep the two in step.
Validation errors are turned into one message that names the faulty field, so an
agent can fix its payload without reading a stack trace.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

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


class _Strict(BaseModel):
    """Unknown fields are ignored (documented); strings are never coerced from numbers."""

    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)


def _memory_status(value: Any) -> MemoryStatus:
    allowed = [s.value for s in MemoryStatus]
    if value not in allowed:
        raise ValueError(f"must be one of {', '.join(allowed)}")
    return MemoryStatus(value)


class IngestMetadata(_Strict):
    """A summary's metadata. What it leaves out is filled in here, the one rule of every front
    (bridge, HTTP, MCP, LM tools): see `_defaults`."""

    topicId: str = Field(min_length=1, max_length=256)
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    updatedAt: str = Field(json_schema_extra={"format": "date-time"})
    sessionId: str | None = Field(default=None, max_length=256)
    planId: str | None = Field(default=None, max_length=256)
    status: MemoryStatus = MemoryStatus.ACTIVE

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """topicId absent, null or "": 16 random hex digits (random, not derived from the topic and
        the time: two calls in one millisecond are two memories, not two versions of one); createdAt
        absent or null: now; updatedAt absent or null: createdAt if given, else now; sessionId,
        planId, status null: as absent (status Active)."""
        if not isinstance(data, dict):
            return data
        now = utc_now()
        filled = {key: value for key, value in data.items() if value is not None}
        if filled.get("topicId") == "":
            del filled["topicId"]
        filled.setdefault("topicId", uuid.uuid4().hex[:16])
        filled.setdefault("createdAt", now)
        if "updatedAt" not in filled:  # a bad createdAt is reported once, on createdAt
            created = filled["createdAt"]
            filled["updatedAt"] = created if isinstance(created, str) and _is_timestamp(created) else now
        return filled

    @field_validator("topicId")
    @classmethod
    def _topic_id_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return value.strip()

    @field_validator("createdAt", "updatedAt")
    @classmethod
    def _iso(cls, value: str) -> str:
        return _stamp(value)

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        return _memory_status(value)


class SummaryFields(_Strict):
    """The text of a summary, shared by ingestForAgent and storeMemory."""

    topic: str
    context: str
    decisions: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    rationale: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    openQuestions: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    nextSteps: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    references: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    timeScope: str | None = None
    agentName: str | None = Field(default=None, max_length=256)

    @field_validator("topic", "context")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return value

    def char_count(self) -> int:
        total = len(self.topic) + len(self.context) + len(self.timeScope or "")
        return total + sum(len(item) for name in TEXT_LIST_FIELDS for item in getattr(self, name))


def _filled_metadata() -> IngestMetadata:
    return IngestMetadata.model_validate({})


class FlowbabyIngestRequest(SummaryFields):
    """ingestForAgent and storeMemory, over every front: metadata optional, filled in alike."""

    metadata: IngestMetadata = Field(default_factory=_filled_metadata)

    @model_validator(mode="before")
    @classmethod
    def _no_metadata(cls, data: Any) -> Any:
        if isinstance(data, dict) and "metadata" in data and data["metadata"] is None:
            return {key: value for key, value in data.items() if key != "metadata"}
        return data


class BackgroundStatusRequest(_Strict):
    operationId: str | None = Field(default=None, min_length=1, max_length=256)


class ResponseMetadata(BaseModel):
    topic_id: str
    session_id: str | None
    plan_id: str | None
    status: MemoryStatus
    created_at: str
    updated_at: str


class FlowbabyIngestResponse(BaseModel):
    success: Literal[True] = True
    staged: bool
    operationId: str
    ingested_chars: int
    timestamp: str
    metadata: ResponseMetadata
    staging_duration_sec: float
    ingestion_metrics: dict[str, Any]
    redacted: int = 0
    """Secrets replaced by [redacted] before the memory was stored (section 8.1)."""


class StoreMemoryResponse(BaseModel):
    success: Literal[True] = True
    summary_id: str
    operationId: str
    ingested_chars: int
    duration_ms: float
    redacted: int = 0
    """Secrets replaced by [redacted] before the memory was stored (section 8.1)."""


OperationState = Literal["pending", "running", "completed", "failed", "terminated", "unknown"]


class OperationStatus(BaseModel):
    operationId: str
    status: OperationState
    memoryIds: list[str]
    topicIds: list[str]
    createdAt: str
    startedAt: str | None = None
    finishedAt: str | None = None
    errorCode: str | None = None
    error: str | None = None
    attempts: int = 0
    metrics: dict[str, Any] = Field(default_factory=dict)


def _describe(error: ErrorDetails) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    field = ".".join(loc) if loc else "payload"
    kind = error.get("type", "")
    if kind == "missing":
        expected = "an object" if field == "metadata" else "a non-empty string"
        return f'Field "{field}" is required and must be {expected}'
    if kind in {"string_type", "string_too_short"} or (kind == "value_error" and "non-empty" in error.get("msg", "")):
        return f'Field "{field}" must be a non-empty string'
    if kind in {"int_type", "int_parsing", "float_type", "bool_type"}:
        expected = {"int": "an integer", "float": "a number", "bool": "a boolean"}[kind.split("_")[0]]
        return f'Field "{field}" must be {expected}'
    if kind in {"greater_than_equal", "less_than_equal"}:
        return f'Field "{field}" {error.get("msg", "is out of range")[0].lower()}{error.get("msg", "")[1:]}'
    if kind == "too_long":
        limit = error.get("ctx", {}).get("max_length")
        return f'Field "{field}" has too many items' + (f" (at most {limit})" if limit else "")
    if kind == "list_type":
        return f'Field "{field}" must be an array of strings'
    if kind in {"model_type", "model_attributes_type", "dict_type"}:
        return f'Field "{field}" must be an object'
    if kind == "string_too_long":
        limit = error.get("ctx", {}).get("max_length")
        return f'Field "{field}" must be at most {limit} characters'
    message = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
    return f'Field "{field}" {message}'


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""What no store can hold: a lone surrogate from JSON is not UTF-8, and Postgres text cannot hold U+0000
(a memory written with one on the embedded backend could never be migrated to a team namespace)."""


def storable(text: str) -> str:
    """Text from outside that flowbaby keeps anyway (a session's turns and title), with U+FFFD for
    every character no store can hold; a request holding one is refused instead (validate_request)."""
    return _UNSTORABLE.sub("\ufffd", text)


def _unstorable_field(value: Any, path: str = "") -> tuple[str, str] | None:
    """The path of the first string holding a character no store can hold, and the rule it breaks."""
    if isinstance(value, str):
        found = _UNSTORABLE.search(value)
        if found:
            if found.group() == "\x00":
                return path or "payload", "must not contain NUL (U+0000) characters"
            return path or "payload", "must be valid UTF-8 text (no lone surrogates)"
    elif isinstance(value, dict):
        for key, item in value.items():
            found_in = _unstorable_field(item, f"{path}.{key}" if path else str(key))
            if found_in:
                return found_in
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found_in = _unstorable_field(item, f"{path}.{index}")
            if found_in:
                return found_in
    return None


def validate_request(model: type[_Strict], params: Any) -> Any:
    """Validate params against a contract model or raise INVALID_PAYLOAD naming the field."""
    if not isinstance(params, dict):
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, 'Field "params" must be an object')
    try:
        request = model.model_validate(params)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD,
            _describe(errors[0]),
            fields=sorted({".".join(str(p) for p in e.get("loc", ())) or "payload" for e in errors}),
        ) from None
    # Lone surrogates and NUL survive json.loads but cannot be stored everywhere; unknown
    # fields are already dropped here, so only fields the contract reads are checked.
    unstorable = _unstorable_field(request.model_dump(mode="python"))
    if unstorable:
        bad, rule = unstorable
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, f'Field "{bad}" {rule}', fields=[bad])
    if isinstance(request, SummaryFields) and request.char_count() > MAX_PAYLOAD_CHARS:
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD,
            f'Field "payload" is {request.char_count()} characters; the limit is {MAX_PAYLOAD_CHARS}',
            fields=["payload"],
        )
    return request


# -- retrieval -------------------------------------------------------------------------

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


class FlowbabyContextResponse(BaseModel):
    success: Literal[True] = True
    entries: list[RetrievalEntry]
    totalResults: int
    tokensUsed: int
    abstained: bool = False
    abstainReason: str | None = None
    weakCandidates: list[RetrievalEntry] = Field(default_factory=list)
    """When abstained: up to two best entries anyway, each flagged `weak`, for the agent to judge."""


class RetrieveMemoryResponse(FlowbabyContextResponse):
    markdown: str


def validate_retrieval(model: type[_Strict], params: Any) -> Any:
    """Like validate_request, but failures are INVALID_REQUEST in the retrieval shape."""
    try:
        return validate_request(model, params)
    except FlowbabyError as error:
        raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, error.message, **error.details) from None


# -- health, index and graph inspection ------------------------------------------------


class _Reply(BaseModel):
    """A response shape: an unknown field is an error, so the model is exactly what goes on the wire."""

    model_config = ConfigDict(extra="forbid")


class HookProblem(_Reply):
    at: str
    event: str
    client: str
    reason: str


class HookProblems(_Reply):
    current: bool
    """No hook has answered since the newest problem."""
    problems: list[HookProblem]
    """The last five, newest last."""


class HealthResponse(_Reply):
    success: Literal[True] = True
    status: Literal["ready"] = "ready"
    version: str
    workspace: str
    pid: int
    embedderLoaded: bool
    workerPid: int | None
    llm: str
    memories: int
    pendingOperations: int
    uptimeSec: float
    llmSource: Literal["environment", "workspace", "default", "untrusted-workspace-ignored"] = "default"
    """Where the LLM settings came from, as one unit (a workspace .env counts only when trusted)."""
    graphBuilding: bool = True
    """False with FLOWBABY_BUILD_GRAPH=0: no graph is built, operations stay pending."""
    hookProblems: HookProblems | None = None
    """Why client hooks injected nothing lately (graph.core.hook_problems); the VS Code status bar shows it."""


class PublicHealthResponse(_Reply):
    """What /api/health tells a caller without the bearer token: no path, no pid; asked with a
    `challenge`, the proof that this server holds the workspace's token (never the token)."""

    success: Literal[True] = True
    status: Literal["ready"] = "ready"
    version: str
    proof: str | None = None


IndexState = Literal["missing", "repair_needed", "indexing", "dirty", "partial", "ready"]


class IndexCounts(_Reply):
    memories: int
    vectors: int
    graphIndexed: int
    pendingOperations: int
    failedOperations: int
    withoutGraph: int
    impliedSupersessions: int = 0


class IndexCoverage(_Reply):
    vectors: float
    graph: float


class IndexModel(_Reply):
    embedding: str
    dimensions: int
    llm: str


class IndexStatusResponse(_Reply):
    success: Literal[True] = True
    status: IndexState
    can_search: bool
    needs_update: bool
    needs_repair: bool
    counts: IndexCounts
    coverage: IndexCoverage
    model: IndexModel
    message: str
    graphBuilding: bool = True
    """False with FLOWBABY_BUILD_GRAPH=0: pending operations wait until it is on again."""


class RepairResponse(_Reply):
    success: Literal[True] = True
    operationId: str | None
    requeuedMemories: int
    reembeddedMemories: int
    index: IndexStatusResponse


GraphState = Literal["pending", "indexed", "failed"]


class MemoryVersion(_Reply):
    memoryId: str
    version: int
    status: MemoryStatus
    topic: str
    context: str
    decisions: list[str]
    rationale: list[str]
    openQuestions: list[str]
    nextSteps: list[str]
    references: list[str]
    planId: str | None
    sessionId: str | None
    agentName: str | None
    createdAt: str
    updatedAt: str
    graphState: GraphState


class MemoryVersionsResponse(_Reply):
    success: Literal[True] = True
    topicId: str
    versions: list[MemoryVersion]


class ContextEntity(_Reply):
    id: str
    name: str
    type: str
    memories: int


class ContextRelation(_Reply):
    source: str
    target: str
    relation: str


class RelatedMemory(_Reply):
    memoryId: str
    via: list[str]
    weight: float
    topicId: str
    topic: str
    status: MemoryStatus
    createdAt: str
    queryScore: float


class MemoryContextResponse(_Reply):
    success: Literal[True] = True
    memory: MemoryVersion
    versionsBefore: list[MemoryVersion]
    versionsAfter: list[MemoryVersion]
    entities: list[ContextEntity]
    relations: list[ContextRelation]
    relatedMemories: list[RelatedMemory]


class TopEntity(_Reply):
    id: str
    name: str
    type: str
    degree: int
    memories: int
    topics: list[str]


class GraphComponent(_Reply):
    nodes: int
    memories: int
    entities: int
    topics: list[str]


class WaitingMemory(_Reply):
    memoryId: str
    topicId: str
    version: int
    graphState: GraphState
    operationId: str | None
    errorCode: str | None


class GraphStatsResponse(_Reply):
    success: Literal[True] = True
    memories: int
    memoriesInGraph: int
    entities: int
    relations: int
    topEntities: list[TopEntity]
    components: list[GraphComponent]
    waiting: list[WaitingMemory]


class GraphSnapshotResponse(_Reply):
    """networkx node-link JSON; node and edge attributes vary with their kind."""

    success: Literal[True] = True
    topicId: str | None
    hops: int
    directed: bool
    multigraph: bool
    graph: dict[str, Any]
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


# -- implicit supersession ------------------------------------------------------------------


class SupersessionSide(_Reply):
    topicId: str
    memoryId: str
    topic: str
    status: MemoryStatus
    createdAt: str


class ImpliedSupersession(_Reply):
    older: SupersessionSide
    newer: SupersessionSide
    replaced: str
    replacement: str
    evidence: str


class AuditTailRequest(_Strict):
    """`auditTail` / `GET /api/agent/audit`: the newest audit entries, newest first."""

    limit: int = Field(default=100, ge=1, le=1000)


class AuditTailEntry(_Reply):
    """One audit line as written (graph.core.audit): never a memory's text, only its topic's digest."""

    timestamp: str
    command: str
    agentName: str | None
    topicDigest: str | None
    result: str
    errorCode: str | None
    durationMs: float
    user: str | None = None
    redacted: int | None = None
    """Secrets redacted from the memory at ingest (section 20), when the line counts them."""


class AuditTailResponse(_Reply):
    success: Literal[True] = True
    entries: list[AuditTailEntry]
    count: int


class ImpliedSupersessionsResponse(_Reply):
    success: Literal[True] = True
    pairs: list[ImpliedSupersession]
    count: int


class ConfirmSupersessionRequest(_Strict):
    olderTopicId: str = Field(min_length=1)
    newerTopicId: str = Field(min_length=1)


class ConfirmSupersessionResponse(_Reply):
    success: Literal[True] = True
    topicId: str
    memoryId: str
    status: MemoryStatus
    supersededBy: str


# -- client hooks: briefing, per-prompt recall, capture (INGEST_CONTRACT.md, hooks) ------------


class BriefingRequest(_Strict):
    agentName: str | None = Field(default=None, max_length=256)
    since: str | None = None
    """This agent's last session start: memories other agents stored after it are listed."""
    maxTokens: int = Field(default=800, ge=50, le=20_000)

    @field_validator("since")
    @classmethod
    def _since(cls, value: str | None) -> str | None:
        return None if value is None else _stamp(value)


class RecallRequest(_Strict):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    maxTokens: int = Field(default=400, ge=50, le=20_000)
    maxResults: int = Field(default=3, ge=1, le=10)
    exclude: list[str] = Field(default_factory=list, max_length=2_000)
    """topicIds already injected in this session: never injected again."""
    agentName: str | None = Field(default=None, max_length=256)


class CaptureRequest(_Strict):
    source: Literal["claude-code", "opencode", "codex", "gemini"]
    sessionId: str = Field(min_length=1, max_length=256)
    transcriptPath: str | None = Field(default=None, max_length=4_096)
    """Claude Code's transcript (the hook's transcript_path); else the session is found in the index's sources."""
    agentName: str | None = Field(default=None, max_length=256)
    reason: str = Field(default="manual", max_length=64)


# -- memory control: list, show, forget (INGEST_CONTRACT.md section 20) ------------------------

MAX_LIST_LIMIT = 500
"""Most memories one listMemories page holds."""


def _statuses(value: Any) -> Any:
    """One status or a list of them."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError("must be a status or an array of statuses")
    return [_memory_status(item) for item in items]


class MemoryFilter(_Strict):
    """Which memories: every given condition holds (AND). Used by listMemories and forgetMemory."""

    status: list[MemoryStatus] | None = None
    topicIdPrefix: str | None = Field(default=None, min_length=1, max_length=256)
    agentName: str | None = Field(default=None, min_length=1, max_length=256)
    createdAfter: str | None = None
    createdBefore: str | None = None
    updatedAfter: str | None = None
    updatedBefore: str | None = None
    text: str | None = Field(default=None, min_length=1, max_length=256)
    allVersions: bool = False

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        return _statuses(value)

    @field_validator("createdAfter", "createdBefore", "updatedAfter", "updatedBefore")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        return None if value is None else _stamp(value)


FILTER_CONDITIONS = (
    "status",
    "topicIdPrefix",
    "agentName",
    "createdAfter",
    "createdBefore",
    "updatedAfter",
    "updatedBefore",
    "text",
)
"""The fields of a MemoryFilter that narrow it (allVersions only says how)."""


class ListMemoriesRequest(MemoryFilter):
    order: Literal["newest", "oldest"] = "newest"
    limit: int = Field(default=50, ge=1, le=MAX_LIST_LIMIT)
    cursor: str | None = Field(default=None, min_length=1, max_length=512)


class MemoryListItem(_Reply):
    topicId: str
    memoryId: str
    version: int
    status: MemoryStatus
    topic: str
    preview: str
    agentName: str | None
    sessionId: str | None
    planId: str | None
    createdAt: str
    updatedAt: str
    stagedAt: str
    graphState: GraphState
    charCount: int


class ListMemoriesResponse(_Reply):
    success: Literal[True] = True
    memories: list[MemoryListItem]
    count: int
    nextCursor: str | None


class GetMemoryRequest(_Strict):
    topicId: str = Field(min_length=1, max_length=256)


MAX_GET_TOPICS = 20


class GetMemoriesRequest(_Strict):
    """The MCP tool flowbaby_getMemory: several topics at once."""

    topicIds: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(min_length=1, max_length=MAX_GET_TOPICS)


class SupersessionLink(_Reply):
    """`version`: a newer version of the same topic; `implied`: another topic that seems to replace
    this one (listImpliedSupersessions), not confirmed yet."""

    kind: Literal["version", "implied"]
    olderTopicId: str
    olderMemoryId: str
    newerTopicId: str
    newerMemoryId: str


class MemoryProvenance(_Reply):
    agentName: str | None
    sessionId: str | None
    planId: str | None
    stagedAt: str
    operationId: str | None
    graphState: GraphState


class GetMemoryResponse(MemoryVersionsResponse):
    """memoryVersions' reply (topicId, versions oldest first) and more about the newest version."""

    latest: MemoryVersion
    supersedes: list[SupersessionLink]
    supersededBy: list[SupersessionLink]
    entities: list[ContextEntity]
    provenance: MemoryProvenance


class ForgetMemoryRequest(_Strict):
    """One version (topicId + version), a topic with every version (topicId), or every topic that
    listMemories would list for `filter`. Exactly one of topicId and filter."""

    topicId: str | None = Field(default=None, min_length=1, max_length=256)
    version: int | None = Field(default=None, ge=1)
    filter: MemoryFilter | None = None
    dryRun: bool = False
    waitForStores: bool = True
    """False: reply once the memory is gone from the store and out of search; the steps that rewrite the
    vector files and cognee's graph (their processes may take seconds to start) finish in the background,
    listed in `pending`."""


class ForgetMemoryResponse(_Reply):
    success: Literal[True] = True
    dryRun: bool
    forgetId: str | None
    """The journal entry (null on a dry run or when nothing matched)."""
    topics: int
    versions: int
    topicIds: list[str]
    """The topics touched, at most MAX_FORGET_LISTED of them (`topics` counts all)."""
    pending: list[str]
    """Stores whose part is still running when the reply is sent (`graph`: the cognee worker's
    delete waits for a graph build in progress); the journal finishes them, across restarts too."""


MAX_FORGET_LISTED = 1000


# -- export and import (INGEST_CONTRACT.md 20.5) --------------------------------------------

EXPORT_FORMAT = "flowbaby-memories"
EXPORT_FORMAT_VERSION = 1
MAX_IMPORT_BATCH = 500
"""Versions per importMemories call (the CLI sends a file in batches of this size)."""


class ExportHeader(_Strict):
    """The first line of an export file."""

    format: Literal["flowbaby-memories"]
    formatVersion: Literal[1]
    exportedAt: str
    memories: int = Field(ge=0)


class ExportedMemory(SummaryFields):
    """One stored version, one line of an export file: every field as stored, nothing derived
    (no vectors, no graph, no graph state)."""

    topicId: str = Field(min_length=1, max_length=256)
    version: int = Field(ge=1)
    memoryId: str = Field(min_length=1, max_length=64)
    status: MemoryStatus
    createdAt: str
    updatedAt: str
    stagedAt: str
    sessionId: str | None = Field(default=None, max_length=256)
    planId: str | None = Field(default=None, max_length=256)
    supersedes: str | None = Field(default=None, max_length=64)
    """The memoryId of the topic's previous version (null for version 1)."""

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        return _memory_status(value)

    @field_validator("createdAt", "updatedAt", "stagedAt")
    @classmethod
    def _iso(cls, value: str) -> str:
        return _stamp(value)


class ExportMemoriesRequest(_Strict):
    cursor: str | None = Field(default=None, min_length=1, max_length=512)
    limit: int = Field(default=MAX_IMPORT_BATCH, ge=1, le=MAX_IMPORT_BATCH)


class ExportMemoriesResponse(_Reply):
    success: Literal[True] = True
    header: ExportHeader | None
    """The file's first line, on the first page only (memories: the versions stored then)."""
    memories: list[ExportedMemory]
    nextCursor: str | None


class ImportMemoriesRequest(_Strict):
    memories: list[ExportedMemory] = Field(min_length=1, max_length=MAX_IMPORT_BATCH)
    dryRun: bool = False


class ImportMemoriesResponse(_Reply):
    success: Literal[True] = True
    dryRun: bool
    imported: int
    """Versions added (on a dry run: that would be added)."""
    skipped: int
    """Versions already stored, identical: importing a file twice adds nothing."""
    queuedOperations: int


def export_json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of an export file (docs/export-format.schema.json holds it)."""
    defs: dict[str, Any] = {}
    for model in (ExportHeader, ExportedMemory):
        schema = model.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://flowbaby.dev/schemas/export-format-1.json",
        "title": "A line of a flowbaby export file (JSON lines)",
        "description": "The first line is an ExportHeader; every further line is an ExportedMemory, oldest "
        "first. See INGEST_CONTRACT.md 20.5.",
        "oneOf": [{"$ref": "#/$defs/ExportHeader"}, {"$ref": "#/$defs/ExportedMemory"}],
        "$defs": defs,
    }
