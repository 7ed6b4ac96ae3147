"""What only the team backend has, on the session's real Postgres server: namespaces that never
share a row, one migration when processes start together, leases and re-claim across servers, the backlog
limit across servers, concurrent staging of one topic, and start-up failures that name their cause."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import psycopg
import pytest

from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.pool import CHECK_IDLE_SEC
from graph.backends.team.schema import MIGRATIONS, schema_name
from graph.core.contract import FlowbabyError, MemoryStatus
from graph.core.memories import BacklogFull, memory_uuid, new_operation_id
from tests.support.fakes import memory
from tests.support.postgres import PostgresServer, free_port


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


def test_a_dead_servers_lease_runs_out_and_another_server_finishes_its_operation(postgres: PostgresServer) -> None:
    name = namespace()
    a, b = PostgresMemoryStore(postgres.url(), name), PostgresMemoryStore(postgres.url(), name)
    worker = PostgresMemoryStore(postgres.url(), name, owner=False)  # the graph worker child reads alongside
    try:
        ops = [a.stage(memory("", topic_id=f"t{i}"), new_operation_id()).operation_id for i in range(3)]
        assert [op.operationId for op in a.claim(2, lease_sec=0.5)] == ops[:2]
        assert b.claim(2, lease_sec=30) == []  # two running in the namespace: the limit holds across servers
        assert a.renew(ops[:2], lease_sec=0.5) == ops[:2]
        assert b.recover_interrupted() == []  # a live lease is never taken at start-up
        time.sleep(0.6)  # a stops renewing (it died): its leases run out
        taken = b.claim(2, lease_sec=30)
        assert [(op.operationId, op.status, op.attempts) for op in taken] == [
            (ops[0], "running", 2),
            (ops[1], "running", 2),
        ]
        assert a.renew(ops[:2], lease_sec=30) == []  # a (only stalled) learns it lost them
        a.finish(ops[:2], "failed", error_code="X")  # ... and its late finish changes nothing
        assert [a.operation(op).status for op in ops[:2]] == ["running", "running"]  # type: ignore[union-attr]
        b.finish(ops[:2], "completed")
        assert [a.operation(op).status for op in ops[:2]] == ["completed", "completed"]  # type: ignore[union-attr]
        assert [m.graph_state for m in worker.get_memories(a.operation(ops[0]).memoryIds)] == ["indexed"]  # type: ignore[union-attr]
        assert [op.operationId for op in a.claim(2, lease_sec=30)] == ops[2:]
        with pytest.raises(RuntimeError):
            worker.claim(1, lease_sec=30)
    finally:
        for store in (a, b, worker):
            store.close()


def test_servers_claiming_together_never_take_one_operation_twice(postgres: PostgresServer) -> None:
    """FOR UPDATE SKIP LOCKED under the claim lock: four stores claim 200 operations one at a time
    and finish each; every operation is claimed exactly once. Prints the claim throughput."""
    name = namespace()
    stores = [PostgresMemoryStore(postgres.url(), name) for _ in range(4)]
    for i in range(200):
        stores[0].stage(memory("", topic_id=f"t{i}"), new_operation_id())
    claimed: list[list[str]] = [[] for _ in stores]

    def work(index: int) -> None:
        store = stores[index]
        while batch := store.claim(1, lease_sec=30):
            claimed[index].extend(op.operationId for op in batch)
            store.finish([op.operationId for op in batch], "completed")

    began = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    every = [op for ops in claimed for op in ops]
    assert len(every) == len(set(every)) == 200
    assert stores[0].count_operations() == 0
    print(f"claim+finish: {200 / elapsed:.0f} operations/s over 4 stores; per store {[len(c) for c in claimed]}")
    for store in stores:
        store.close()


def test_the_backlog_limit_holds_across_servers(postgres: PostgresServer) -> None:
    """Two stores stage at once with capacity 5 (2 running + 3 queued): exactly 5 are staged."""
    name = namespace()
    stores = [PostgresMemoryStore(postgres.url(), name) for _ in range(2)]
    accepted: list[str] = []
    refused: list[int] = []

    def stage_many(store: PostgresMemoryStore, offset: int) -> None:
        for i in range(10):
            try:
                staged = store.stage(memory("", topic_id=f"t{offset + i}"), new_operation_id(), capacity=5)
                accepted.append(staged.memory_id)
            except BacklogFull:
                refused.append(i)

    threads = [threading.Thread(target=stage_many, args=(store, 100 * i)) for i, store in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (len(accepted), len(refused)) == (5, 15)
    assert stores[1].counts()["memories"] == 5 and stores[1].count_operations() == 5
    for store in stores:
        store.close()


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
    from graph.backends.team.memory_store import PostgresMemoryStore
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
    a new one and succeeds. Nothing staged is lost. (A call within CHECK_IDLE_SEC of the last one
    answers DATABASE_UNAVAILABLE instead: tests/integration/test_pg_faults.py.)"""
    store = PostgresMemoryStore(postgres.url(), namespace())
    staged = store.stage(memory("", topic_id="kept"), new_operation_id())
    postgres.restart()
    time.sleep(CHECK_IDLE_SEC)
    assert [m.memory_id for m in store.iter_memories()] == [staged.memory_id]
    store.stage(memory("", topic_id="after"), new_operation_id())
    assert store.counts()["memories"] == 2
    store.close()


def test_retrieval_throttles_hold_across_servers(postgres: PostgresServer) -> None:
    """Two servers' throttles on one namespace: 2 running and 5 waiting in all, then 429; the
    per-minute budget is counted over both."""
    from graph.backends.team.throttle import SharedRetrievalThrottle
    from graph.core.contract import RetrievalError, RetrievalErrorCode

    name = namespace()
    a, b = (SharedRetrievalThrottle(postgres.url(), name, None) for _ in range(2))

    async def scenario() -> None:
        release = asyncio.Event()
        running = 0
        peak = 0

        async def retrieve(throttle: SharedRetrievalThrottle) -> None:
            nonlocal running, peak
            async with throttle.admit():
                running += 1
                peak = max(peak, running)
                await release.wait()
                running -= 1

        tasks = [asyncio.create_task(retrieve(t)) for t in (a, b, a, b, a, b, a)]
        await asyncio.sleep(0.5)
        assert running == 2  # two run in the namespace, five wait (on both servers)
        for throttle in (a, b):
            with pytest.raises(RetrievalError) as full:
                async with throttle.admit():
                    pass
            assert full.value.code is RetrievalErrorCode.QUEUE_FULL
        release.set()
        await asyncio.gather(*tasks)
        assert peak == 2

        other = namespace()
        limited = [SharedRetrievalThrottle(postgres.url(), other, 3) for _ in range(2)]
        for throttle in (limited[0], limited[1], limited[0]):
            async with throttle.admit():
                pass
        with pytest.raises(RetrievalError) as budget:
            async with limited[1].admit():
                pass
        assert budget.value.code is RetrievalErrorCode.RATE_LIMIT_EXCEEDED
        began = time.perf_counter()
        for _ in range(50):
            async with a.admit():
                pass
        print(f"shared throttle admission: {(time.perf_counter() - began) / 50 * 1000:.2f} ms per retrieval")
        for throttle in limited:
            throttle.close()

    asyncio.run(scenario())
    a.close()
    b.close()


def test_an_operation_whose_servers_keep_dying_fails_after_three_claims(postgres: PostgresServer) -> None:
    name = namespace()
    stores = [PostgresMemoryStore(postgres.url(), name) for _ in range(4)]
    op = stores[0].stage(memory("", topic_id="poison"), new_operation_id()).operation_id or ""
    for store in stores[:3]:  # each claims it and dies (stops renewing)
        assert [c.operationId for c in store.claim(2, lease_sec=0.2)] == [op]
        time.sleep(0.3)
    assert stores[3].claim(2, lease_sec=30) == []
    status = stores[3].operation(op)
    assert status is not None and (status.status, status.errorCode, status.attempts) == ("failed", "WORKER_CRASHED", 3)
    assert stores[3].memories_without_graph() == status.memoryIds  # repair queues it again
    for store in stores:
        store.close()


def test_other_servers_hear_of_changes_and_the_poll_finds_what_no_notification_announced(
    postgres: PostgresServer,
) -> None:
    from graph.backends.team.events import NamespaceListener

    name = namespace()
    store = PostgresMemoryStore(postgres.url(), name)
    heard: list[tuple[str, list[str], float]] = []
    listener = NamespaceListener(
        postgres.url(), name, lambda k, ids, _: heard.append((k, ids, time.perf_counter())), 0.3
    )
    listener.start()
    try:
        staged = store.stage(memory("", topic_id="a"), new_operation_id())
        began = time.perf_counter()  # committed: the notification is on its way
        store.set_status(staged.memory_id, MemoryStatus.SUPERSEDED)
        while len(heard) < 2:
            assert time.perf_counter() - began < 5
            time.sleep(0.005)
        assert [(k, ids) for k, ids, _ in heard[:2]] == [
            ("queued", [staged.operation_id]),
            ("status", [staged.memory_id]),
        ]
        print(f"commit -> handler: {(heard[0][2] - began) * 1000:.1f} ms")
        with psycopg.connect(postgres.url()) as conn:  # chunks written without a notification
            conn.execute(
                f'INSERT INTO "{schema_name(name)}".memory_chunks (memory_id, topic_id, field, chunk_index, text, '
                "embedding) VALUES (%s, 'a', 'topic', 0, 'x', array_fill(0.0, ARRAY[384])::real[]::vector)".encode(),
                (staged.memory_id,),
            )
        deadline = time.perf_counter() + 5
        while not any(k == "searchable" and staged.memory_id in ids for k, ids, _ in heard):
            assert time.perf_counter() < deadline
            time.sleep(0.01)
    finally:
        listener.close()
        store.close()
