"""The team backend of the memory store: memory versions, supersession and the operation
ledger in Postgres, one schema per namespace (`flowbaby_<namespace>`), so that no query of one
workspace can name another's rows.

Same behaviour as graph.backends.embedded.memory_store.MemoryStore (the unit tests run over both). Differences that
matter: staging takes a per-topic transaction lock, so two processes staging the same topic get
consecutive versions; any number of servers share a namespace: they claim operations with
FOR UPDATE SKIP LOCKED and hold each claimed one by a lease that the running batch renews, and
an operation whose lease ran out (its server died) is claimed again by any server (see
INGEST_CONTRACT.md 15). Staging checks the namespace's backlog and claiming its running limit under
transaction advisory locks, so the limits hold across servers. Staging, new vectors and status
changes are announced with NOTIFY on the namespace's channel (graph.backends.team.events listens).
The namespace's schema and its migrations are graph.backends.team.schema.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Unpack

import psycopg

from graph.backends.memory_store import WITHOUT_GRAPH, Outcome, closing, queue_pending, stage_version
from graph.backends.team.pool import acquire_pool, release_pool
from graph.backends.team.schema import configure_connection, connect, describe_url, migrate, notify
from graph.core.contract import (
    BackgroundErrorCode,
    MemoryFilter,
    MemoryStatus,
    OperationStatus,
    utc_now,
)
from graph.core.memories import (
    FORGET_STEPS,
    KEEP_FINISHED_OPERATIONS,
    BacklogFull,
    ForgetEntry,
    Memory,
    insert_memory_sql,
    memory_values,
    new_operation_id,
    revived_versions,
    row_to_memory,
    row_to_operation,
    scrub_operations,
    usage_summary,
)
from graph.core.memory_query import Page, page_sql, topics_sql

BACKLOG_LOCK = 0x62616279  # "baby", with hashtext(namespace): the backlog check and insert of staging
CLAIM_LOCK = 0x636C6D73  # "clms", with hashtext(namespace): the running-limit check and claim
TOPIC_LOCK = 0x746F7063  # "topc", with hashtext(topic id): staging a topic, per transaction
MAX_CLAIMS = 3
"""An operation whose lease ran out this many times (every server that took it died) fails with
WORKER_CRASHED instead of being claimed again: it may be what kills them. `repair` queues it again."""


class PostgresMemoryStore:
    """MemoryStore's behaviour over the namespace's connection pool (graph.backends.team.pool), shared by
    every server of the namespace. `owner`: a serving process, which claims operations; the graph
    worker child (False) only reads."""

    shared = True

    def __init__(self, url: str, namespace: str, *, owner: bool = True) -> None:
        self.namespace = namespace
        self._url = url
        self._where = describe_url(url)[0]
        self._owner = owner
        self.holder = f"{socket.gethostname()} pid {os.getpid()} {uuid.uuid4().hex[:8]}"
        """Who holds the leases this store claims (one per open store, so a restart is another holder)."""
        conn = connect(url)
        try:
            self.migrated = migrate(conn, namespace)
        finally:
            conn.close()
        self._pool = acquire_pool(url, namespace, self._where, configure_connection(namespace), connect)

    def close(self) -> None:
        release_pool(self._url, self.namespace)

    @contextmanager
    def _cursor(self, *, transaction: bool = False) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """A pooled connection for one call (DATABASE_BUSY / DATABASE_UNAVAILABLE when there is none)."""
        with self._pool.connection() as conn:
            if transaction:
                with conn.transaction(), conn.cursor() as cur:
                    yield cur
            else:
                with conn.cursor() as cur:
                    yield cur

    # -- staging -----------------------------------------------------------------
    def stage(self, memory: Memory, operation_id: str, *, capacity: int | None = None) -> Memory:
        """Store a new version of the topic, supersede the previous one, queue its operation.
        `capacity`: raise BacklogFull instead when the namespace has that many unfinished operations,
        counted under the namespace's backlog lock so that two servers cannot both pass."""
        with self._cursor(transaction=True) as cur:
            if capacity is not None:
                cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (BACKLOG_LOCK, self.namespace))
                unfinished = cur.execute("SELECT COUNT(*) AS n FROM operations WHERE state IN ('pending', 'running')")
                if int(unfinished.fetchone()["n"]) >= capacity:  # type: ignore[index]
                    raise BacklogFull(capacity)
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TOPIC_LOCK, memory.topic_id))
            stage_version(cur, "%s", memory, operation_id)
            notify(cur, self.namespace, "queued", [operation_id])
        return memory

    # -- memories ----------------------------------------------------------------
    def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        if not memory_ids:
            return []
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories WHERE memory_id = ANY(%s)", (memory_ids,)).fetchall()
        by_id = {row["memory_id"]: row_to_memory(row) for row in rows}
        return [by_id[m] for m in memory_ids if m in by_id]

    def newest_version(self, topic_id: str) -> Memory | None:
        """The topic's newest version alone (what a write checks before it stages: graph.core.provenance)."""
        with self._cursor() as cur:
            row = cur.execute(
                "SELECT * FROM memories WHERE topic_id = %s ORDER BY version DESC LIMIT 1", (topic_id,)
            ).fetchone()
        return None if row is None else row_to_memory(row)

    def topic_versions(self, topic_id: str) -> list[Memory]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories WHERE topic_id = %s ORDER BY version", (topic_id,)).fetchall()
        return [row_to_memory(row) for row in rows]

    def iter_memories(self) -> Iterator[Memory]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM memories ORDER BY staged_at").fetchall()
        return (row_to_memory(row) for row in rows)

    def list_page(self, query: MemoryFilter, page: Page) -> list[Memory]:
        statement, args = page_sql(query, page, "%s", postgres=True)
        with self._cursor() as cur:
            rows = cur.execute(statement.encode(), args).fetchall()
        return [row_to_memory(row) for row in rows]

    def matching_topics(self, query: MemoryFilter) -> list[str]:
        statement, args = topics_sql(query, "%s", postgres=True)
        with self._cursor() as cur:
            rows = cur.execute(statement.encode(), args).fetchall()
        return [row["topic_id"] for row in rows]

    def forget(self, forget_id: str, memory_ids: list[str], steps: tuple[str, ...] = FORGET_STEPS) -> None:
        """As MemoryStore.forget, in one transaction under the topics' staging locks (so a version
        staged meanwhile waits); lexical rows go with the memories (ON DELETE CASCADE), and the word
        counts are folded at once, so no count row names a word only forgotten memories held. Other
        servers hear `forgotten` on the namespace's channel."""
        forgotten = set(memory_ids)
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "INSERT INTO forget_journal (forget_id, memory_ids, pending, created_at) VALUES (%s, %s, %s, %s)",
                (forget_id, json.dumps(memory_ids), json.dumps(list(steps)), utc_now()),
            )
            topics = cur.execute(
                "SELECT memory_id, topic_id, version, status FROM memories WHERE topic_id IN "
                "(SELECT topic_id FROM memories WHERE memory_id = ANY(%s)) ORDER BY topic_id",
                (memory_ids,),
            ).fetchall()
            for topic in sorted({row["topic_id"] for row in topics}):
                cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (TOPIC_LOCK, topic))
            revive = revived_versions(topics, forgotten)
            cur.execute("DELETE FROM memories WHERE memory_id = ANY(%s)", (memory_ids,))
            cur.execute("SELECT lexical_fold(true)")
            if revive:
                cur.execute(
                    "UPDATE memories SET status = %s WHERE memory_id = ANY(%s)", (MemoryStatus.ACTIVE.value, revive)
                )
            updates, drops = scrub_operations(
                cur.execute("SELECT operation_id, state, memory_ids FROM operations").fetchall(), forgotten
            )
            for operation_id, ids in updates:
                cur.execute("UPDATE operations SET memory_ids = %s WHERE operation_id = %s", (ids, operation_id))
            if drops:
                cur.execute("DELETE FROM operations WHERE operation_id = ANY(%s)", (drops,))
            for start in range(0, len(memory_ids), 64):
                notify(cur, self.namespace, "forgotten", memory_ids[start : start + 64])

    def checkpoint(self) -> None:
        """Nothing to do: Postgres keeps no client-side log (see INGEST_CONTRACT.md 20.4)."""

    def forget_journal(self) -> list[ForgetEntry]:
        with self._cursor() as cur:
            rows = cur.execute("SELECT * FROM forget_journal ORDER BY seq").fetchall()
        return [ForgetEntry(r["forget_id"], json.loads(r["memory_ids"]), json.loads(r["pending"])) for r in rows]

    def forget_step_done(self, forget_id: str, step: str) -> None:
        with self._cursor(transaction=True) as cur:
            row = cur.execute(
                "SELECT pending FROM forget_journal WHERE forget_id = %s FOR UPDATE", (forget_id,)
            ).fetchone()
            if row is None:
                return
            left = [s for s in json.loads(row["pending"]) if s != step]
            if left:
                cur.execute(
                    "UPDATE forget_journal SET pending = %s WHERE forget_id = %s", (json.dumps(left), forget_id)
                )
            else:
                cur.execute("DELETE FROM forget_journal WHERE forget_id = %s", (forget_id,))

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
            notify(cur, self.namespace, "status", [memory_id], status=status.value)

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

    def claim(self, limit: int, lease_sec: float) -> list[OperationStatus]:
        """Up to `limit` operations for this server, oldest first: pending ones, and running ones whose
        lease ran out (their server died). Running, attempts counted, leased to this store until
        now + lease_sec. `limit` is the namespace's running limit: operations other servers hold
        under a live lease count against it (checked under the claim lock)."""
        if not self._owner:
            raise RuntimeError("only a serving process claims operations")
        with self._cursor(transaction=True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (CLAIM_LOCK, self.namespace))
            given_up = cur.execute(
                "UPDATE operations SET state='failed', finished_at=%s, error_code=%s, lease_until=NULL, error=%s "
                "WHERE state='running' AND lease_until < now() AND attempts >= %s RETURNING operation_id",
                (
                    utc_now(),
                    BackgroundErrorCode.WORKER_CRASHED.value,
                    f"Every server that ran this operation stopped before it ended ({MAX_CLAIMS} times)",
                    MAX_CLAIMS,
                ),
            ).fetchall()
            if given_up:
                cur.execute(
                    "UPDATE memories SET graph_state='failed' WHERE operation_id = ANY(%s) "
                    "AND graph_state != 'indexed'",
                    ([row["operation_id"] for row in given_up],),
                )
            live = cur.execute("SELECT COUNT(*) AS n FROM operations WHERE state='running' AND lease_until >= now()")
            free = limit - int(live.fetchone()["n"])  # type: ignore[index]
            if free <= 0:
                return []
            rows = cur.execute(
                "SELECT operation_id FROM operations WHERE state='pending' "
                "OR (state='running' AND COALESCE(lease_until, '-infinity') < now()) "
                "ORDER BY created_at, seq LIMIT %s FOR UPDATE SKIP LOCKED",
                (free,),
            ).fetchall()
            ids = [row["operation_id"] for row in rows]
            if not ids:
                return []
            cur.execute(
                "UPDATE operations SET state='running', started_at=%s, attempts=attempts+1, claimed_by=%s, "
                "lease_until=now() + make_interval(secs => %s) WHERE operation_id = ANY(%s)",
                (utc_now(), self.holder, lease_sec, ids),
            )
            claimed = cur.execute(
                "SELECT * FROM operations WHERE operation_id = ANY(%s) ORDER BY created_at, seq", (ids,)
            ).fetchall()
        return self._with_topics(claimed)

    def renew(self, operation_ids: list[str], lease_sec: float) -> list[str]:
        """Extend this store's leases; returns the operations it still holds (a server that stalled past
        its lease may find one claimed by another server)."""
        with self._cursor(transaction=True) as cur:
            rows = cur.execute(
                "UPDATE operations SET lease_until = now() + make_interval(secs => %s) "
                "WHERE operation_id = ANY(%s) AND state='running' AND claimed_by=%s RETURNING operation_id",
                (lease_sec, operation_ids, self.holder),
            ).fetchall()
        return [row["operation_id"] for row in rows]

    _NOT_HELD_ELSEWHERE = "NOT (state='running' AND claimed_by IS NOT NULL AND claimed_by <> %s)"
    """A running operation leased to another holder is not this store's to requeue or finish."""

    def requeue(self, operation_ids: list[str], *, refund_attempt: bool = False) -> None:
        """Back to pending: after a worker crash the attempt counts; parked at shutdown it does not."""
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE operations SET state='pending', started_at=NULL, attempts=GREATEST(0, attempts-%s), "
                f"claimed_by=NULL, lease_until=NULL WHERE operation_id = ANY(%s) AND {self._NOT_HELD_ELSEWHERE}",
                (1 if refund_attempt else 0, operation_ids, self.holder),
            )
            if cur.rowcount:
                notify(cur, self.namespace, "queued", operation_ids)

    def finish(self, operation_ids: list[str], state: str, **outcome: Unpack[Outcome]) -> None:
        """Close operations and move their memories' graph state in one transaction."""
        graph_state, error_code, error, metrics = closing(state, outcome)
        with self._cursor(transaction=True) as cur:
            closed = cur.execute(
                "UPDATE operations SET state=%s, finished_at=%s, error_code=%s, error=%s, metrics=%s, lease_until=NULL"
                f" WHERE operation_id = ANY(%s) AND {self._NOT_HELD_ELSEWHERE} RETURNING operation_id",
                (state, utc_now(), error_code, error, metrics, operation_ids, self.holder),
            ).fetchall()
            cur.execute(
                "UPDATE memories SET graph_state=%s WHERE operation_id = ANY(%s) AND graph_state != 'indexed'",
                (graph_state, [row["operation_id"] for row in closed]),
            )

    def memories_without_graph(self) -> list[str]:
        with self._cursor() as cur:
            rows = cur.execute(WITHOUT_GRAPH).fetchall()
        return [row["memory_id"] for row in rows]

    def queue_operation(self, memory_ids: list[str]) -> str:
        """One new pending operation for these memories (repair)."""
        operation_id = new_operation_id()
        with self._cursor(transaction=True) as cur:
            queue_pending(cur, "%s", operation_id, memory_ids)
            cur.execute(
                "UPDATE memories SET operation_id=%s, graph_state='pending' WHERE memory_id = ANY(%s)",
                (operation_id, memory_ids),
            )
        return operation_id

    def queue_operations(self, groups: list[list[str]]) -> list[str]:
        """queue_operation for each group, in one transaction."""
        operation_ids = [new_operation_id() for _ in groups]
        now = utc_now()
        with self._cursor(transaction=True) as cur:
            cur.executemany(
                "INSERT INTO operations (operation_id, state, memory_ids, created_at) VALUES (%s, 'pending', %s, %s)",
                [(op, json.dumps(ids), now) for op, ids in zip(operation_ids, groups, strict=True)],
            )
            for op, ids in zip(operation_ids, groups, strict=True):
                cur.execute(
                    "UPDATE memories SET operation_id=%s, graph_state='pending' WHERE memory_id = ANY(%s)", (op, ids)
                )
            if operation_ids:
                notify(cur, self.namespace, "queued", operation_ids[:64])
        return operation_ids

    def recover_interrupted(self) -> list[str]:
        """At start-up: running operations that no server holds by a lease (left by a version without
        leases, or marked running without a claim) go back to pending under the same ids, the attempt
        refunded, as on the embedded store. Leased ones are never touched here: a live lease is another
        server's, and an expired one is claimed again, under the same id, by whichever server claims next."""
        with self._cursor(transaction=True) as cur:
            rows = cur.execute(
                "UPDATE operations SET state='pending', started_at=NULL, attempts=GREATEST(0, attempts-1) "
                "WHERE operation_id IN (SELECT operation_id FROM operations WHERE state='running' "
                "AND lease_until IS NULL ORDER BY seq FOR UPDATE SKIP LOCKED) RETURNING operation_id"
            )
            requeued = [row["operation_id"] for row in rows.fetchall()]
            if requeued:
                notify(cur, self.namespace, "queued", requeued)
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
            cur.execute("SELECT lexical_fold(true)")
        return inserted, present

    def supersede_older(self, topic_ids: list[str]) -> None:
        """As MemoryStore.supersede_older."""
        with self._cursor(transaction=True) as cur:
            cur.execute(
                "UPDATE memories m SET status = %s WHERE m.topic_id = ANY(%s) AND m.status != %s "
                "AND m.version < (SELECT MAX(n.version) FROM memories n WHERE n.topic_id = m.topic_id)",
                (MemoryStatus.SUPERSEDED.value, topic_ids, MemoryStatus.SUPERSEDED.value),
            )

    def unqueued_memories(self) -> list[str]:
        """Versions no operation ever covered: imported ones whose graph build is not queued yet."""
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT memory_id FROM memories WHERE operation_id IS NULL ORDER BY staged_at"
            ).fetchall()
        return [row["memory_id"] for row in rows]
