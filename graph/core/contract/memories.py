"""Memory control (INGEST_CONTRACT.md section 20): list, show and forget, and the filter they share."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from graph.core.contract.base import MemoryStatus, _memory_status, _stamp, _Strict
from graph.core.contract.inspection import (
    ContextEntity,
    GraphState,
    MemoryVersion,
    MemoryVersionsResponse,
    _Reply,
    _Succeeded,
)
from graph.core.contract.scope import PROJECT, Scope, Scoped
from graph.core.filter_conditions import FILTER_CONDITIONS as FILTER_CONDITIONS

MAX_LIST_LIMIT = 500
"""Most memories one listMemories page holds."""


def _statuses(value: Any) -> Any:
    """One status or a list of them."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError("must be a status or an array of statuses")
    return [_memory_status(item, proposed=True) for item in items]


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


class ListMemoriesRequest(MemoryFilter):
    order: Literal["newest", "oldest"] = "newest"
    limit: int = Field(default=50, ge=1, le=MAX_LIST_LIMIT)
    cursor: str | None = Field(default=None, min_length=1, max_length=512)
    withContent: bool = False
    """Each row also carries its whole `context` and its `decisions` (the briefing's user preferences: one
    call, not a getMemory per row)."""
    scope: Literal["project", "user", "all"] | None = None
    """One store, or both (`all`); absent: the project's (docs/contract/21-user-scope.md)."""


_QUERY_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def list_query(items: list[tuple[str, str]]) -> dict[str, Any]:
    """listMemories' fields from a query string (status comma-separated or repeated), typed where the text
    says so; the request's validation then answers a bad value as over the bridge (INVALID_PAYLOAD naming it)."""
    params: dict[str, Any] = {}
    for key, value in items:
        if key == "status":
            params.setdefault("status", []).extend(item for item in value.split(",") if item)
        elif key == "limit":
            params[key] = int(value) if value.lstrip("-").isdigit() else value
        elif key == "allVersions":
            params[key] = _QUERY_BOOLEANS.get(value.lower(), value)
        else:
            params[key] = value
    return params


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
    writtenBy: str | None = None
    """Who wrote it: person, agent, capture or import (null: stored before flowbaby recorded it)."""
    writtenIn: str | None = None
    """The folder of the project the write came from."""
    scope: Scope = PROJECT
    """The store that holds it: the project's or the user's (docs/contract/21-user-scope.md)."""
    context: str | None = Field(default=None, exclude_if=lambda value: value is None)
    decisions: list[str] | None = Field(default=None, exclude_if=lambda value: value is None)
    """Only with `withContent`."""


class ListMemoriesResponse(_Succeeded):
    memories: list[MemoryListItem]
    count: int
    nextCursor: str | None


class GetMemoryRequest(Scoped):
    """getMemory: a topicId without `scope` is looked up in the project, then in the user store."""

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
    writtenBy: str | None = None
    writtenIn: str | None = None


class GetMemoryResponse(MemoryVersionsResponse):
    """memoryVersions' reply (topicId, versions oldest first) and more about the newest version."""

    latest: MemoryVersion
    supersedes: list[SupersessionLink]
    supersededBy: list[SupersessionLink]
    entities: list[ContextEntity]
    provenance: MemoryProvenance
    reconcile: list[dict[str, Any]] = []
    """Reconcile decisions (section 7.1) that made or superseded a version of this topic, oldest first."""
    scope: Scope = PROJECT


class RestoreMemoryRequest(Scoped):
    """restoreMemory: undo the newest reconcile decision (automatic or manual) that superseded a memory of the topic."""

    topicId: str = Field(min_length=1, max_length=256)


class RestoredRef(_Reply):
    topicId: str
    memoryId: str
    status: MemoryStatus


class RestoreMemoryResponse(_Succeeded):
    topicId: str
    id: str
    """The decision undone (its `reconcile.id`)."""
    decision: str
    restored: list[RestoredRef]
    restoredAt: str


class ForgetMemoryRequest(Scoped):
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


class ForgetMemoryResponse(_Succeeded):
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
    scope: Scope = PROJECT
    """The store forgotten from (docs/contract/21-user-scope.md)."""


MAX_FORGET_LISTED = 1000
