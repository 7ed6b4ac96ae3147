"""What only the team backend has, on the session's real Postgres server: namespaces that never
share a row, one migration when processes start together, one serving process per namespace,
concurrent staging of one topic, and start-up failures that name their cause."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import psycopg
import pytest

from graph.core.contract import FlowbabyError, MemoryStatus
from graph.core.pg_pool import CHECK_IDLE_SEC
from graph.core.pg_store import MIGRATIONS, PostgresMemoryStore, schema_name
from graph.core.store import memory_uuid, new_operation_id
from tests.postgres import PostgresServer, free_port
from tests.unit.fakes import memory


def namespace() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def test_namespaces_never_share_a_row(postgres: PostgresServer) -> None:
    alpha, beta = PostgresMemoryStore(postgres.url(), namespace()), PostgresMemoryStore(postgres.url(), namespace())
    try:
        a1 = alpha.stage(memory("", topic_id="cache", context="alpha's cache"), new_operation_id())
        a2 = alpha.stage(memory("", topic_id="cache", context="alpha's cache again"), new_operation_id())
        b1 = beta.stage(memory("", topic_id="cache", context="beta's cache"), new_operation_id())
        assert (a2.version, b1.version) == (2, 1)  # versions count per namespace
        assert a1.memory_id == b1.memory_id == memory_uuid("cache", 1)  # same id, separate rows
        assert [m.context for m in beta.iter_memories()] == ["beta's cache"]
        assert beta.get_memories([a1.memory_id])[0].status is MemoryStatus.ACTIVE  # alpha's v1 is superseded
        assert [m.version for m in alpha.topic_versions("cache")] == [1, 2]
        assert (alpha.counts()["memories"], beta.counts()["memories"]) == (2, 1)
        assert (len(alpha.operations()), len(beta.operations())) == (2, 1)
        assert beta.operation(a2.operation_id or "") is None
        beta.finish([b1.operation_id or ""], "completed")
        assert alpha.get_memories([a1.memory_id])[0].graph_state == "pending"  # beta's finish reaches only beta
    finally:
        alpha.close()
        beta.close()


def test_a_namespace_has_one_serving_process(postgres: PostgresServer) -> None:
    name = namespace()
    first = PostgresMemoryStore(postgres.url(), name)
    with pytest.raises(FlowbabyError, match=rf'"{name}" .* served by another flowbaby process \(flowbaby .* pid'):
        PostgresMemoryStore(postgres.url(), name)
    worker = PostgresMemoryStore(postgres.url(), name, owner=False)  # the graph worker child reads alongside
    staged = first.stage(memory("", topic_id="a"), new_operation_id())
    assert [m.memory_id for m in worker.iter_memories()] == [staged.memory_id]
    worker.close()
    first.close()  # the lock goes with the connection: the next server takes over
    PostgresMemoryStore(postgres.url(), name).close()


def test_concurrent_staging_of_one_topic_gives_consecutive_versions(postgres: PostgresServer) -> None:
    name = namespace()
    stores = [PostgresMemoryStore(postgres.url(), name, owner=False) for _ in range(2)]

    def stage_many(store: PostgresMemoryStore) -> None:
        for _ in range(15):
            store.stage(memory("", topic_id="hot"), new_operation_id())

    threads = [threading.Thread(target=stage_many, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    versions = stores[0].topic_versions("hot")
    assert [m.version for m in versions] == list(range(1, 31))
    assert [m.status for m in versions].count(MemoryStatus.ACTIVE) == 1 and versions[-1].status is MemoryStatus.ACTIVE
    for store in stores:
        store.close()


MIGRATE_ONCE = textwrap.dedent(
    """
    import json, sys, time
    from graph.core.pg_store import PostgresMemoryStore
    url, name, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
    time.sleep(max(0.0, start_at - time.time()))
    store = PostgresMemoryStore(url, name, owner=False)
    print(json.dumps(store.migrated))
    store.close()
    """
)


def test_processes_starting_together_migrate_once(postgres: PostgresServer) -> None:
    """A fresh database (no pgvector, no schema yet) and three processes that open the same
    namespace at the same instant: one creates the extension and applies every migration."""
    url, name = postgres.create_database(), namespace()
    start_at = time.time() + 3.0  # after the interpreters have imported psycopg
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MIGRATE_ONCE, url, name, str(start_at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in results]
    applied = sorted(json.loads(out) for out, _ in results)
    assert applied == [[], [], [version for version, _, _ in MIGRATIONS]]
    with psycopg.connect(url) as conn:
        rows = conn.execute(f'SELECT version FROM "{schema_name(name)}".schema_migrations'.encode()).fetchall()
        assert [row[0] for row in rows] == [version for version, _, _ in MIGRATIONS]
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (1,)


def test_a_wrong_password_names_the_cause(postgres: PostgresServer) -> None:
    with pytest.raises(FlowbabyError) as refused:
        PostgresMemoryStore(postgres.url(password="not-the-password"), namespace())
    assert 'rejected the password of user "flowbaby"' in refused.value.message
    assert "not-the-password" not in refused.value.message


def test_a_missing_database_names_the_cause(postgres: PostgresServer) -> None:
    with pytest.raises(FlowbabyError, match="the database does not exist"):
        PostgresMemoryStore(postgres.url("no_such_db"), namespace())


def test_a_database_without_pgvector_names_the_cause(postgres: PostgresServer) -> None:
    """A fresh database on a server whose extension search path holds no pgvector
    (PostgreSQL 18's extension_control_path stands in for a server without the package)."""
    fresh = postgres.create_database().rsplit("/", 1)[1]
    url = postgres.url(fresh, options="-c extension_control_path=/nonexistent")
    with pytest.raises(FlowbabyError) as refused:
        PostgresMemoryStore(url, namespace())
    assert "has no pgvector extension" in refused.value.message
    assert 'extension "vector" is not available' in refused.value.message


def test_a_server_that_is_down_names_the_cause() -> None:
    url = f"postgresql://flowbaby:pw@127.0.0.1:{free_port()}/postgres"
    began = time.monotonic()
    with pytest.raises(FlowbabyError, match="no server answers there"):
        PostgresMemoryStore(url, namespace())
    assert time.monotonic() - began < 5


def test_after_a_server_restart_the_next_call_reconnects(postgres: PostgresServer) -> None:
    """The pool's connections died with the server: the next call checks its idle connection, gets
    a new one and succeeds, and the serving process takes its namespace again. Nothing staged is lost.
    (A call within CHECK_IDLE_SEC of the last one answers DATABASE_UNAVAILABLE instead: tests/test_pg_faults.py.)"""
    store = PostgresMemoryStore(postgres.url(), namespace())
    staged = store.stage(memory("", topic_id="kept"), new_operation_id())
    postgres.restart()
    time.sleep(CHECK_IDLE_SEC)
    assert [m.memory_id for m in store.iter_memories()] == [staged.memory_id]
    store.stage(memory("", topic_id="after"), new_operation_id())
    assert store.counts()["memories"] == 2
    with pytest.raises(FlowbabyError, match="served by another flowbaby process"):
        PostgresMemoryStore(postgres.url(), store.namespace)
    store.close()
