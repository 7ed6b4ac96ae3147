"""The operation manager over a real ledger (both backends, tests/unit/conftest.py) with a fake
worker: capacity and backlog, batching, crash retries, terminal failures, parking at shutdown and
recovery."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from flowbaby.owner_line import call_json
from graph.backends.backend import Backend
from graph.backends.memory_store import MemoryStoreBackend
from graph.cognify.operations import MAX_ATTEMPTS, OperationManager
from graph.cognify.worker_client import WorkerFailure
from graph.core.contract import BackgroundErrorCode, ErrorCode, FlowbabyError, OperationStatus
from graph.core.memories import new_operation_id
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspaceLock, WorkspacePaths, resolve_workspace
from graph.engine.service import FlowbabyService
from tests.conftest import summary
from tests.support.fakes import FakeWorker, memory

MAX_RUNNING, MAX_QUEUED = 2, 3
WAIT = 5.0
"""Seconds a test waits for the manager before it fails (normally it takes milliseconds)."""


def stage(store: MemoryStoreBackend, count: int) -> list[str]:
    """Stage `count` memories, one operation each; returns their operation ids in order."""
    ops = []
    for i in range(count):
        op = new_operation_id()
        store.stage(memory("", topic_id=f"topic-{len(store.operations())}-{i}"), op)
        ops.append(op)
    return ops


def manager(store: MemoryStoreBackend, worker: FakeWorker) -> tuple[OperationManager, list[OperationStatus]]:
    ops = OperationManager(store, worker, max_running=MAX_RUNNING, max_queued=MAX_QUEUED, timeout_sec=30)
    reported: list[OperationStatus] = []

    async def listen(status: OperationStatus) -> None:
        reported.append(status)

    ops.add_listener(listen)
    return ops, reported


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), WAIT))


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.001)


async def drain(ops: OperationManager) -> None:
    ops.start()
    ops.notify()
    await ops.wait_idle()
    await ops.stop(grace_sec=1)


def states(store: MemoryStoreBackend, op_ids: list[str]) -> list[str]:
    return [store.operation(op).status for op in op_ids]  # type: ignore[union-attr]


def test_capacity_is_running_plus_queued_and_beyond_it_is_backlog(store: MemoryStoreBackend) -> None:
    ops, _ = manager(store, FakeWorker())
    assert ops.capacity == MAX_RUNNING + MAX_QUEUED
    for _ in range(ops.capacity):
        ops.check_backlog()
        stage(store, 1)
    with pytest.raises(FlowbabyError) as refused:
        ops.check_backlog()
    assert refused.value.code is ErrorCode.BACKLOG
    assert refused.value.to_response()["errorCode"] == "429_FLOWBABY_BACKLOG"
    assert refused.value.details["retryAfterSec"] == 30
    assert store.count_operations() == ops.capacity


def test_finished_operations_free_the_backlog(store: MemoryStoreBackend) -> None:
    ops, _ = manager(store, FakeWorker())
    staged = stage(store, ops.capacity)
    run(lambda: drain(ops))
    assert states(store, staged) == ["completed"] * len(staged)
    ops.check_backlog()  # no longer raises


def test_with_graph_building_off_nothing_is_claimed_and_forgets_need_no_worker_until_a_build_ran(
    store: MemoryStoreBackend,
) -> None:
    """FLOWBABY_BUILD_GRAPH=0: operations stay pending; a forget's graph step is done without the
    worker while cognee holds nothing, and through it once a build ever ran (cognee may hold data)."""
    worker, empty = FakeWorker(), [True]
    ops = OperationManager(
        store,
        worker,
        max_running=MAX_RUNNING,
        max_queued=MAX_QUEUED,
        timeout_sec=30,
        build=False,
        graph_empty=lambda: empty[0],
    )
    staged = stage(store, 3)
    first, second, kept = (store.operation(op).memoryIds[0] for op in staged)  # type: ignore[union-attr]
    store.forget("fg_never_built", [first])

    async def body() -> None:
        ops.start()
        assert await ops.forgotten("fg_never_built", WAIT)
        empty[0] = False
        store.forget("fg_built_before", [second])
        ops.notify()
        assert await ops.forgotten("fg_built_before", WAIT)
        await ops.stop(grace_sec=1)

    run(body)
    assert worker.batches == [] and worker.forgets == [[second]]
    assert [e.pending for e in store.forget_journal()] == [["vectors"], ["vectors"]]  # the graph steps are done
    assert states(store, staged[2:]) == ["pending"]  # waits for a process that builds


def test_batches_of_max_running_and_the_rest_waits(store: MemoryStoreBackend) -> None:
    gate = asyncio.Event()
    worker = FakeWorker(gate)
    ops, reported = manager(store, worker)
    staged = stage(store, MAX_RUNNING + MAX_QUEUED)
    memory_of = {op: store.operation(op).memoryIds[0] for op in staged}  # type: ignore[union-attr]

    async def body() -> None:
        ops.start()
        ops.notify()
        await until(lambda: len(worker.batches) == 1)
        assert states(store, staged) == ["running"] * MAX_RUNNING + ["pending"] * MAX_QUEUED
        assert worker.batches[0] == [memory_of[op] for op in staged[:MAX_RUNNING]]
        gate.set()
        await ops.wait_idle()
        await ops.stop(grace_sec=1)

    run(body)
    assert worker.batches == [[memory_of[op] for op in staged[i : i + MAX_RUNNING]] for i in (0, 2, 4)]
    assert sorted(s.operationId for s in reported) == sorted(staged)
    assert {s.status for s in reported} == {"completed"}
    finished = [store.operation(op) for op in staged]
    assert all(s.attempts == 1 for s in finished)  # type: ignore[union-attr]
    # Operations of one batch share its metrics and batch id, so totals count it once.
    first, second = finished[0].metrics, finished[1].metrics  # type: ignore[union-attr]
    assert first["batchId"] == second["batchId"] != finished[2].metrics["batchId"]  # type: ignore[union-attr]
    assert first["batchOperations"] == MAX_RUNNING and first["memories"] == MAX_RUNNING
    assert store.counts() == {"memories": len(staged), "graph_indexed": len(staged)}


def test_a_worker_crash_is_retried_once(store: MemoryStoreBackend) -> None:
    worker = FakeWorker(WorkerFailure(BackgroundErrorCode.WORKER_CRASHED, "died"), {"llmCalls": 1})
    ops, reported = manager(store, worker)
    [op] = stage(store, 1)
    run(lambda: drain(ops))
    status = store.operation(op)
    assert status is not None and status.status == "completed"
    assert status.attempts == 2 and len(worker.batches) == 2
    assert [s.status for s in reported] == ["completed"]  # the retry is not reported as an end


def test_a_worker_that_keeps_crashing_fails_the_operation(store: MemoryStoreBackend) -> None:
    crashes = [WorkerFailure(BackgroundErrorCode.WORKER_CRASHED, f"died {i}") for i in range(MAX_ATTEMPTS)]
    worker = FakeWorker(*crashes)
    ops, reported = manager(store, worker)
    [op] = stage(store, 1)
    run(lambda: drain(ops))
    status = store.operation(op)
    assert status is not None
    assert (status.status, status.errorCode, status.error) == ("failed", "WORKER_CRASHED", f"died {MAX_ATTEMPTS - 1}")
    assert status.attempts == MAX_ATTEMPTS == len(worker.batches)
    assert [s.operationId for s in reported] == [op]
    assert store.counts()["graph_failed"] == 1
    assert store.memories_without_graph() == status.memoryIds  # repair will pick it up


@pytest.mark.parametrize(
    "code", [BackgroundErrorCode.LLM_ERROR, BackgroundErrorCode.LLM_TIMEOUT, BackgroundErrorCode.LLM_RATE_LIMITED]
)
def test_an_llm_failure_is_terminal_and_keeps_what_was_built(store: MemoryStoreBackend, code: ErrorCode) -> None:
    built_op, failed_op = stage(store, 2)
    built_memory = store.operation(built_op).memoryIds[0]  # type: ignore[union-attr]
    usage = {"llmCalls": 4, "llmFailedCalls": 3}
    worker = FakeWorker(WorkerFailure(code, "the model gave up", usage, [built_memory]))
    ops, reported = manager(store, worker)
    run(lambda: drain(ops))
    assert len(worker.batches) == 1  # not retried: the worker already retried the call
    built, failed = store.operation(built_op), store.operation(failed_op)
    assert built is not None and failed is not None
    assert (built.status, built.errorCode) == ("completed", None)
    assert (failed.status, failed.errorCode, failed.error) == ("failed", code.value, "the model gave up")
    assert failed.metrics["llmCalls"] == 4 and failed.metrics["batchId"] == built.metrics["batchId"]
    assert {s.operationId: s.status for s in reported} == {built_op: "completed", failed_op: "failed"}
    assert store.counts() == {"memories": 2, "graph_indexed": 1, "graph_failed": 1}


def test_a_failed_repair_keeps_the_memories_whose_graph_was_built(store: MemoryStoreBackend) -> None:
    ops_staged = stage(store, 2)
    memories = [store.operation(op).memoryIds[0] for op in ops_staged]  # type: ignore[union-attr]
    store.finish(ops_staged, "failed", error_code="LLM_ERROR", error="first try")
    repair = store.queue_operation(memories)  # one operation, two memories
    worker = FakeWorker(WorkerFailure(BackgroundErrorCode.LLM_ERROR, "second try", indexed=[memories[0]]))
    ops, _ = manager(store, worker)
    run(lambda: drain(ops))
    assert worker.batches == [memories]
    assert states(store, [repair]) == ["failed"]  # not all of its memories were built
    assert [m.graph_state for m in store.get_memories(memories)] == ["indexed", "failed"]


def test_an_unexpected_error_fails_the_batch_and_the_manager_lives_on(store: MemoryStoreBackend) -> None:
    worker = FakeWorker(RuntimeError("boom"), {})
    ops, _ = manager(store, worker)
    [first] = stage(store, 1)

    async def body() -> None:
        ops.start()
        ops.notify()
        await ops.wait_idle()
        [second] = stage(store, 1)
        ops.notify()
        await ops.wait_idle()
        await ops.stop(grace_sec=1)
        assert states(store, [second]) == ["completed"]

    run(body)
    status = store.operation(first)
    assert status is not None
    assert (status.status, status.errorCode, status.error) == ("failed", "FLOWBABY_ERROR", "RuntimeError: boom")


def test_shutdown_parks_the_running_batch_and_the_next_start_runs_it(store: MemoryStoreBackend) -> None:
    never = asyncio.Event()
    stuck = FakeWorker(never)
    ops, reported = manager(store, stuck)
    staged = stage(store, 3)

    async def first_process() -> None:
        ops.start()
        ops.notify()
        await until(lambda: len(stuck.batches) == 1)
        await ops.stop(grace_sec=0.01)

    run(first_process)
    assert stuck.stops == 1 and reported == []
    parked = [store.operation(op) for op in staged]
    assert [s.status for s in parked] == ["pending"] * 3  # type: ignore[union-attr]
    assert [s.attempts for s in parked] == [0] * 3  # type: ignore[union-attr]  # parking costs no attempt

    fresh = FakeWorker()
    restarted, _ = manager(store, fresh)
    run(lambda: drain(restarted))
    assert states(store, staged) == ["completed"] * 3  # the same operation ids
    assert [len(batch) for batch in fresh.batches] == [2, 1]


def test_recovery_requeues_what_a_dead_process_left_running(open_store: Callable[[], MemoryStoreBackend]) -> None:
    dead = open_store()
    running, waiting = stage(dead, 2)
    dead.mark_running([running])
    memories = dead.operation(running).memoryIds  # type: ignore[union-attr]
    dead.close()  # the process is gone; its ledger still says running

    store = open_store()
    assert store.recover_interrupted() == [running]  # the same id, pending again
    worker = FakeWorker()
    ops, _ = manager(store, worker)
    run(lambda: drain(ops))
    assert states(store, [running, waiting]) == ["completed", "completed"]
    assert sorted(m for batch in worker.batches for m in batch) == sorted(
        memories + store.operation(waiting).memoryIds  # type: ignore[union-attr]
    )


def _usage(**fields: Any) -> dict[str, Any]:
    return {"llmCalls": 0, "llmFailedCalls": 0, "llmPromptTokens": 0, "llmCompletionTokens": 0, **fields}


def test_llm_usage_counts_each_batch_once(store: MemoryStoreBackend) -> None:
    ops, _ = manager(store, FakeWorker(_usage(llmCalls=3, llmPromptTokens=100), _usage(llmCalls=2)))
    stage(store, MAX_RUNNING + 1)  # two batches
    run(lambda: drain(ops))
    usage = store.llm_usage()
    assert (usage["batches"], usage["calls"], usage["promptTokens"]) == (2, 3 + 2, 100)


def test_beyond_the_backlog_ingest_is_refused_and_nothing_is_staged(
    tmp_path: Path, make_backend: Callable[[WorkspacePaths], Backend]
) -> None:
    """Through the service's ingest (never opened: no worker, no model), with the default limits,
    on the test's backend."""
    root = tmp_path / "ws"
    root.mkdir()
    paths = resolve_workspace(root)
    settings = Settings(llm=LLMSettings(), embedding_model=str(tmp_path))
    service = FlowbabyService(paths, settings, WorkspaceLock(paths), None, backend=make_backend(paths))
    capacity = settings.max_running + settings.max_queued
    assert capacity == MAX_RUNNING + MAX_QUEUED

    async def body() -> None:
        for i in range(capacity):
            assert (await call_json(service, "ingest", summary(f"topic-{i}")))["staged"]
        with pytest.raises(FlowbabyError) as refused:
            await call_json(service, "ingest", summary("topic-0"))  # a new version would supersede v1: it must not
        assert refused.value.code is ErrorCode.BACKLOG

    try:
        run(body)
        assert store_state(service.store) == {"memories": capacity, "operations": capacity, "superseded": 0}
    finally:
        service.store.close()


def test_with_graph_building_off_the_backlog_limit_is_lifted_and_status_says_why(
    tmp_path: Path, make_backend: Callable[[WorkspacePaths], Backend]
) -> None:
    """FLOWBABY_BUILD_GRAPH=0 through the service (never opened: no worker, no model): nothing drains
    the queue, so ingest past the limit is staged, and the manager goes idle with every operation pending."""
    root = tmp_path / "ws"
    root.mkdir()
    paths = resolve_workspace(root)
    settings = Settings(llm=LLMSettings(), embedding_model=str(tmp_path), build_graph=False)
    service = FlowbabyService(paths, settings, WorkspaceLock(paths), None, backend=make_backend(paths))
    staged = settings.max_running + settings.max_queued + 2
    seen: dict[str, dict[str, Any]] = {}

    async def body() -> None:
        service.start_graph_work()
        for i in range(staged):
            assert (await call_json(service, "ingest", summary(f"topic-{i}")))["staged"]
        await asyncio.wait_for(service.operations.wait_idle(), WAIT)
        seen["queue"] = await call_json(service, "background_status", {})
        seen["index"] = (await asyncio.to_thread(service._index_status)).model_dump(mode="json")
        await service.operations.stop(grace_sec=1)

    try:
        run(body)
        queue, index = seen["queue"], seen["index"]
        assert (queue["graphBuilding"], queue["counts"]) == (False, {"pending": staged})
        assert (index["graphBuilding"], index["counts"]["pendingOperations"]) == (False, staged)
        assert service.worker.pid is None
    finally:
        service.store.close()


def store_state(store: MemoryStoreBackend) -> dict[str, int]:
    memories = list(store.iter_memories())
    return {
        "memories": len(memories),
        "operations": len(store.operations()),
        "superseded": sum(m.status.value == "Superseded" for m in memories),
    }


def test_a_running_batch_keeps_its_lease_and_a_second_manager_takes_nothing_of_it(
    open_store: Callable[[], MemoryStoreBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two managers on one ledger (two servers on Postgres; on SQLite one owner claims, so only the
    first part applies): the batch outlives the lease several times over, renewals keep it."""
    monkeypatch.setenv("FLOWBABY_LEASE_SEC", "0.4")
    monkeypatch.setenv("FLOWBABY_LEASE_RENEW_SEC", "0.1")
    store = open_store()
    op = stage(store, 1)[0]
    release = asyncio.Event()
    first, _ = manager(store, FakeWorker(release))

    async def body() -> None:
        first.start()
        first.notify()
        await until(lambda: states(store, [op]) == ["running"])
        await asyncio.sleep(1.2)  # three leases long
        if store.shared:
            other = open_store()
            assert other.claim(MAX_RUNNING, lease_sec=30) == []  # still held: renewed
            other.close()
        release.set()
        await first.wait_idle()
        await first.stop(grace_sec=1)

    run(body)
    assert states(store, [op]) == ["completed"]


class _OutageStore:
    """The ledger, whose `finish` meets a team-database outage `outages` times."""

    def __init__(self, store: MemoryStoreBackend, outages: int) -> None:
        self._store, self.outages = store, outages

    def finish(self, *args: Any, **kwargs: Any) -> None:
        if self.outages:
            self.outages -= 1
            raise FlowbabyError(ErrorCode.DATABASE_UNAVAILABLE, "The team database does not answer", retryAfterSec=0.01)
        self._store.finish(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_database_outage_pauses_the_manager_and_the_cut_batch_runs_again(store: MemoryStoreBackend) -> None:
    """The manager outlives DATABASE_UNAVAILABLE: the batch whose end could not be recorded goes back
    to pending (its attempt refunded) once the ledger answers, and runs again to completion."""
    flaky = _OutageStore(store, outages=2)
    worker = FakeWorker()
    ops, _ = manager(flaky, worker)  # type: ignore[arg-type]
    op_ids = stage(store, 1)

    async def body() -> None:
        await drain(ops)

    run(body)
    status = store.operation(op_ids[0])
    assert status is not None and status.status == "completed" and flaky.outages == 0
    assert status.attempts == 1  # the runs the outage cut short were refunded
