"""Health, index status and repair, a memory's versions and context, the graph's summary and snapshot,
implied supersessions and the audit log's tail."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.core.contract.base import MemoryStatus, Succeeded, _Strict


class _Reply(BaseModel):
    """A response shape: an unknown field is an error, so the model is exactly what goes on the wire."""

    model_config = ConfigDict(extra="forbid")


class _Succeeded(_Reply, Succeeded):
    """A success reply of that exact shape (the base of every `_Reply` that answers a request)."""


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


class HealthResponse(_Succeeded):
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


class PublicHealthResponse(_Succeeded):
    """What /api/health tells a caller without the bearer token: no path, no pid; asked with a
    `challenge`, the proof that this server holds the workspace's token (never the token)."""

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


class IndexStatusResponse(_Succeeded):
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


class RepairResponse(_Succeeded):
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
    writtenBy: str | None = None
    """Who wrote the version: person, agent, capture or import (null: stored before flowbaby recorded it)."""
    writtenIn: str | None = None
    """The folder of the project the write came from."""


class MemoryVersionsResponse(_Succeeded):
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


class MemoryContextResponse(_Succeeded):
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


class GraphStatsResponse(_Succeeded):
    memories: int
    memoriesInGraph: int
    entities: int
    relations: int
    topEntities: list[TopEntity]
    components: list[GraphComponent]
    waiting: list[WaitingMemory]


class GraphSnapshotResponse(_Succeeded):
    """networkx node-link JSON; node and edge attributes vary with their kind."""

    topicId: str | None
    hops: int
    directed: bool
    multigraph: bool
    graph: dict[str, Any]
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


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


class AuditTailResponse(_Succeeded):
    entries: list[AuditTailEntry]
    count: int


class ImpliedSupersessionsResponse(_Succeeded):
    pairs: list[ImpliedSupersession]
    count: int


class ConfirmSupersessionRequest(_Strict):
    olderTopicId: str = Field(min_length=1)
    newerTopicId: str = Field(min_length=1)
    listed: bool = True
    """False: a pair a person names (`flowbaby memories supersede`), listed by listImpliedSupersessions or not."""


class ConfirmSupersessionResponse(_Succeeded):
    topicId: str
    memoryId: str
    status: MemoryStatus
    supersededBy: str
