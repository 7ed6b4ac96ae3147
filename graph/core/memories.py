"""Memory versions and background operations as both backends hold them: the `Memory` model,
its row mapping and SQL values, and the bookkeeping rules the two stores share (forgetting,
supersession revival, operation ids). The stores themselves: graph.backends.embedded.memory_store
(SQLite) and graph.backends.team.memory_store (Postgres).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from graph.core.contract import MemoryStatus, OperationStatus

_MEMORY_NAMESPACE = uuid.UUID("9a4c3c52-5f0c-4a63-9d0e-2f5f6c1f7b10")


@dataclass
class Memory:
    """One stored version of a summary."""

    memory_id: str
    topic_id: str
    version: int
    status: MemoryStatus
    topic: str
    context: str
    decisions: list[str]
    rationale: list[str]
    open_questions: list[str]
    next_steps: list[str]
    references: list[str]
    time_scope: str | None
    agent_name: str | None
    session_id: str | None
    plan_id: str | None
    created_at: str
    updated_at: str
    staged_at: str = ""
    char_count: int = 0
    graph_state: str = "pending"
    operation_id: str | None = None
    supersedes: str | None = field(default=None, compare=False)
    branch: str | None = None
    """The git branch the memory was made on (null: detached HEAD, or not in a repository)."""
    commit: str | None = None
    """The commit checked out when it was made: retrieval marks it unmerged when the caller's HEAD lacks it."""
    written_by: str | None = None
    """Who wrote the version (graph.core.contract.Writer: person, agent, capture, import; None: stored before
    flowbaby recorded it). Set by the front that took the write, never by the request: it decides what an
    agent, a capture or an import may change (docs/contract/21-user-scope.md, 07-reconcile-on-write.md)."""
    written_in: str | None = None
    """The folder of the project the write came from (a user-scope memory's project, which its briefing names)."""

    def sections(self) -> list[tuple[str, list[str]]]:
        """The summary's text, field by field, in reading order."""
        return [
            ("topic", [self.topic]),
            ("context", [self.context]),
            ("decisions", self.decisions),
            ("rationale", self.rationale),
            ("openQuestions", self.open_questions),
            ("nextSteps", self.next_steps),
            ("references", self.references),
        ]

    def text(self) -> str:
        """The summary's whole text: sections' items in their order, joined by spaces (what the lexical
        index, the name links, supersession and the catalog snapshot's digest read). Written out, not
        built from sections(): the owner's warm-up calls it for every memory."""
        lists = (self.decisions, self.rationale, self.open_questions, self.next_steps, self.references)
        return " ".join([self.topic, self.context, *(item for items in lists for item in items)])


class Row(Protocol):
    """A result row by column name: sqlite3.Row here, a dict from the Postgres backend."""

    def __getitem__(self, key: str, /) -> Any: ...


def memory_uuid(topic_id: str, version: int) -> str:
    """A stable id per version; cognee takes it as the data id, so graph nodes trace back."""
    return str(uuid.uuid5(_MEMORY_NAMESPACE, f"{topic_id}#v{version}"))


def row_to_memory(row: Row) -> Memory:
    return Memory(
        memory_id=row["memory_id"],
        topic_id=row["topic_id"],
        version=row["version"],
        status=MemoryStatus(row["status"]),
        topic=row["topic"],
        context=row["context"],
        decisions=json.loads(row["decisions"]),
        rationale=json.loads(row["rationale"]),
        open_questions=json.loads(row["open_questions"]),
        next_steps=json.loads(row["next_steps"]),
        references=json.loads(row["refs"]),
        time_scope=row["time_scope"],
        agent_name=row["agent_name"],
        session_id=row["session_id"],
        plan_id=row["plan_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        staged_at=row["staged_at"],
        char_count=row["char_count"],
        graph_state=row["graph_state"],
        operation_id=row["operation_id"],
        branch=_optional(row, "git_branch"),
        commit=_optional(row, "git_commit"),
        written_by=_optional(row, "written_by"),
        written_in=_optional(row, "written_in"),
    )


def _optional(row: Row, key: str) -> Any:
    """A column that stores made before it was added lack (a partial SELECT, too)."""
    try:
        return row[key]
    except (IndexError, KeyError):
        return None


MEMORY_COLUMNS = (
    "memory_id, topic_id, version, status, topic, context, decisions, rationale, open_questions, next_steps, "
    "refs, time_scope, agent_name, session_id, plan_id, created_at, updated_at, staged_at, char_count, "
    "operation_id, git_branch, git_commit, written_by, written_in"
)
"""The memories table's columns that memory_values fills, in its order (a bulk COPY names them too)."""


def insert_memory_sql(mark: str) -> str:
    """The INSERT of a newly staged version (graph state `pending`), with the driver's
    placeholder: `?` for sqlite3, `%s` for psycopg."""
    marks = ",".join([mark] * len(MEMORY_COLUMNS.split(",")) + ["'pending'"])
    return f"INSERT INTO memories ({MEMORY_COLUMNS}, graph_state) VALUES ({marks})"


def memory_values(memory: Memory, operation_id: str | None) -> tuple[Any, ...]:
    """The values of MEMORY_COLUMNS (insert_memory_sql's), in its order; list fields as JSON text."""
    return (
        memory.memory_id,
        memory.topic_id,
        memory.version,
        memory.status.value,
        memory.topic,
        memory.context,
        json.dumps(memory.decisions),
        json.dumps(memory.rationale),
        json.dumps(memory.open_questions),
        json.dumps(memory.next_steps),
        json.dumps(memory.references),
        memory.time_scope,
        memory.agent_name,
        memory.session_id,
        memory.plan_id,
        memory.created_at,
        memory.updated_at,
        memory.staged_at,
        memory.char_count,
        operation_id,
        memory.branch,
        memory.commit,
        memory.written_by,
        memory.written_in,
    )


def usage_summary(
    batches: int,
    calls: int | None,
    failed: int | None,
    prompt: int | None,
    completion: int | None,
    seconds: float | None,
    cost: float | None,
) -> dict[str, Any]:
    """`llm_usage`'s answer from the ledger's per-batch sums (SQL gives None for an empty sum)."""
    return {
        "batches": int(batches),
        "calls": calls or 0,
        "failedCalls": failed or 0,
        "promptTokens": prompt or 0,
        "completionTokens": completion or 0,
        "totalTokens": (prompt or 0) + (completion or 0),
        "llmSec": round(seconds or 0.0, 3),
        "costUsd": None if cost is None else round(cost, 6),
    }


def row_to_operation(row: Row, topic_ids: list[str]) -> OperationStatus:
    return OperationStatus(
        operationId=row["operation_id"],
        status=row["state"],
        memoryIds=json.loads(row["memory_ids"]),
        topicIds=topic_ids,
        createdAt=row["created_at"],
        startedAt=row["started_at"],
        finishedAt=row["finished_at"],
        errorCode=row["error_code"],
        error=row["error"],
        attempts=row["attempts"],
        metrics=json.loads(row["metrics"]),
    )


KEEP_FINISHED_OPERATIONS = 10_000
"""Finished operations kept in the ledger at start-up; older completed or terminated ones are
pruned (failed ones stay until repair re-queues their memories)."""


FORGET_STEPS = ("vectors", "graph")
"""What a forget leaves to do after its store transaction: the chunk vectors (the owner) and the
graph (cognee and the projection, the worker). The journal keeps the steps not done yet."""


@dataclass
class ForgetEntry:
    """One journal entry: memory ids only, never text."""

    forget_id: str
    memory_ids: list[str]
    pending: list[str]


def scrub_operations(rows: Sequence[Row], forgotten: set[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The ledger without forgotten ids: (operation_id, new memory_ids JSON) to update, and the
    operations to drop: those left with no memory that are not running (an empty pending
    operation would otherwise become a projection rebuild). A running one keeps its row; the
    batch ends as usual and the forget's graph step runs after it."""
    updates: list[tuple[str, str]] = []
    drops: list[str] = []
    for row in rows:
        ids = json.loads(row["memory_ids"])
        kept = [m for m in ids if m not in forgotten]
        if len(kept) == len(ids):
            continue
        if not kept and row["state"] != "running":
            drops.append(row["operation_id"])
        else:
            updates.append((row["operation_id"], json.dumps(kept)))
    return updates, drops


def newest_revived(versions: list[tuple[str, int, str]], forgotten: set[str]) -> list[str]:
    """(memory_id, version, status) of a topic's versions -> the version to make Active again: when
    the topic's newest version is forgotten, the newest one left, if it was Superseded (it was
    superseded by what is now gone)."""
    if not versions:
        return []
    newest = max(versions, key=lambda v: v[1])
    left = [v for v in versions if v[0] not in forgotten]
    if newest[0] not in forgotten or not left:
        return []
    memory_id, _, status = max(left, key=lambda v: v[1])
    return [memory_id] if status == MemoryStatus.SUPERSEDED.value else []


class StoreDamaged(Exception):
    """memories.sqlite is not a readable SQLite database (or fails its integrity check)."""


class BacklogFull(Exception):
    """stage(capacity=N) found N unfinished operations: nothing was staged (429_FLOWBABY_BACKLOG)."""


def revived_versions(rows: Sequence[Row], forgotten: set[str]) -> list[str]:
    """newest_revived over each topic of (memory_id, topic_id, version, status) rows."""
    by_topic: dict[str, list[tuple[str, int, str]]] = {}
    for row in rows:
        by_topic.setdefault(row["topic_id"], []).append((row["memory_id"], row["version"], row["status"]))
    return [m for versions in by_topic.values() for m in newest_revived(versions, forgotten)]


def new_operation_id() -> str:
    return f"op_{uuid.uuid4().hex[:16]}"
