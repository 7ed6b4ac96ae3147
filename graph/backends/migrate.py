"""`flowbaby migrate`: move a workspace up, from its embedded store into a team namespace.

Every stored version is copied as it is: memory id, topic id, version, status (Active,
Superseded, DecisionRecord), summary fields and timestamps, so supersession and the ids that
cognee's graph and agents refer to are the same on the server; so are the reconcile decisions of its
sealed decision log (graph.backends.decision_log), with their undos. The graph is not copied (cognee's
embedded files are per machine): each copied version goes into the namespace with graph state
pending, and its build is queued there, OPERATION_SIZE versions per operation, for the namespace's
server to run. Vectors are not copied either: a server embeds every memory it finds without
vectors when it starts (the same path that heals a lost index), with the server's own model, so
a LanceDB index made with another model can never be mixed into pgvector.

Running it again copies nothing twice: a version already in the namespace (same memory id) is
skipped, or reported as a conflict when its content differs (a topic id staged separately on the
server); graph builds are queued only for versions that no operation covers yet. The workspace
must not be in use: migrate takes its owner lock for the whole copy, so a running bridge, MCP
server or `serve` makes it refuse with WORKSPACE_BUSY (stop it first) rather than copy a store
that is still changing. The embedded store is read, never changed.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from graph.backends.embedded.decision_log import LOG_FILE, FileDecisionLog
from graph.backends.embedded.memory_store import MemoryStore, check_store_sealed
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.memories import Memory, StoreDamaged
from graph.core.workspace import WorkspaceLock, WorkspacePaths

OPERATION_SIZE = 20
"""Versions per queued graph-build operation: a server runs two operations per cognee batch."""
COMPARED = ("topic_id", "version", "topic", "context", "decisions", "created_at", "updated_at", "staged_at")
"""What must match for a version already in the namespace to count as this one (status may differ:
a person may have confirmed a supersession there since)."""


@dataclass
class CopyReport:
    workspace: str
    namespace: str
    database: str
    memories: int
    """Versions in the embedded store."""
    copied: int
    skipped: int
    """Versions already in the namespace, identical."""
    conflicts: list[str] = field(default_factory=list)
    """Memory ids present in the namespace with other content: left as they are there."""
    queuedOperations: list[str] = field(default_factory=list)
    queuedMemories: int = 0
    decisions: int = 0
    """Reconcile decisions copied (those already in the namespace are skipped)."""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"success": not self.conflicts, **asdict(self)}


def _same(mine: Memory, theirs: Memory) -> bool:
    return all(getattr(mine, name) == getattr(theirs, name) for name in COMPARED)


def copy_to_namespace(paths: WorkspacePaths, url: str, namespace: str) -> CopyReport:
    """Copy the workspace's memory versions into `namespace` and queue their graph build there."""
    started = time.perf_counter()
    if not paths.store_db.is_file():
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{paths.root} has no embedded memory store to migrate")
    lock = WorkspaceLock(paths)
    lock.acquire()  # WORKSPACE_BUSY while a front serves it
    try:
        check_store_sealed(paths)  # a store that came with the repository is not sent to the team's server
        try:
            source = MemoryStore(paths.store_db, check=True)
        except StoreDamaged as exc:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The memory store is damaged: {exc}") from None
        try:
            memories = list(source.iter_memories())
        finally:
            source.close()
        from graph.backends.team.memory_store import PostgresMemoryStore
        from graph.backends.team.schema import describe_url

        target = PostgresMemoryStore(url, namespace, owner=True)  # refused while a server holds the namespace
        try:
            memories.sort(key=lambda m: (m.topic_id, m.version))
            inserted, present = target.import_memories(memories)
            mine = {m.memory_id: m for m in memories}
            conflicts = [m.memory_id for m in target.get_memories(present) if not _same(mine[m.memory_id], m)]
            waiting = target.unqueued_memories()
            operations = [
                target.queue_operation(waiting[i : i + OPERATION_SIZE]) for i in range(0, len(waiting), OPERATION_SIZE)
            ]
            decisions = _copy_decisions(paths, url, namespace)
        finally:
            target.close()
    finally:
        lock.release()
    return CopyReport(
        workspace=str(paths.root),
        namespace=namespace,
        database=describe_url(url)[0],
        memories=len(memories),
        copied=len(inserted),
        skipped=len(present) - len(conflicts),
        conflicts=conflicts,
        queuedOperations=operations,
        queuedMemories=len(waiting),
        decisions=decisions,
        seconds=round(time.perf_counter() - started, 3),
    )


def _copy_decisions(paths: WorkspacePaths, url: str, namespace: str) -> int:
    """The workspace's reconcile decisions (the lines sealed for it only) into the namespace's log."""
    from graph.backends.team.decision_log import PgDecisionLog

    entries = FileDecisionLog(paths.data / LOG_FILE, paths.root).entries().values()
    target = PgDecisionLog(url, namespace)
    try:
        return target.import_entries(entries)
    finally:
        target.close()


def migrate_workspace(workspace: str, url: str, namespace: str | None) -> dict[str, Any]:
    """`flowbaby migrate`'s engine call: the report as JSON-ready data."""
    from graph.backends.backend import namespace_for
    from graph.core.namespaces import namespace_problem
    from graph.core.workspace import resolve_workspace

    if not url.startswith(("postgresql://", "postgres://")):
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, "--to takes a postgresql:// URL")
    paths = resolve_workspace(workspace)
    namespace = namespace or namespace_for(paths)
    problem = namespace_problem(namespace)
    if problem:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"The namespace {problem}")
    return copy_to_namespace(paths, url, namespace).to_dict()
