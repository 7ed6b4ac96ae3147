"""Export and import (INGEST_CONTRACT.md 20.5): the export file's lines and the calls that page and
load them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from graph.core.contract.base import MemoryStatus, _memory_status, _stamp, _Strict
from graph.core.contract.ingest import SummaryFields
from graph.core.contract.inspection import _Succeeded
from graph.core.contract.scope import PROJECT, Scope, Scoped

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
        return _memory_status(value, proposed=True)

    @field_validator("createdAt", "updatedAt", "stagedAt")
    @classmethod
    def _iso(cls, value: str) -> str:
        return _stamp(value)


class ExportMemoriesRequest(Scoped):
    cursor: str | None = Field(default=None, min_length=1, max_length=512)
    limit: int = Field(default=MAX_IMPORT_BATCH, ge=1, le=MAX_IMPORT_BATCH)


class ExportMemoriesResponse(_Succeeded):
    header: ExportHeader | None
    """The file's first line, on the first page only (memories: the versions stored then)."""
    memories: list[ExportedMemory]
    nextCursor: str | None


class ImportMemoriesRequest(Scoped):
    memories: list[ExportedMemory] = Field(min_length=1, max_length=MAX_IMPORT_BATCH)
    dryRun: bool = False


class ImportMemoriesResponse(_Succeeded):
    dryRun: bool
    imported: int
    """Versions added (on a dry run: that would be added)."""
    skipped: int
    """Versions already stored, identical: importing a file twice adds nothing."""
    queuedOperations: int
    scope: Scope = PROJECT
    """The store imported into (docs/contract/21-user-scope.md)."""
    retired: list[dict[str, Any]] = Field(default_factory=list, exclude_if=lambda value: not value)
    """Each live memory the import retired (a newer version of its topic, or a reconcile replacement), with
    `undo`: `{"restore": topicId}` (flowbaby memories restore) or `{"forget": topicId, "versions": [...]}`
    (forget those imported versions); absent when it retired none (INGEST_CONTRACT.md 20.5)."""
    undecided: int = Field(default=0, exclude_if=lambda value: not value)
    """Reconcile decisions on imported memories not applied when the reply was sent (applied after it)."""


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
