"""The embedded backend's memory store: memory versions and the background operation ledger
in `.flowbaby/memories.sqlite`.

SQLite in WAL mode with synchronous=FULL: a reply is sent only after the commit is
on disk, so a kill -9 straight after a staged reply loses nothing. Memories and the
ledger share one file so that staging a memory and queueing its operation is one
transaction. The team backend's counterpart is graph.backends.team.memory_store.
"""

from __future__ import annotations

import contextlib
import json
import operator
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Unpack

from graph.backends.embedded.sealed_db import check_sealed_db, new_sealed_db, seal_db
from graph.backends.memory_store import WITHOUT_GRAPH, Outcome, closing, queue_pending, stage_version
from graph.core.contract import MemoryFilter, MemoryStatus, OperationStatus, utc_now
from graph.core.jsonwire import loads_stored
from graph.core.memories import (
    FORGET_STEPS,
    KEEP_FINISHED_OPERATIONS,
    BacklogFull,
    ForgetEntry,
    Memory,
    StoreDamaged,
    insert_memory_sql,
    memory_values,
    new_operation_id,
    revived_versions,
    row_to_memory,
    row_to_operation,
    scrub_operations,
    usage_summary,
)
from graph.core.memory_query import LIST_INDEXES, Page, page_sql, topics_sql
from graph.core.workspace import WorkspacePaths, create_private

_FAST_MEMORIES = (
    "SELECT memory_id, topic_id, version, status, topic, context, "
    "json_array(json(decisions), json(rationale), json(open_questions), json(next_steps), json(refs)), "
    "time_scope, agent_name, session_id, plan_id, created_at, updated_at, staged_at, char_count, graph_state, "
    "operation_id, git_branch, git_commit, written_by, written_in, rowid FROM memories"
)
"""iter_memories' read: row_to_memory's fields in Memory's order, the list fields as one JSON array, then
the rowid. In table order, sorted here: SQLite's ORDER BY staged_at, rowid walks the staged_at index and
looks every row up (0.9 s at 100k memories against 0.65 s with this sort)."""
_STAGING_ORDER = operator.itemgetter(13, 21)
_STATUSES = {status.value: status for status in MemoryStatus}


def _tuple_to_memory(row: tuple[Any, ...]) -> Memory:
    """row_to_memory over a _FAST_MEMORIES row."""
    decisions, rationale, open_questions, next_steps, references = loads_stored(row[6])
    status = _STATUSES.get(row[3]) or MemoryStatus(row[3])
    return Memory(
        memory_id=row[0],
        topic_id=row[1],
        version=row[2],
        status=status,
        topic=row[4],
        context=row[5],
        decisions=decisions,
        rationale=rationale,
        open_questions=open_questions,
        next_steps=next_steps,
        references=references,
        time_scope=row[7],
        agent_name=row[8],
        session_id=row[9],
        plan_id=row[10],
        created_at=row[11],
        updated_at=row[12],
        staged_at=row[13],
        char_count=row[14],
        graph_state=row[15],
        operation_id=row[16],
        branch=row[17],
        commit=row[18],
        written_by=row[19],
        written_in=row[20],
    )


_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    memory_id TEXT PRIMARY KEY,
    topic_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    topic TEXT NOT NULL,
    context TEXT NOT NULL,
    decisions TEXT NOT NULL,
    rationale TEXT NOT NULL,
    open_questions TEXT NOT NULL,
    next_steps TEXT NOT NULL,
    refs TEXT NOT NULL,
    time_scope TEXT,
    agent_name TEXT,
    session_id TEXT,
    plan_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    staged_at TEXT NOT NULL,
    char_count INTEGER NOT NULL,
    graph_state TEXT NOT NULL DEFAULT 'pending',
    operation_id TEXT,
    git_branch TEXT,
    git_commit TEXT,
    written_by TEXT,
    written_in TEXT,
    UNIQUE (topic_id, version)
);
CREATE INDEX IF NOT EXISTS memories_topic ON memories (topic_id);
CREATE INDEX IF NOT EXISTS memories_graph_state ON memories (graph_state);
CREATE INDEX IF NOT EXISTS memories_operation ON memories (operation_id);
CREATE TABLE IF NOT EXISTS operations (
    operation_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    memory_ids TEXT NOT NULL,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    error_code TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    metrics TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS operations_state ON operations (state);
CREATE TABLE IF NOT EXISTS forget_journal (
    forget_id TEXT PRIMARY KEY,
    memory_ids TEXT NOT NULL,
    pending TEXT NOT NULL,
    created_at TEXT NOT NULL
);
""" + "".join(f"{index};\n" for index in LIST_INDEXES)


class MemoryStore:
    """Repository over the workspace SQLite file. Thread-safe through one lock.

    `readonly` opens it without writing anything (no schema, no WAL switch): for inspection
    while another process owns the workspace."""

    shared = False
    """One process owns the file (WorkspaceLock): no other server claims its operations."""

    def __init__(self, path: Path, *, readonly: bool = False, check: bool = False) -> None:
        """`check` runs SQLite's quick_check first (the owner does, once per start)."""
        try:
            if readonly:
                self._conn = sqlite3.connect(
                    f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
                )
            else:
                create_private(path)
                self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._conn.row_factory = sqlite3.Row
            self._lock = threading.Lock()
            self._conn.execute("PRAGMA busy_timeout=5000")
            if readonly:
                return
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            # Freed cells and pages are zeroed: a forgotten memory's text leaves no bytes behind.
            self._conn.execute("PRAGMA secure_delete=ON")
            if check:
                verdict = self._conn.execute("PRAGMA quick_check(1)").fetchone()[0]
                if verdict != "ok":
                    raise sqlite3.DatabaseError(verdict)
            self._conn.executescript(_SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(memories)")}
            # stores made before memories recorded git, and who wrote them
            for column in ("git_branch", "git_commit", "written_by", "written_in"):
                if column not in columns:
                    self._conn.execute(f"ALTER TABLE memories ADD COLUMN {column} TEXT")
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(Exception):
                self._conn.close()
            raise StoreDamaged(f"{path.name} is damaged ({exc})") from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _transaction(self) -> _Tx:
        return _Tx(self)

    # -- staging -----------------------------------------------------------------
    def stage(self, memory: Memory, operation_id: str, *, capacity: int | None = None) -> Memory:
        """Store a new version of the topic, supersede the previous one, queue its operation.
        `capacity`: raise BacklogFull instead when that many operations are unfinished."""
        with self._transaction() as cur:
            if capacity is not None:
                unfinished = cur.execute("SELECT COUNT(*) FROM operations WHERE state IN ('pending', 'running')")
                if unfinished.fetchone()[0] >= capacity:
                    raise BacklogFull(capacity)
            return stage_version(cur, "?", memory, operation_id)

    # -- memories ----------------------------------------------------------------
    def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        if not memory_ids:
            return []
        marks = ",".join("?" * len(memory_ids))
        with self._lock:
            rows = self._conn.execute(f"SELECT * FROM memories WHERE memory_id IN ({marks})", memory_ids).fetchall()
        by_id = {row["memory_id"]: row_to_memory(row) for row in rows}
        return [by_id[m] for m in memory_ids if m in by_id]

    def newest_version(self, topic_id: str) -> Memory | None:
        """The topic's newest version alone (what a write checks before it stages: graph.core.provenance)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT * FROM memories WHERE topic_id = ? ORDER BY version DESC LIMIT 1", (topic_id,)
            ).fetchone()
        return None if row is None else row_to_memory(row)

    def topic_versions(self, topic_id: str) -> list[Memory]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT * FROM memories WHERE topic_id = ? ORDER BY version", (topic_id,)
            ).fetchall()
        return [row_to_memory(row) for row in rows]

    def iter_memories(self) -> Iterator[Memory]:
        """Every version in staging order. Read as plain tuples with the five list fields parsed in one
        loads_stored (SQLite's json() checks each first), ~2x faster than sqlite3.Row and five loads a
        row: the owner reads all of them at start (100k memories). A column that is not valid JSON
        fails that read, and the rows are read again as before, which raises at the damaged row."""
        with self._lock:
            cursor = self._conn.cursor()
            cursor.row_factory = None
            try:
                rows = cursor.execute(_FAST_MEMORIES).fetchall()
            except sqlite3.OperationalError:
                rows = None
            finally:
                cursor.close()
            if rows is not None and all(type(row[13]) is str for row in rows):
                rows.sort(key=_STAGING_ORDER)  # str order is SQLite's BINARY order of UTF-8 text
            else:  # a damaged row (a blob staged_at, text that is no JSON): read as before, in SQLite's order
                damaged = self._conn.execute("SELECT * FROM memories ORDER BY staged_at, rowid").fetchall()
                return (row_to_memory(row) for row in damaged)
        return (_tuple_to_memory(row) for row in rows)

    def list_page(self, query: MemoryFilter, page: Page) -> list[Memory]:
        """Matching versions in page order, up to page.limit + 1 (graph.core.memory_query)."""
        statement, args = page_sql(query, page, "?", postgres=False)
        with self._lock:
            rows = self._conn.execute(statement, args).fetchall()
        return [row_to_memory(row) for row in rows]

    def matching_topics(self, query: MemoryFilter) -> list[str]:
        statement, args = topics_sql(query, "?", postgres=False)
        with self._lock:
            rows = self._conn.execute(statement, args).fetchall()
        return [row[0] for row in rows]

    # -- forgetting (INGEST_CONTRACT.md 20.3) -------------------------------------------------
    def forget(self, forget_id: str, memory_ids: list[str], steps: tuple[str, ...] = FORGET_STEPS) -> None:
        """One transaction: the journal entry, the versions' rows gone (bytes zeroed: secure_delete),
        the ledger scrubbed of them, and a topic whose newest version went gets its newest left
        Active again. Then the WAL is checkpointed and truncated, so no old frame keeps the text."""
        forgotten = set(memory_ids)
        marks = ",".join("?" * len(memory_ids))
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO forget_journal (forget_id, memory_ids, pending, created_at) VALUES (?, ?, ?, ?)",
                (forget_id, json.dumps(memory_ids), json.dumps(list(steps)), utc_now()),
            )
            topics = cur.execute(
                f"SELECT memory_id, topic_id, version, status FROM memories WHERE topic_id IN "
                f"(SELECT topic_id FROM memories WHERE memory_id IN ({marks}))",
                memory_ids,
            ).fetchall()
            revive = revived_versions(topics, forgotten)
            cur.execute(f"DELETE FROM memories WHERE memory_id IN ({marks})", memory_ids)
            cur.executemany(
                "UPDATE memories SET status = ? WHERE memory_id = ?",
                [(MemoryStatus.ACTIVE.value, m) for m in revive],
            )
            updates, drops = scrub_operations(
                cur.execute("SELECT operation_id, state, memory_ids FROM operations").fetchall(), forgotten
            )
            cur.executemany("UPDATE operations SET memory_ids = ? WHERE operation_id = ?", [(j, o) for o, j in updates])
            cur.executemany("DELETE FROM operations WHERE operation_id = ?", [(o,) for o in drops])
        self.checkpoint()

    def import_memories(self, memories: list[Memory]) -> tuple[list[str], list[str]]:
        """Insert versions exactly as given (ids, versions, status, timestamps), graph state pending and
        no operation; a version already here is left alone. Returns (inserted ids, ids already present)."""
        inserted: list[str] = []
        present: list[str] = []
        with self._transaction() as cur:
            for memory in memories:
                cur.execute(insert_memory_sql("?") + " ON CONFLICT DO NOTHING", memory_values(memory, None))
                (inserted if cur.rowcount else present).append(memory.memory_id)
        return inserted, present

    def supersede_older(self, topic_ids: list[str]) -> None:
        """Every version but the newest of these topics Superseded, as staging leaves them (an import
        may add a newer version to a topic stored here)."""
        with self._transaction() as cur:
            cur.executemany(
                "UPDATE memories SET status = ? WHERE topic_id = ? AND status != ? "
                "AND version < (SELECT MAX(version) FROM memories WHERE topic_id = ?)",
                [(MemoryStatus.SUPERSEDED.value, t, MemoryStatus.SUPERSEDED.value, t) for t in topic_ids],
            )

    def checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it to zero bytes."""
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def forget_journal(self) -> list[ForgetEntry]:
        with self._lock:
            rows = self._conn.execute("SELECT * FROM forget_journal ORDER BY created_at, rowid").fetchall()
        return [ForgetEntry(r["forget_id"], json.loads(r["memory_ids"]), json.loads(r["pending"])) for r in rows]

    def forget_step_done(self, forget_id: str, step: str) -> None:
        """One step of a journal entry is done; the entry goes when none is left."""
        with self._transaction() as cur:
            row = cur.execute("SELECT pending FROM forget_journal WHERE forget_id = ?", (forget_id,)).fetchone()
            if row is None:
                return
            left = [s for s in json.loads(row["pending"]) if s != step]
            if left:
                cur.execute("UPDATE forget_journal SET pending = ? WHERE forget_id = ?", (json.dumps(left), forget_id))
            else:
                cur.execute("DELETE FROM forget_journal WHERE forget_id = ?", (forget_id,))

    def memory_states(self) -> dict[str, tuple[str, str]]:
        """memory_id -> (status, graph_state) of every version: the only columns that change after staging."""
        with self._lock:
            rows = self._conn.execute("SELECT memory_id, status, graph_state FROM memories").fetchall()
        return {row[0]: (row[1], row[2]) for row in rows}

    def set_graph_state(self, memory_ids: list[str], state: str) -> None:
        with self._transaction() as cur:
            cur.executemany("UPDATE memories SET graph_state = ? WHERE memory_id = ?", [(state, m) for m in memory_ids])

    def set_status(self, memory_id: str, status: MemoryStatus) -> None:
        """A person's decision about a version (confirming an implied supersession)."""
        with self._transaction() as cur:
            cur.execute("UPDATE memories SET status = ? WHERE memory_id = ?", (status.value, memory_id))

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._conn.execute("SELECT graph_state, COUNT(*) AS n FROM memories GROUP BY graph_state").fetchall()
        by_state = {row["graph_state"]: row["n"] for row in rows}
        return {"memories": sum(by_state.values()), **{f"graph_{k}": v for k, v in by_state.items()}}

    # -- operation ledger ----------------------------------------------------------
    def operations(self, states: tuple[str, ...] | None = None) -> list[OperationStatus]:
        query = "SELECT * FROM operations"
        args: tuple[str, ...] = ()
        if states:
            query += f" WHERE state IN ({','.join('?' * len(states))})"
            args = states
        with self._lock:
            rows = self._conn.execute(query + " ORDER BY created_at, rowid", args).fetchall()
        return [self._with_topics(row) for row in rows]

    def operation(self, operation_id: str) -> OperationStatus | None:
        with self._lock:
            row = self._conn.execute("SELECT * FROM operations WHERE operation_id = ?", (operation_id,)).fetchone()
        return self._with_topics(row) if row else None

    def _with_topics(self, row: sqlite3.Row) -> OperationStatus:
        memory_ids = json.loads(row["memory_ids"])
        topics = [m.topic_id for m in self.get_memories(memory_ids)]
        return row_to_operation(row, topics)

    def count_operations(self, states: tuple[str, ...] = ("pending", "running")) -> int:
        """Operations in these states (by default the unfinished ones)."""
        marks = ",".join("?" * len(states))
        with self._lock:
            row = self._conn.execute(f"SELECT COUNT(*) FROM operations WHERE state IN ({marks})", states).fetchone()
        return int(row[0])

    def llm_usage(self) -> dict[str, Any]:
        """LLM work summed over every batch in the ledger, completed or failed. Operations of
        one batch share its metrics, so each batch is counted once (by metrics.batchId)."""
        fields = ("llmCalls", "llmFailedCalls", "llmPromptTokens", "llmCompletionTokens", "llmSec", "llmCostUsd")
        per_batch = ", ".join(f"MAX(json_extract(metrics, '$.{f}')) AS {f}" for f in fields)
        totals = ", ".join(f"SUM({f})" for f in fields)
        with self._lock:
            row = self._conn.execute(
                f"SELECT COUNT(*), {totals} FROM (SELECT {per_batch} FROM operations "
                "WHERE json_extract(metrics, '$.llmCalls') IS NOT NULL "
                "GROUP BY COALESCE(json_extract(metrics, '$.batchId'), operation_id))"
            ).fetchone()
        return usage_summary(*row)

    def mark_running(self, operation_ids: list[str]) -> None:
        now = utc_now()
        with self._transaction() as cur:
            cur.executemany(
                "UPDATE operations SET state='running', started_at=?, attempts=attempts+1 WHERE operation_id=?",
                [(now, op) for op in operation_ids],
            )

    def claim(self, limit: int, lease_sec: float) -> list[OperationStatus]:
        """Up to `limit` pending operations, oldest first, now running (attempts counted). The
        owning process is the only claimer here, so the lease is not recorded."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT operation_id FROM operations WHERE state='pending' ORDER BY created_at, rowid LIMIT ?",
                (limit,),
            ).fetchall()
        ids = [row["operation_id"] for row in rows]
        if ids:
            self.mark_running(ids)
        return [status for status in (self.operation(op) for op in ids) if status is not None]

    def renew(self, operation_ids: list[str], lease_sec: float) -> list[str]:
        """No lease to renew: every claimed operation stays this process's."""
        return list(operation_ids)

    def requeue(self, operation_ids: list[str], *, refund_attempt: bool = False) -> None:
        """Back to pending: after a worker crash the attempt counts; parked at shutdown it does not."""
        refund = 1 if refund_attempt else 0
        with self._transaction() as cur:
            cur.executemany(
                "UPDATE operations SET state='pending', started_at=NULL, attempts=MAX(0, attempts-?)"
                " WHERE operation_id=?",
                [(refund, op) for op in operation_ids],
            )

    def finish(self, operation_ids: list[str], state: str, **outcome: Unpack[Outcome]) -> None:
        """Close operations and move their memories' graph state in one transaction."""
        graph_state, error_code, error, metrics = closing(state, outcome)
        now = utc_now()
        with self._transaction() as cur:
            for op in operation_ids:
                cur.execute(
                    "UPDATE operations SET state=?, finished_at=?, error_code=?, error=?, metrics=?"
                    " WHERE operation_id=?",
                    (state, now, error_code, error, metrics, op),
                )
                cur.execute(
                    "UPDATE memories SET graph_state=? WHERE operation_id=? AND graph_state!='indexed'",
                    (graph_state, op),
                )

    def memories_without_graph(self) -> list[str]:
        """Memories whose graph is failed or missing and that no unfinished operation covers."""
        with self._lock:
            rows = self._conn.execute(WITHOUT_GRAPH + ", m.rowid").fetchall()
        return [row["memory_id"] for row in rows]

    def queue_operation(self, memory_ids: list[str]) -> str:
        """One new pending operation for these memories (repair)."""
        operation_id = new_operation_id()
        with self._transaction() as cur:
            queue_pending(cur, "?", operation_id, memory_ids)
            cur.executemany(
                "UPDATE memories SET operation_id=?, graph_state='pending' WHERE memory_id=?",
                [(operation_id, m) for m in memory_ids],
            )
        return operation_id

    def queue_operations(self, groups: list[list[str]]) -> list[str]:
        """queue_operation for each group, in one transaction (an import queues thousands)."""
        operation_ids = [new_operation_id() for _ in groups]
        now = utc_now()
        with self._transaction() as cur:
            cur.executemany(
                "INSERT INTO operations (operation_id, state, memory_ids, created_at) VALUES (?, 'pending', ?, ?)",
                [(op, json.dumps(ids), now) for op, ids in zip(operation_ids, groups, strict=True)],
            )
            cur.executemany(
                "UPDATE memories SET operation_id=?, graph_state='pending' WHERE memory_id=?",
                [(op, m) for op, ids in zip(operation_ids, groups, strict=True) for m in ids],
            )
        return operation_ids

    def recover_interrupted(self) -> list[str]:
        """At start-up: operations that were running when the previous owner stopped (killed, or
        its machine went down) go back to pending under the same ids, the attempt refunded: the
        process that died is not the operation's failure, and the id an agent holds must end
        completed or with its true code. Returns their ids."""
        with self._lock:
            rows = self._conn.execute("SELECT operation_id FROM operations WHERE state='running'").fetchall()
        requeued = [row["operation_id"] for row in rows]
        if requeued:
            self.requeue(requeued, refund_attempt=True)
        return requeued

    def prune_operations(self, keep: int = KEEP_FINISHED_OPERATIONS) -> int:
        """Drop completed and terminated operations beyond the newest `keep` finished ones (a
        memory keeps its graph state; only the record of how it got there goes). Returns the count."""
        with self._transaction() as cur:
            cur.execute(
                "DELETE FROM operations WHERE state IN ('completed', 'terminated') AND rowid NOT IN ("
                "SELECT rowid FROM operations WHERE state IN ('completed', 'failed', 'terminated') "
                "ORDER BY rowid DESC LIMIT ?)",
                (keep,),
            )
            return cur.rowcount


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT under the store's lock; rollback on error."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __enter__(self) -> sqlite3.Cursor:
        self._store._lock.acquire()
        try:  # a BEGIN that fails (database locked, disk I/O) must not keep the lock
            self._cur = self._store._conn.cursor()
            self._cur.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._store._lock.release()
            raise
        return self._cur

    def __exit__(self, exc_type: object, *_: object) -> None:
        try:
            self._cur.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self._store._lock.release()


STORE_PURPOSE = "store"


def check_store_sealed(paths: WorkspacePaths) -> None:
    """Raise INVALID_WORKSPACE_PATH, before one memory is read, unless flowbaby created the existing
    store in this workspace folder (or the user adopted it): a repository that commits
    `.flowbaby/memories.sqlite` must not have its memories briefed as the user's own."""
    check_sealed_db(paths.store_db, STORE_PURPOSE, paths.root, "memory store", "none of its memories are read")


def seal_store(paths: WorkspacePaths) -> str:
    """Seal the store for this folder (giving it an id if it has none): at creation, and by `flowbaby adopt`."""
    return seal_db(paths.store_db, STORE_PURPOSE, paths.root)


def open_sealed_store(paths: WorkspacePaths, *, check: bool = False) -> MemoryStore:
    """The workspace's store: an existing one only if sealed (check_store_sealed); a new one (or an
    empty file: a first start cut short) is sealed before anything is stored in it."""
    if not new_sealed_db(paths.store_db, STORE_PURPOSE, paths.root):
        check_store_sealed(paths)
    return MemoryStore(paths.store_db, check=check)
