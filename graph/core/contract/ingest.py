"""Staging a memory: the ingest request (summary fields and metadata), its replies and a background
operation's status."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from graph.core.contract.base import (
    MAX_LIST_ITEMS,
    TEXT_LIST_FIELDS,
    MemoryStatus,
    Succeeded,
    _absent,
    _is_timestamp,
    _memory_status,
    _stamp,
    _Strict,
    utc_now,
)
from graph.core.contract.scope import PROJECT, Scope, Scoped


class IngestMetadata(_Strict):
    """A summary's metadata. What it leaves out is filled in here, the one rule of every front
    (bridge, HTTP, MCP, LM tools): see `_defaults`."""

    topicId: str = Field(default_factory=lambda: uuid.uuid4().hex[:16], min_length=1, max_length=256)
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
        absent or null: now; updatedAt absent or null: createdAt if given (a bad one is reported once, on
        createdAt), else now; sessionId, planId, status null: as absent (status Active). topicId is its
        field's default, so the model's fields_set says whether the caller named one (then not reconciled)."""
        if not isinstance(data, dict):
            return data
        now = utc_now()
        filled = {key: value for key, value in data.items() if value is not None}
        if filled.get("topicId") == "":
            del filled["topicId"]
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


class FlowbabyIngestRequest(SummaryFields, Scoped):
    """ingestForAgent and storeMemory, over every front: metadata optional, filled in alike."""

    metadata: IngestMetadata = Field(default_factory=_filled_metadata)

    @model_validator(mode="before")
    @classmethod
    def _no_metadata(cls, data: Any) -> Any:
        if isinstance(data, dict) and "metadata" in data and data["metadata"] is None:
            return {key: value for key, value in data.items() if key != "metadata"}
        return data

    @property
    def named_topic(self) -> bool:
        """The caller named its topicId (a new version of that topic: not reconciled, section 7.1)."""
        return "metadata" in self.model_fields_set and "topicId" in self.metadata.model_fields_set


class RefusedRequest(_Strict):
    """A request a front refused before the engine saw it (its row's parse failed), for the audit log
    (section 20.4): audited as the engine audited the invalid writes and retrievals it validated itself."""

    command: str
    agentName: str | None = None
    topic: str | None = None
    errorCode: str


class BackgroundStatusRequest(_Strict):
    operationId: str | None = Field(default=None, min_length=1, max_length=256)


class ResponseMetadata(BaseModel):
    topic_id: str
    session_id: str | None
    plan_id: str | None
    status: MemoryStatus
    created_at: str
    updated_at: str


class FlowbabyIngestResponse(Succeeded):
    staged: bool
    operationId: str
    ingested_chars: int
    timestamp: str
    metadata: ResponseMetadata
    staging_duration_sec: float
    ingestion_metrics: dict[str, Any]
    redacted: int = 0
    """Secrets replaced by [redacted] before the memory was stored (section 8.1)."""
    reconcile: dict[str, Any] | None = Field(default=None, exclude_if=_absent)
    """What reconcile on write decided (section 7.1); absent for a write that named its topicId."""
    scope: Scope = PROJECT
    """The store written (docs/contract/21-user-scope.md)."""
    proposed: str | None = Field(default=None, exclude_if=_absent)
    """An agent's user-scope write is stored as a proposal (status Proposed): what the person runs to accept
    or dismiss it; absent otherwise (docs/contract/21-user-scope.md)."""


class StoreMemoryResponse(Succeeded):
    summary_id: str
    operationId: str
    ingested_chars: int
    duration_ms: float
    redacted: int = 0
    """Secrets replaced by [redacted] before the memory was stored (section 8.1)."""
    reconcile: dict[str, Any] | None = Field(default=None, exclude_if=_absent)
    """What reconcile on write decided (section 7.1); absent for a write that named its topicId."""
    scope: Scope = PROJECT
    """The store written (docs/contract/21-user-scope.md)."""
    proposed: str | None = Field(default=None, exclude_if=_absent)
    """An agent's user-scope write is stored as a proposal (status Proposed): what the person runs to accept
    or dismiss it; absent otherwise (docs/contract/21-user-scope.md)."""


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


class OperationReply(OperationStatus, Succeeded):
    """backgroundStatus of one operation the ledger holds: `success` first, then its status."""


class UnknownOperation(Succeeded):
    """backgroundStatus of an operationId the ledger never had (or no longer has)."""

    operationId: str
    status: Literal["unknown"] = "unknown"


class BackgroundOperations(Succeeded):
    """backgroundStatus without an operationId: every operation, counted by status, and the LLM's usage."""

    operations: list[OperationStatus]
    counts: dict[str, int]
    llmUsage: dict[str, Any]
    graphBuilding: bool


BackgroundStatusResponse = OperationReply | UnknownOperation | BackgroundOperations
"""backgroundStatus's reply: which one, its request's operationId and the ledger say."""
