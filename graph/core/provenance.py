"""Whose word a write is (issue 58 items 4-5): what an agent, a capture or an import may not change.

A memory records who wrote it (Memory.written_by: the front that took the write says so, never the
request). A write that is not the person's never makes a new version of a topic the person wrote, never
stores a version Superseded (that would hide a topic without forgetting it), and in the user store is a
proposal the person accepts or dismisses (docs/contract/21-user-scope.md).
"""

from __future__ import annotations

from graph.core.contract import (
    AGENT_STATUSES,
    CAPTURE,
    PERSON,
    ErrorCode,
    FlowbabyError,
    MemoryStatus,
    Writer,
)
from graph.core.memories import Memory


def person_wrote(memory: Memory) -> bool:
    return memory.written_by == PERSON


def check_status(writer: Writer, status: str) -> None:
    """An agent's or a capture's write gives Active or DecisionRecord only: INVALID_PAYLOAD else."""
    if writer in (PERSON, "import") or status in {s.value for s in AGENT_STATUSES}:
        return
    who = "a capture" if writer == CAPTURE else "an agent"
    raise FlowbabyError(
        ErrorCode.INVALID_PAYLOAD,
        f'Field "metadata.status": {who} may store Active or DecisionRecord only; a version stored '
        f"{status} would hide its topic without forgetting it. To retire a memory, store the one that "
        "replaces it (reconcile supersedes it, with undo), or forget it.",
        fields=["metadata.status"],
    )


def check_topic(newest: Memory | None, writer: Writer, proposal: bool) -> None:
    """A write naming a topic (its newest stored version `newest`) that is not the person's may not make a
    new version of a memory the person wrote; an agent's proposal only revises a proposal."""
    if newest is None or writer == PERSON:
        return
    if person_wrote(newest):
        raise FlowbabyError(
            ErrorCode.PERSON_WRITTEN,
            f'"{newest.topic_id}" was written by the person: {_whom(writer)} cannot make a new version of it. '
            "Store yours without a topicId (it is kept beside it, as a suggestion), or ask the person "
            f"to change it (flowbaby memories edit {newest.topic_id}).",
            topicId=newest.topic_id,
        )
    if proposal and newest.status is not MemoryStatus.PROPOSED:
        raise FlowbabyError(
            ErrorCode.PERSON_WRITTEN,
            f'"{newest.topic_id}" is a memory of the person\'s user store: an agent only proposes one. Store '
            "the proposal without a topicId; the person accepts or dismisses it.",
            topicId=newest.topic_id,
        )


def _whom(writer: Writer) -> str:
    return {"agent": "an agent", "capture": "a capture", "import": "an import"}.get(writer, writer)


def proposal_note(topic_id: str) -> str:
    """What a proposal's reply tells the agent to tell the person."""
    return (
        "Stored as a proposal in the person's user store: no project shows it as theirs until they accept it "
        f"(flowbaby memories accept {topic_id}) or dismiss it (flowbaby memories dismiss {topic_id})."
    )
