"""The team backend of the memory store: memory versions, supersession and the operation
ledger in Postgres, one schema per namespace (`flowbaby_<namespace>`), so that no query of one
workspace can name another's rows.

Same behaviour as graph.core.store.MemoryStore (the unit tests run over both). Differences that
matter: staging takes a per-topic transaction lock, so two processes staging the same topic get
consecutive versions; the serving process holds its namespace with a session advisory lock (one
serving process per namespace until operations are leased, see INGEST_CONTRACT.md 15). Schema
migrations are the versioned SQL below, applied at open under a database-wide advisory lock.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from graph.core.contract import BackgroundErrorCode, ErrorCode, FlowbabyError, MemoryStatus, OperationStatus, utc_now
from graph.core.store import (
    KEEP_FINISHED_OPERATIONS,
    Memory,
    insert_memory_sql,
    memory_uuid,
    memory_values,
    new_operation_id,
    row_to_memory,
    row_to_operation,
    usage_summary,
)

MIGRATION_LOCK = 0x466C6F77  # "Flow": one database-wide key; migrations take milliseconds
OWNER_LOCK = 0x62616279  # "baby", with hashtext(namespace): the namespace's serving process
TOPIC_LOCK = 0x746F7063  # "topc", with hashtext(topic id): staging a topic, per transaction
CONNECT_TIMEOUT_SEC = 5

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "memory versions and the operation ledger",
        """
        CREATE TABLE memories (
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
            UNIQUE (topic_id, version)
        );
        CREATE INDEX memories_graph_state ON memories (graph_state);
        CREATE INDEX memories_operation ON memories (operation_id);
        CREATE INDEX memories_staged ON memories (staged_at);
        CREATE TABLE operations (
            seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
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
        CREATE INDEX operations_state ON operations (state);
        """,
    ),
    (
        2,
        "memory chunk vectors (pgvector, HNSW on inner product; the bundled MiniLM's 384 dimensions)",
        """
        CREATE TABLE memory_chunks (
            memory_id TEXT NOT NULL,
            topic_id TEXT NOT NULL,
            field TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            text TEXT NOT NULL,
            embedding vector(384) NOT NULL,
            PRIMARY KEY (memory_id, chunk_index)
        );
        CREATE INDEX memory_chunks_hnsw ON memory_chunks USING hnsw (embedding vector_ip_ops);
        """,
    ),
]
"""(version, name, SQL) in order. Append only: an applied migration is never edited."""


def schema_name(namespace: str) -> str:
    return f"flowbaby_{namespace}"


def _where(url: str) -> tuple[str, str]:
    """(host:port/database, user) of a URL for messages; never the password."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "(unparsable URL)", ""
    host = str(info.get("host") or "localhost")
    return f"{host}:{info.get('port') or 5432}/{info.get('dbname') or ''}", str(info.get("user") or "")


def connect(url: str) -> psycopg.Connection[dict[str, Any]]:
    """An autocommit connection, or a FlowbabyError that names the cause (never the password)."""
    where, user = _where(url)
    try:
        return psycopg.connect(
            url,
            autocommit=True,
            row_factory=dict_row,
            connect_timeout=CONNECT_TIMEOUT_SEC,
            application_name=f"flowbaby {socket.gethostname()} pid {os.getpid()}",
        )
    except psycopg.OperationalError as exc:
        text = str(exc)
        if "password authentication failed" in text or "no password supplied" in text:
            cause = f'the server rejected the password of user "{user}"'
        elif "does not exist" in text and "database" in text:
            cause = "the database does not exist"
        elif "Connection refused" in text or "timeout expired" in text or "could not translate host" in text:
            cause = "no server answers there (is it running, and is the host and port right?)"
        else:
            cause = text.strip().splitlines()[-1] if text.strip() else type(exc).__name__
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR, f"Cannot connect to the team database {where}: {cause}", database=where
        ) from None


def require_pgvector(conn: psycopg.Connection[Any], where: str) -> None:
    """The team backend keeps vectors in pgvector; a database without it is refused up front."""
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except (psycopg.errors.FeatureNotSupported, psycopg.errors.UndefinedFile) as exc:
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f"The team database {where} has no pgvector extension ({str(exc).strip().splitlines()[0]}): "
            "install pgvector on the server (e.g. the postgresql-18-pgvector package), then start again",
        ) from None
    except psycopg.errors.InsufficientPrivilege:
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f"The team database {where} has no pgvector extension and this user may not create it: "
            "ask its administrator to run CREATE EXTENSION vector in that database",
        ) from None


def migrate(conn: psycopg.Connection[Any], namespace: str) -> list[int]:
    """Bring the namespace's schema to the newest version (pgvector first); returns the versions applied here.
    Two processes starting together: the second waits on the lock, then finds nothing to do."""
    schema = sql.Identifier(schema_name(namespace))
    applied_here: list[int] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        require_pgvector(conn, _where(conn.info.dsn)[0])
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {}.schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), applied_by TEXT NOT NULL)"
            ).format(schema)
        )
        done = {
            row["version"] for row in conn.execute(sql.SQL("SELECT version FROM {}.schema_migrations").format(schema))
        }
        for version, name, statements in MIGRATIONS:
            if version in done:
                continue
            with conn.transaction():
                conn.execute(sql.SQL("SET LOCAL search_path TO {}, public").format(schema))
                conn.execute(statements.encode())
                conn.execute(
                    sql.SQL("INSERT INTO {}.schema_migrations (version, name, applied_by) VALUES (%s, %s, %s)").format(
                        schema
                    ),
                    (version, name, f"{socket.gethostname()} pid {os.getpid()}"),
                )
            applied_here.append(version)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return applied_here


class PostgresMemoryStore:
    """MemoryStore's behaviour over one connection to the namespace's schema (one lock, as there)."""

    def __init__(self, url: str, namespace: str, *, owner: bool = True) -> None:
        self.namespace = namespace
        self._url = url
        self._where = _where(url)[0]
        self._owner = owner
        self._lock = threading.Lock()
        self._conn = connect(url)
        try:
            self.migrated = migrate(self._conn, namespace)
            if owner:
                self._hold_namespace()
            self._use_schema()
        except BaseException:
            self._conn.close()
            raise

    def _use_schema(self) -> None:
        self._conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(self.namespace))))

    def _hold_namespace(self) -> None:
        held = self._conn.execute(
            "SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS held", (OWNER_LOCK, self.namespace)
        ).fetchone()
        if held and held["held"]:
            return
        holder = self._conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = hashtext(%s)::oid AND l.objsubid = 2",
            (OWNER_LOCK, self.namespace),
        ).fetchone()
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            f'The namespace "{self.namespace}" on {self._where} is served by another flowbaby process '
            f"({holder['application_name'] if holder else 'unknown'}); one server per namespace for now",
            namespace=self.namespace,
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _cursor(self, *, transaction: bool = False) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """The connection under the lock; a connection the server dropped is opened again once
        (a namespace's holder must re-take its lock: another process may have taken it meanwhile)."""
        with self._lock:
            if self._conn.broken or self._conn.closed:
                self._conn = connect(self._url)
                if self._owner:
                    self._hold_namespace()
                self._use_schema()
            if transaction:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    yield cur
            else:
                with self._conn.cursor() as cur:
                    yield cur

    # -- staging -----------------------------------------------------------------
    def stage(self, memory: Memory, operation_id: str) -> Memory:
        """Store a new version of the topic, supersede the previous one, queue its operation."""
        with self._cursor(transaction=True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TOPIC_LOCK, memory.topic_id))
            row = cur.execute(
                "SELECT memory_id, version FROM memories WHERE topic_id = %s ORDER BY version DESC LIMIT 1",
                (memory.topic_id,),
            ).fetchone()
            memory.version = (row["version"] + 1) if row else 1
            memory.memory_id = memory_uuid(memory.topic_id, memory.version)
            memory.supersedes = row["memory_id"] if row else None
            memory.operation_id = operation_id
            if row:
                cur.execute(
                    "UPDATE memories SET status = %s WHERE topic_id = %s AND version < %s",
                    (MemoryStatus.SUPERSEDED.value, memory.topic_id, memory.version),
                )
            cur.execute(insert_memory_sql("%s"), memory_values(memory, operation_id))
            cur.execute(
                "INSERT INTO operations (operation_id, state, memory_ids, created_at) VALUES (%s, 'pending', %s, %s)",
                (operation_id, json.dumps([memory.memory_id]), utc_now()),
            )
        return memory

    # -- memories ----------------------------------------------------------------
    def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        if not memory_ids:
            return []
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories WHERE memory_id = ANY(%s)", (memory_ids,)).fetchall()
        by_id = {row["memory_id"]: row_to_memory(row) for row in rows}
        return [by_id[m] for m in memory_ids if m in by_id]

    def topic_versions(self, topic_id: str) -> list[Memory]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories WHERE topic_id = %s ORDER BY version", (topic_id,)).fetchall()
        return [row_to_memory(row) for row in rows]

    def iter_memories(self) -> Iterator[Memory]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories ORDER BY staged_at").fetchall()
        return (row_to_memory(row) for row in rows)

    def memory_states(self) -> dict[str, tuple[str, str]]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT memory_id, status, graph_state FROM memories").fetchall()
        return {row["memory_id"]: (row["status"], row["graph_state"]) for row in rows}

    def set_graph_state(self, memory_ids: list[str], state: str) -> None:
        with self._cursor(transaction=True) as cur:
            cur.execute("UPDATE memories SET graph_state = %s WHERE memory_id = ANY(%s)", (state, memory_ids))

    def set_status(self, memory_id: str, status: MemoryStatus) -> None:
        with self._cursor(transaction=True) as cur:
            cur.execute("UPDATE memories SET status = %s WHERE memory_id = %s", (status.value, memory_id))

    def counts(self) -> dict[str, int]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT graph_state, COUNT(*) AS n FROM memories GROUP BY graph_state").fetchall()
        by_state = {row["graph_state"]: int(row["n"]) for row in rows}
        return {"memories": sum(by_state.values()), **{f"graph_{k}": v for k, v in by_state.items()}}

    # -- operation ledger ----------------------------------------------------------
    def operations(self, states: tuple[str, ...] | None = None) -> list[OperationStatus]:
        with self._cursor() as cur:
            if states:
                query = "SELECT * FROM operations WHERE state = ANY(%s) ORDER BY created_at, seq"
                rows = cur.execute(query, (list(states),)).fetchall()
            else:
                rows = cur.execute("SELECT * FROM operations ORDER BY created_at, seq").fetchall()
        return self._with_topics(rows)

    def operation(self, operation_id: str) -> OperationStatus | None:
        with self._cursor() as cur:
            row = cur.execute("SELECT * FROM operations WHERE operation_id = %s", (operation_id,)).fetchone()
        return self._with_topics([row])[0] if row else None

    def _with_topics(self, rows: list[dict[str, Any]]) -> list[OperationStatus]:
        """One query for the topics of every listed operation (a round trip each would be slow here)."""
        ids = [json.loads(row["memory_ids"]) for row in rows]
        topics = {m.memory_id: m.topic_id for m in self.get_memories(sorted({m for op in ids for m in op}))}
        return [
            row_to_operation(row, [topics[m] for m in op if m in topics]) for row, op in zip(rows, ids, strict=True)
        ]

    def count_operations(self, states: tuple[str, ...] = ("pending", "running")) -> int:
        with self._cursor() as cur:
            row = cur.execute("SELECT COUNT(*) AS n FROM operations WHERE state = ANY(%s)", (list(states),)).fetchone()
        return int(row["n"]) if row else 0

    def llm_usage(self) -> dict[str, Any]:
        """LLM work summed over every batch, each batch once (see MemoryStore.llm_usage)."""
        whole = ("llmCalls", "llmFailedCalls", "llmPromptTokens", "llmCompletionTokens")
        fields = (*whole, "llmSec", "llmCostUsd")
        per_batch = ", ".join(f"MAX((metrics::jsonb->>'{f}')::numeric) AS f{i}" for i, f in enumerate(fields))
        totals = ", ".join(
            f"SUM(f{i})::{'bigint' if f in whole else 'float8'} AS {f.lower()}" for i, f in enumerate(fields)
        )
        query = (
            f"SELECT COUNT(*) AS batches, {totals} FROM (SELECT {per_batch} FROM operations "
            "WHERE metrics::jsonb->>'llmCalls' IS NOT NULL "
            "GROUP BY COALESCE(metrics::jsonb->>'batchId', operation_id)) AS per_batch"
        )
        with self._cursor() as cur:
            row = cur.execute(query.encode()).fetchone()
        assert row is not None
        return usage_summary(
            row["batches"],
            row["llmcalls"],
            row["llmfailedcalls"],
            row["llmprompttokens"],
            row["llmcompletiontokens"],
            row["llmsec"],
            row["llmcostusd"],
        )

    def mark_running(self, operation_ids: list[str]) -> None:
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE operations SET state='running', started_at=%s, attempts=attempts+1"
                " WHERE operation_id = ANY(%s)",
                (utc_now(), operation_ids),
            )

    def requeue(self, operation_ids: list[str], *, refund_attempt: bool = False) -> None:
        """Back to pending: after a worker crash the attempt counts; parked at shutdown it does not."""
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE operations SET state='pending', started_at=NULL, attempts=GREATEST(0, attempts-%s)"
                " WHERE operation_id = ANY(%s)",
                (1 if refund_attempt else 0, operation_ids),
            )

    def finish(
        self,
        operation_ids: list[str],
        state: str,
        *,
        error_code: str | None = None,
        error: str | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> None:
        """Close operations and move their memories' graph state in one transaction."""
        graph_state = {"completed": "indexed", "failed": "failed"}.get(state, "pending")
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE operations SET state=%s, finished_at=%s, error_code=%s, error=%s, metrics=%s"
                " WHERE operation_id = ANY(%s)",
                (state, utc_now(), error_code, error, json.dumps(metrics or {}), operation_ids),
            )
            cur.execute(
                "UPDATE memories SET graph_state=%s WHERE operation_id = ANY(%s) AND graph_state != 'indexed'",
                (graph_state, operation_ids),
            )

    def memories_without_graph(self) -> list[str]:
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT m.memory_id FROM memories m LEFT JOIN operations o ON o.operation_id = m.operation_id "
                "WHERE m.graph_state != 'indexed' AND (o.state IS NULL OR o.state NOT IN ('pending', 'running')) "
                "ORDER BY m.staged_at"
            ).fetchall()
        return [row["memory_id"] for row in rows]

    def queue_operation(self, memory_ids: list[str]) -> str:
        """One new pending operation for these memories (repair)."""
        operation_id = new_operation_id()
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "INSERT INTO operations (operation_id, state, memory_ids, created_at) VALUES (%s, 'pending', %s, %s)",
                (operation_id, json.dumps(memory_ids), utc_now()),
            )
            cur.execute(
                "UPDATE memories SET operation_id=%s, graph_state='pending' WHERE memory_id = ANY(%s)",
                (operation_id, memory_ids),
            )
        return operation_id

    def recover_interrupted(self) -> list[str]:
        """At start-up: running operations become terminated and their memories are queued again
        (safe here because the namespace has one serving process, which holds it)."""
        requeued: list[str] = []
        now = utc_now()
        with self._cursor(transaction=True) as cur:
            rows = cur.execute("SELECT operation_id, memory_ids FROM operations WHERE state='running' ORDER BY seq")
            for row in rows.fetchall():
                cur.execute(
                    "UPDATE operations SET state='terminated', finished_at=%s, error_code=%s, "
                    "error='The process stopped while this operation was running; its memories were queued again' "
                    "WHERE operation_id=%s",
                    (now, BackgroundErrorCode.WORKER_CRASHED.value, row["operation_id"]),
                )
                new_id = new_operation_id()
                cur.execute(
                    "INSERT INTO operations (operation_id, state, memory_ids, created_at) "
                    "VALUES (%s, 'pending', %s, %s)",
                    (new_id, row["memory_ids"], now),
                )
                cur.execute(
                    "UPDATE memories SET operation_id=%s, graph_state='pending' WHERE memory_id = ANY(%s)",
                    (new_id, json.loads(row["memory_ids"])),
                )
                requeued.append(new_id)
        return requeued

    def prune_operations(self, keep: int = KEEP_FINISHED_OPERATIONS) -> int:
        """Drop completed and terminated operations beyond the newest `keep` finished ones."""
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "DELETE FROM operations WHERE state IN ('completed', 'terminated') AND seq NOT IN ("
                "SELECT seq FROM operations WHERE state IN ('completed', 'failed', 'terminated') "
                "ORDER BY seq DESC LIMIT %s)",
                (keep,),
            )
            return cur.rowcount

    def import_memories(self, memories: list[Memory]) -> tuple[list[str], list[str]]:
        """`flowbaby migrate`: insert versions exactly as given (ids, versions, status, timestamps), with
        no operation and graph state pending; a version already here is left alone. Returns
        (inserted ids, ids already present), in the given order."""
        inserted: list[str] = []
        present: list[str] = []
        with self._cursor(transaction=True) as cur:
            for memory in memories:
                cur.execute(insert_memory_sql("%s") + " ON CONFLICT DO NOTHING", memory_values(memory, None))
                (inserted if cur.rowcount else present).append(memory.memory_id)
        return inserted, present

    def unqueued_memories(self) -> list[str]:
        """Versions no operation ever covered: imported ones whose graph build is not queued yet."""
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT memory_id FROM memories WHERE operation_id IS NULL ORDER BY staged_at"
            ).fetchall()
        return [row["memory_id"] for row in rows]
