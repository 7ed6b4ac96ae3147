"""A stored version (graph.core.memories.Memory) as the contract's records: versions, list entries, export lines."""

from __future__ import annotations

from typing import Any

from graph.core.contract import ExportedMemory
from graph.core.memories import Memory, memory_uuid

IMPORT_OPERATION_SIZE = 20
"""Imported versions per queued graph-build operation (as `flowbaby migrate`)."""

SAME_VERSION = ("topic_id", "version", "topic", "context", "decisions", "created_at", "updated_at", "staged_at")
"""What must match for a stored version to count as an imported one (status may differ: a person may
have confirmed a supersession since)."""


def same_version(stored: Memory, other: Memory) -> bool:
    return all(getattr(stored, name) == getattr(other, name) for name in SAME_VERSION)


def summary_fields(m: Memory) -> dict[str, Any]:
    """A version's summary text under the contract's names (its sections, in reading order)."""
    return {
        "topic": m.topic,
        "context": m.context,
        "decisions": m.decisions,
        "rationale": m.rationale,
        "openQuestions": m.open_questions,
        "nextSteps": m.next_steps,
        "references": m.references,
    }


PROVENANCE = {
    "agentName": "agent_name",
    "sessionId": "session_id",
    "planId": "plan_id",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
    "stagedAt": "staged_at",
}
"""Who stored a version and when: the wire name of each Memory attribute the memory list and the
export file both show."""


def provenance_fields(m: Memory) -> dict[str, Any]:
    return {name: getattr(m, attribute) for name, attribute in PROVENANCE.items()}


def written_fields(m: Memory) -> dict[str, Any]:
    """Who wrote a version and the project it came from (graph.core.provenance), as the replies name them."""
    return {"writtenBy": m.written_by, "writtenIn": m.written_in}


def exported(m: Memory) -> dict[str, Any]:
    """One stored version as a line of the export file."""
    return {
        "topicId": m.topic_id,
        "version": m.version,
        "memoryId": m.memory_id,
        "status": m.status.value,
        **summary_fields(m),
        "timeScope": m.time_scope,
        **provenance_fields(m),
        "supersedes": memory_uuid(m.topic_id, m.version - 1) if m.version > 1 else None,
    }


def imported(record: ExportedMemory) -> Memory:
    """A line of an export file as the version to store (graph state pending, no operation)."""
    return Memory(
        memory_id=record.memoryId,
        topic_id=record.topicId,
        version=record.version,
        status=record.status,
        topic=record.topic,
        context=record.context,
        decisions=record.decisions,
        rationale=record.rationale,
        open_questions=record.openQuestions,
        next_steps=record.nextSteps,
        references=record.references,
        time_scope=record.timeScope,
        agent_name=record.agentName,
        session_id=record.sessionId,
        plan_id=record.planId,
        created_at=record.createdAt,
        updated_at=record.updatedAt,
        staged_at=record.stagedAt,
        char_count=record.char_count(),
    )


PREVIEW_CHARS = 200
"""Characters of a memory's context that listMemories shows."""


def version_fields(m: Memory) -> dict[str, Any]:
    """One stored version as the contract's MemoryVersion."""
    return {
        "memoryId": m.memory_id,
        "version": m.version,
        "status": m.status.value,
        **summary_fields(m),
        "planId": m.plan_id,
        "sessionId": m.session_id,
        "agentName": m.agent_name,
        "createdAt": m.created_at,
        "updatedAt": m.updated_at,
        "graphState": m.graph_state,
        **written_fields(m),
    }
