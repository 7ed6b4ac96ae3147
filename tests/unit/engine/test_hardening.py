"""Issue 12, reliability: each failure an unlucky user hit, on real SQLite, LanceDB and files in
temp folders (fakes only for the model and the cognee worker). Each test failed on the main
before the fix."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import sqlite3
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flowbaby.owner_line import call_json
from graph.backends.embedded.audit_log import AuditLog
from graph.backends.embedded.backend import EmbeddedBackend
from graph.backends.embedded.compact_vectors import compact_path
from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.embedded.projection import FileProjection
from graph.backends.embedded.vectors import VectorIndex
from graph.cognify.operations import OperationManager
from graph.core.contract import ErrorCode, FlowbabyError, OperationStatus, RetrievalError, validate_request
from graph.core.graph_projection import load_projection, save_projection
from graph.core.memories import Memory, new_operation_id
from graph.core.memory_chunks import memory_chunks
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspaceLock, WorkspacePaths, resolve_workspace
from graph.engine.service import FlowbabyService
from graph.inspection.workspace_graph import WorkspaceGraph
from graph.search.catalog import Catalog
from graph.search.graph_lane import GraphLane
from graph.search.retrieval import Retriever
from tests.conftest import summary
from tests.support.fakes import FakeWorker, memory

WAIT = 30.0
"""Generous: the first LanceDB use in a process takes seconds on a busy machine."""


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(body(), WAIT))


class HashEmbedder:
    """A stand-in for the MiniLM Embedder: deterministic unit vectors of any size."""

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions

    def load(self) -> None:
        pass

    def encode(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
            vector = np.random.default_rng(seed).standard_normal(self.dimensions)
            out.append((vector / np.linalg.norm(vector)).tolist())
        return out


@pytest.fixture
def service(paths: WorkspacePaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlowbabyService]:
    """A service that was never opened: no worker, no model (the test sets up what it needs), and
    LanceDB in this process (its child process is tested in tests/integration/test_lance_child.py)."""
    in_process = EmbeddedBackend.vectors
    monkeypatch.setattr(EmbeddedBackend, "vectors", lambda backend, e, idle_sec: in_process(backend, e, None))
    settings = Settings(llm=LLMSettings(), embedding_model=str(tmp_path))
    service = FlowbabyService(paths, settings, WorkspaceLock(paths), None)
    service.embedder = HashEmbedder()  # type: ignore[assignment]
    yield service
    service.store.close()


# -- 6: private data -------------------------------------------------------------------------


def test_data_folder_and_files_are_private_under_umask_022(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    old = os.umask(0o022)
    try:
        paths = resolve_workspace(root)
        store = MemoryStore(paths.store_db)
        store.stage(memory("", topic_id="t"), new_operation_id())
        store.close()
        AuditLog(paths.audit_log).record(
            "storeMemory", agent_name=None, topic="t", result="success", error_code=None, duration_ms=1
        )
        lock = WorkspaceLock(paths)
        lock.acquire()
        lock.release()
        save_projection(load_projection(paths.projection), paths.projection)
    finally:
        os.umask(old)
    assert stat.S_IMODE(paths.data.stat().st_mode) == 0o700
    for file in (paths.store_db, paths.audit_log, paths.lock_file, paths.projection):
        assert stat.S_IMODE(file.stat().st_mode) & 0o077 == 0, file


def test_an_existing_world_readable_data_folder_is_tightened(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".flowbaby").mkdir(parents=True, mode=0o755)
    os.chmod(root / ".flowbaby", 0o755)
    assert stat.S_IMODE(resolve_workspace(root).data.stat().st_mode) == 0o700


# -- 9: one odd ingest cannot stop search -----------------------------------------------------


def test_list_items_are_capped() -> None:
    with pytest.raises(FlowbabyError) as refused:
        validate_request(type(_ingest_model()), summary(decisions=["x"] * 6000))
    assert refused.value.code is ErrorCode.INVALID_PAYLOAD
    assert refused.value.details["fields"] == ["decisions"]


def _ingest_model() -> Any:
    from graph.core.contract import FlowbabyIngestRequest

    return FlowbabyIngestRequest.model_construct()


def test_tiny_items_are_merged_and_chunks_are_capped() -> None:
    from graph.core.memory_chunks import MAX_CHUNKS_PER_MEMORY

    tiny = memory("m1", decisions=[chr(97 + i % 26) for i in range(499)])
    chunks = memory_chunks(tiny)
    assert len(chunks) < 10  # 499 one-letter decisions were 499 chunks
    assert "a; b; c" in chunks[2].text
    long = memory("m2", decisions=[f"Decision number {i} keeps its own sentence here." for i in range(499)])
    assert len(memory_chunks(long)) == MAX_CHUNKS_PER_MEMORY
    normal = memory("m3", decisions=["Use Redis for the session cache", "ok"])
    assert [c.text for c in memory_chunks(normal) if c.field == "decisions"] == [
        "Use Redis for the session cache",
        "ok",
    ]


async def _serve_only(service: FlowbabyService, indexed: Memory) -> None:
    """The service warmed with `indexed` alone embedded and catalogued (a fake graph)."""
    from tests.support.fakes import FakeGraph

    index = VectorIndex(service.paths.vectors, service.embedder)  # type: ignore[arg-type]
    index.add_memories([indexed])
    service._vectors = index
    service._warm_task = asyncio.create_task(asyncio.sleep(0))
    await service._warm_task
    service._retriever = Retriever(Catalog([indexed]), service.embedder, FakeGraph(), lambda: index)


def test_search_answers_from_what_is_indexed_and_says_so(
    service: FlowbabyService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backlog that is still being embedded (the embed loop never runs here) no longer makes a
    retrieval wait out NOT_INITIALIZED: it answers and names how much it could not search."""
    monkeypatch.setattr("graph.engine.retrieval.FRESHNESS_WAIT_SEC", 0.5)

    async def body() -> dict[str, Any]:
        indexed = memory("", topic_id="indexed", context="Redis session cache decision")
        service.store.stage(indexed, new_operation_id())
        backlog = memory("", topic_id="late", context="Redis session cache again")
        service.store.stage(backlog, new_operation_id())
        await _serve_only(service, indexed)
        service._embed_queue.put_nowait(backlog)  # queued, never embedded
        started = time.monotonic()
        reply = await call_json(service, "retrieve", {"query": "Redis session cache"})
        assert time.monotonic() - started < 5  # waited out 45 s, then NOT_INITIALIZED
        return reply

    reply = run(body)
    assert reply["success"] is True
    assert reply["indexing"]["complete"] is False and reply["indexing"]["unsearchedMemories"] == 1
    assert "still being embedded" in reply["indexing"]["message"]


def test_the_stored_count_is_read_again_after_a_second_and_at_once_after_this_process_stages(
    service: FlowbabyService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting every stored row cost 32 ms a retrieval at 1M memories: a retrieval reuses the last count
    for STORED_COUNT_SEC unless this process staged, imported or forgot since; a memory staged behind
    its back (another server) shows in the note once that time is up."""
    monkeypatch.setattr("graph.engine.retrieval.FRESHNESS_WAIT_SEC", 0.2)
    monkeypatch.setattr("graph.engine.retrieval.STORED_COUNT_SEC", 3600.0)
    from tests.conftest import summary

    async def body() -> list[int]:
        indexed = memory("", topic_id="indexed", context="Redis session cache decision")
        service.store.stage(indexed, new_operation_id())
        await _serve_only(service, indexed)

        async def unsearched() -> int:
            reply = await call_json(service, "retrieve", {"query": "Redis session cache"})
            return int(reply.get("indexing", {}).get("unsearchedMemories", 0))

        seen = [await unsearched()]
        service.store.stage(memory("", topic_id="elsewhere", context="Redis again"), new_operation_id())
        seen.append(await unsearched())  # staged behind this process's back: the count it read stands
        monkeypatch.setattr("graph.engine.retrieval.STORED_COUNT_SEC", 0.0)
        seen.append(await unsearched())
        monkeypatch.setattr("graph.engine.retrieval.STORED_COUNT_SEC", 3600.0)
        assert (await call_json(service, "ingest", summary("staged-here")))["success"]
        seen.append(await unsearched())  # staged by this process: counted at once
        return seen

    assert run(body) == [0, 0, 1, 2]


# -- 10: a damaged derived index repairs itself -----------------------------------------------


def test_projection_is_fsynced_before_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    save_projection(load_projection(tmp_path / "none.json"), tmp_path / "projection.json")
    assert events == ["fsync", "replace", "fsync"]  # the file, the rename, the folder


@pytest.mark.parametrize("content", [b"", b'{"nodes": [', b"\x00" * 64, b'{"nodes": 3}', b'{"nodes": [{}]}'])
def test_an_unreadable_projection_reads_as_empty(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "projection.json"
    path.write_bytes(content)
    assert load_projection(path).number_of_nodes() == 0
    lane = GraphLane(FileProjection(path))
    lane.refresh()  # raised before: every retrieval was NOT_INITIALIZED
    assert lane.damaged
    assert lane.query_entities("redis") == {}


def _break_lance(path: Path) -> None:
    for data in path.rglob("*.lance"):
        if data.is_file():
            data.write_bytes(data.read_bytes()[:10])


def test_a_broken_vector_folder_is_moved_aside_and_rebuilt(tmp_path: Path) -> None:
    from graph.backends.embedded.vectors import open_vector_index

    embedder = HashEmbedder()
    index = VectorIndex(tmp_path / "vectors.lance", embedder)  # type: ignore[arg-type]
    index.add_memories([memory("m1", context="Redis session cache")])
    index.close()
    _break_lance(tmp_path / "vectors.lance")
    served, aside = open_vector_index(tmp_path / "vectors.lance", embedder)  # type: ignore[arg-type]
    assert aside is None and served.indexed_memory_ids() == {"m1"}  # the compact copy still mirrors it
    served.close()
    shutil.rmtree(compact_path(tmp_path / "vectors.lance"))  # without the copy, the table is read: broken
    fresh, aside = open_vector_index(tmp_path / "vectors.lance", embedder)  # type: ignore[arg-type]
    assert aside is not None and aside.is_dir() and aside.name.startswith("vectors.lance.broken-")
    assert fresh.count() == 0
    fresh.add_memories([memory("m1", context="Redis session cache")])
    assert fresh.indexed_memory_ids() == {"m1"}


def test_warm_up_rebuilds_both_indexes_from_sqlite(service: FlowbabyService) -> None:
    """A truncated LanceDB file without its compact copy, and an empty projection: warm-up succeeds, every memory is
    queued for embedding again, and one projection rebuild is queued for the worker."""
    stored = [memory("", topic_id=f"t{i}", context=f"memory number {i}") for i in range(3)]
    for m in stored:
        service.store.stage(m, new_operation_id())
    index = VectorIndex(service.paths.vectors, service.embedder)  # type: ignore[arg-type]
    index.add_memories(stored)
    index.close()
    _break_lance(service.paths.vectors)
    shutil.rmtree(compact_path(service.paths.vectors))  # else the copy serves the rows (the test above)
    service.paths.projection.write_bytes(b"")

    async def body() -> None:
        await service._warm_up()

    run(body)
    assert service._retriever is not None
    assert service._embed_queue.qsize() == 3
    rebuild = [op for op in service.store.operations(("pending",)) if op.memoryIds == []]
    assert len(rebuild) == 1
    assert list(service.paths.data.glob("vectors.lance.broken-*"))


def test_repair_runs_warm_up_again(service: FlowbabyService) -> None:
    async def body() -> dict[str, Any]:
        async def failed() -> None:
            raise OSError("index could not be read")

        service._warm_task = asyncio.create_task(failed())
        await asyncio.sleep(0)
        assert (await service.index_status()).status == "missing"
        service.store.stage(memory("", topic_id="t", context="kept in SQLite"), new_operation_id())
        return (await service.repair()).model_dump(mode="json")

    reply = run(body)
    assert service._retriever is not None  # loaded again by repair
    assert reply["reembeddedMemories"] == 1


class _FailsOnce(HashEmbedder):
    """The model's first load raises (a passing fault, as the ONNX cache race of d9f1dd0 was)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    def load(self) -> None:
        self.loads += 1
        if self.loads == 1:
            raise FileNotFoundError("onnx/model.key.1234")


def test_a_failed_warm_up_is_tried_again_by_a_later_retrieval(service: FlowbabyService) -> None:
    """Before: every retrieval answered NOT_INITIALIZED until repair or a restart. Now the first one
    after the wait loads the indexes again and answers; the ones before it say when."""
    service._warm_retry_wait = 0.3  # WARM_RETRY_FIRST_SEC, 5 s
    embedder = _FailsOnce()
    service.embedder = embedder  # type: ignore[assignment]
    kept = memory("", topic_id="kept", context="Redis holds the session cache")
    service.store.stage(kept, new_operation_id())

    async def body() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        service._embed_task = asyncio.create_task(service._embed_loop())
        service._warm_task = asyncio.create_task(service._warm_up_through_outages())
        try:
            with pytest.raises(RetrievalError) as refused:
                await call_json(service, "retrieve", {"query": "session cache"})
            first = refused.value.to_response()
            status = await service.index_status()
            await asyncio.sleep(0.4)
            second = await call_json(service, "retrieve", {"query": "session cache"})
        finally:
            for task in (service._embed_task, service._warm_task):
                task.cancel()
            if service._vectors is not None:
                service._vectors.close()
        return first, status, second

    first, status, second = run(body)
    assert first["success"] is False and first["errorCode"] == "NOT_INITIALIZED"
    assert "FileNotFoundError" in first["message"] and first["retryAfterSec"] == 1
    assert status.status == "missing"
    assert embedder.loads == 2
    assert second["success"] is True, second
    assert [r["topicId"] for r in second["entries"]] == ["kept"]


# -- 11: a corrupt store is an error, not a traceback -----------------------------------------


def test_a_corrupt_store_is_store_damaged(tmp_path: Path) -> None:
    from graph.core.memories import StoreDamaged

    path = tmp_path / "memories.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreDamaged):
        MemoryStore(path, check=True)


def test_opening_a_corrupt_store_is_a_flowbaby_error(paths: WorkspacePaths) -> None:
    paths.store_db.write_bytes(b"\x00garbage" * 512)
    with pytest.raises(FlowbabyError) as failed:
        run(lambda: FlowbabyService.open(paths.root, log_to_stderr=False))
    assert failed.value.code is ErrorCode.FLOWBABY_ERROR and "damaged" in failed.value.message
    lock = WorkspaceLock(paths)
    lock.acquire()  # released again
    lock.release()


# -- 12: a full disk after the commit ---------------------------------------------------------


def test_audit_on_a_full_disk_does_not_fail_a_committed_ingest(service: FlowbabyService) -> None:
    service.audit = AuditLog(Path("/dev/full"))  # every write: ENOSPC
    reply = run(lambda: call_json(service, "ingest", summary("t1")))
    assert reply["staged"] is True
    assert service.audit.dropped == 1
    assert [m.version for m in service.store.topic_versions("t1")] == [1]  # nothing for a client to retry


# -- 13: from the code ------------------------------------------------------------------------


def test_a_listener_that_raises_does_not_fail_a_completed_batch(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.db")
    op = new_operation_id()
    store.stage(memory("", topic_id="t"), op)
    ops = OperationManager(store, FakeWorker(), max_running=2, max_queued=3, timeout_sec=30)

    async def editor_gone(status: OperationStatus) -> None:
        raise BrokenPipeError("the editor exited")

    ops.add_listener(editor_gone)

    async def body() -> None:
        ops.start()
        ops.notify()
        await ops.wait_idle()
        await ops.stop(grace_sec=1)

    run(body)
    assert store.operation(op).status == "completed"  # type: ignore[union-attr]
    store.close()


def test_a_failing_begin_does_not_keep_the_store_lock(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.db")
    store._conn.execute("PRAGMA busy_timeout=50")
    other = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer: our BEGIN IMMEDIATE fails "database is locked"
    with pytest.raises(sqlite3.OperationalError):
        store.stage(memory("", topic_id="t"), new_operation_id())
    other.execute("ROLLBACK")
    other.close()
    done = threading.Event()
    threading.Thread(
        target=lambda: (store.stage(memory("", topic_id="t"), new_operation_id()), done.set()), daemon=True
    ).start()
    assert done.wait(5), "the store's lock was left held"
    store.close()


def test_two_same_topic_store_memory_calls_in_one_millisecond_are_two_memories(
    service: FlowbabyService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("graph.engine.ingest.utc_now", lambda: "2025-03-01T10:00:00.000Z")

    async def body() -> list[str]:
        params = {"topic": "Same topic", "context": "Stored twice at once"}
        return [(await call_json(service, "store_memory", params))["summary_id"] for _ in range(2)]

    first, second = run(body)
    assert first != second
    assert [m.version for m in service.store.iter_memories()] == [1, 1]


def test_lancedb_is_compacted_in_normal_operation(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "vectors.lance", HashEmbedder())  # type: ignore[arg-type]
    for i in range(120):
        index.add_memories([memory(f"m{i}", context=f"memory {i}")])
    index.flush()
    assert len(index._table._table.to_lance().get_fragments()) < 30  # type: ignore[attr-defined]  # 120 appends were 120 fragments
    assert index.count() == 240


def test_read_only_graph_load_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "cloned-repo"
    root.mkdir()
    WorkspaceGraph.load(root)
    assert list(root.iterdir()) == []


def test_the_ledger_is_pruned(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.db")
    ops = []
    for i in range(12):
        op = new_operation_id()
        store.stage(memory("", topic_id=f"t{i}"), op)
        ops.append(op)
    store.finish(ops[:8], "completed")
    store.finish(ops[8:10], "failed", error_code="LLM_ERROR", error="x")
    assert store.prune_operations(keep=5) == 5  # the 5 oldest completed; failed and unfinished stay
    left = {op.operationId: op.status for op in store.operations()}
    assert len(left) == 7 and set(ops[8:]) <= left.keys()
    store.close()


def test_the_vector_size_is_read_from_the_model(tmp_path: Path) -> None:
    from graph.backends.embedded.vectors import open_vector_index

    index = VectorIndex(tmp_path / "vectors.lance", HashEmbedder(dimensions=12))  # type: ignore[arg-type]
    index.add_memories([memory("m1", context="twelve floats per vector")])
    assert index.dimensions == 12 and index.count() == 2
    index.close()
    # Another model over the same folder: moved aside and rebuilt, never mixed.
    other, aside = open_vector_index(tmp_path / "vectors.lance", HashEmbedder(dimensions=16))  # type: ignore[arg-type]
    assert aside is not None and other.dimensions == 16 and other.count() == 0


def test_an_empty_workspace_is_missing_with_how_to_store_the_first_memory(service: FlowbabyService) -> None:
    reply = run(service.index_status)
    assert reply.status == "missing" and reply.needs_repair is False
    assert "storeMemory" in reply.message


def test_staging_runs_off_the_event_loop(service: FlowbabyService, monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow commit (an fsync on a busy disk) must not stall the loop that also serves other
    requests (and, under bridge --http, stdio)."""
    slow_stage = service.store.stage

    def stage(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.5)
        return slow_stage(*args, **kwargs)

    monkeypatch.setattr(service.store, "stage", stage)

    async def body() -> float:
        gaps: list[float] = []

        async def tick() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        await call_json(service, "ingest", summary("t1"))
        ticker.cancel()
        return max(gaps)

    assert run(body) < 0.25


def test_a_memory_catalogued_twice_stays_current() -> None:
    """Warm-up queues its backlog while staging queues the same memories: adding one twice must
    not mark it superseded by itself, and an older version added late stays superseded."""
    from graph.core.contract import MemoryStatus

    catalog = Catalog([])
    newest = memory("m2", topic_id="t", version=2)
    catalog.add(newest)
    catalog.add(memory("m2", topic_id="t", version=2))
    catalog.add(memory("m1", topic_id="t", version=1))
    assert catalog.by_id["m2"].status is MemoryStatus.ACTIVE
    assert catalog.by_id["m1"].status is MemoryStatus.SUPERSEDED


# -- 14: a leaving front hands work on only when there is work --------------------------------


@pytest.mark.parametrize("queued", [0, 1])
def test_a_front_leaving_before_warm_up_hands_on_only_queued_vectors(
    service: FlowbabyService, monkeypatch: pytest.MonkeyPatch, queued: int
) -> None:
    """A read-only command (`flowbaby sessions list`) closes before the model has loaded: with
    nothing queued there is nothing for a finisher to do, and starting one kept the workspace owned
    by a detached process (with its own environment) while the user's next command ran."""
    handed: list[int] = []

    async def never_warm() -> None:
        await asyncio.Event().wait()

    async def hand_on(unfinished: int) -> None:
        handed.append(unfinished)

    monkeypatch.setattr(service, "vectors", never_warm)
    monkeypatch.setattr(service, "_hand_on", hand_on)
    for index in range(queued):
        service._embed_queue.put_nowait(memory("", topic_id=f"t{index}"))
    run(lambda: service.close(0.2, hand_on=True))
    assert handed == ([0] if queued else [])
