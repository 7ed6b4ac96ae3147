"""What the engine needs of its durable store of memory versions and operations.

The engine (graph.engine, graph.cognify) reaches the store only through `MemoryStoreBackend`,
opened by graph.backends.backend.Backend: the embedded default is `graph.backends.embedded.memory_store.MemoryStore`
(SQLite under `.flowbaby/`), the team backend `graph.backends.team.memory_store`, one namespace per
workspace. The writes the two stores make alike (staging a version, queueing an operation, closing one)
are here once, over either driver's cursor; what differs (locks, notifications, leases) stays in each.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypedDict, Unpack

from graph.core.contract import MemoryFilter, MemoryStatus, OperationStatus, utc_now
from graph.core.memories import ForgetEntry, Memory, insert_memory_sql, memory_uuid, memory_values
from graph.core.memory_query import Page


class Outcome(TypedDict, total=False):
    """How finished operations ended beyond their state (`finish`'s keywords, each None by default): named
    once for the protocol and both stores, which record them alike."""

    error_code: str | None
    error: str | None
    metrics: dict[str, Any] | None


def closing(state: str, outcome: Outcome) -> tuple[str, str | None, str | None, str]:
    """What both stores record for operations that finish in `state`: the graph state their memories move
    to (one already indexed keeps it), the error code, the error and the metrics as JSON."""
    graph_state = {"completed": "indexed", "failed": "failed"}.get(state, "pending")
    return graph_state, outcome.get("error_code"), outcome.get("error"), json.dumps(outcome.get("metrics") or {})


class MemoryStoreBackend(Protocol):
    """Memory versions with supersession, and the background operation ledger (see MemoryStore)."""

    shared: bool
    """Other servers may claim this ledger's operations (Postgres): poll for them, and hold leases."""

    def close(self) -> None: ...
    def stage(self, memory: Memory, operation_id: str, *, capacity: int | None = None) -> Memory: ...
    def get_memories(self, memory_ids: list[str]) -> list[Memory]: ...
    def topic_versions(self, topic_id: str) -> list[Memory]: ...
    def newest_version(self, topic_id: str) -> Memory | None: ...
    def iter_memories(self) -> Iterator[Memory]: ...
    def list_page(self, query: MemoryFilter, page: Page) -> list[Memory]: ...
    def matching_topics(self, query: MemoryFilter) -> list[str]: ...
    def forget(self, forget_id: str, memory_ids: list[str], steps: tuple[str, ...] = ...) -> None: ...
    def checkpoint(self) -> None: ...
    def import_memories(self, memories: list[Memory]) -> tuple[list[str], list[str]]: ...
    def supersede_older(self, topic_ids: list[str]) -> None: ...
    def forget_journal(self) -> list[ForgetEntry]: ...
    def forget_step_done(self, forget_id: str, step: str) -> None: ...
    def memory_states(self) -> dict[str, tuple[str, str]]: ...
    def set_graph_state(self, memory_ids: list[str], state: str) -> None: ...
    def set_status(self, memory_id: str, status: MemoryStatus) -> None: ...
    def counts(self) -> dict[str, int]: ...
    def operations(self, states: tuple[str, ...] | None = None) -> list[OperationStatus]: ...
    def operation(self, operation_id: str) -> OperationStatus | None: ...
    def count_operations(self, states: tuple[str, ...] = ("pending", "running")) -> int: ...
    def llm_usage(self) -> dict[str, Any]: ...
    def mark_running(self, operation_ids: list[str]) -> None: ...
    def claim(self, limit: int, lease_sec: float) -> list[OperationStatus]: ...
    def renew(self, operation_ids: list[str], lease_sec: float) -> list[str]: ...
    def requeue(self, operation_ids: list[str], *, refund_attempt: bool = False) -> None: ...
    def finish(self, operation_ids: list[str], state: str, **outcome: Unpack[Outcome]) -> None: ...
    def memories_without_graph(self) -> list[str]: ...
    def queue_operation(self, memory_ids: list[str]) -> str: ...
    def queue_operations(self, groups: list[list[str]]) -> list[str]: ...
    def recover_interrupted(self) -> list[str]: ...
    def prune_operations(self, keep: int = ...) -> int: ...


WITHOUT_GRAPH = (
    "SELECT m.memory_id FROM memories m LEFT JOIN operations o ON o.operation_id = m.operation_id "
    "WHERE m.graph_state != 'indexed' AND (o.state IS NULL OR o.state NOT IN ('pending', 'running')) "
    "ORDER BY m.staged_at"
)
"""`memories_without_graph` of both stores: memories whose graph failed or is missing and that no unfinished
operation covers, in staging order (SQLite adds its rowid to break ties)."""


class Cursor(Protocol):
    """A DB-API cursor whose rows are read by column name: sqlite3's (rows as sqlite3.Row) or psycopg's (dict rows)."""

    def execute(self, query: str, params: Sequence[Any] = ..., /) -> Any: ...


def stage_version(cur: Cursor, mark: str, memory: Memory, operation_id: str) -> Memory:
    """The write both stores' `stage` makes in its transaction (after its own checks and locks): `memory`
    becomes the topic's next version, superseding the newest, the older versions turn Superseded, and its
    operation is queued. `mark`: the driver's placeholder, `?` for sqlite3, `%s` for psycopg."""
    row = cur.execute(
        f"SELECT memory_id, version FROM memories WHERE topic_id = {mark} ORDER BY version DESC LIMIT 1",
        (memory.topic_id,),
    ).fetchone()
    memory.version = (row["version"] + 1) if row else 1
    memory.memory_id = memory_uuid(memory.topic_id, memory.version)
    memory.supersedes = row["memory_id"] if row else None
    memory.operation_id = operation_id
    if row:
        cur.execute(
            f"UPDATE memories SET status = {mark} WHERE topic_id = {mark} AND version < {mark}",
            (MemoryStatus.SUPERSEDED.value, memory.topic_id, memory.version),
        )
    cur.execute(insert_memory_sql(mark), memory_values(memory, operation_id))
    queue_pending(cur, mark, operation_id, [memory.memory_id])
    return memory


def queue_pending(cur: Cursor, mark: str, operation_id: str, memory_ids: list[str]) -> None:
    """A new pending operation over `memory_ids` in the ledger (staging, repair), in the caller's transaction."""
    cur.execute(
        "INSERT INTO operations (operation_id, state, memory_ids, created_at)"
        f" VALUES ({mark}, 'pending', {mark}, {mark})",
        (operation_id, json.dumps(memory_ids), utc_now()),
    )


class Closeable(Protocol):
    def close(self) -> None: ...
