"""forgetMemory: the store's transaction and journal over both backends, and the service taking a
memory out of SQLite, LanceDB, the lexical index and search, with the graph step run by a fake
worker between builds (the real worker and cognee: tests/test_forget_canary.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowbaby.owner_line import call_json
from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.memory_store import MemoryStoreBackend
from graph.cognify.operations import OperationManager
from graph.core.contract import FlowbabyError, ForgetMemoryRequest, MemoryFilter, MemoryStatus, validate_request
from graph.core.memories import new_operation_id
from graph.core.memory_query import Page
from graph.engine.service import FlowbabyService
from tests.conftest import summary
from tests.support.fakes import FakeWorker, memory
from tests.unit.engine.test_hardening import run, service  # noqa: F401 (fixtures)

CANARY = "canary-7f3a9c1e-forget-me"
QUERY = f"Deploy keys rotate weekly; marker {CANARY}."


def stage(store: MemoryStoreBackend, topic_id: str, context: str = "") -> tuple[str, str]:
    op = new_operation_id()
    staged = store.stage(memory("", topic_id=topic_id, context=context), op)
    return staged.memory_id, op


# -- the store ---------------------------------------------------------------------------------
def test_forget_deletes_rows_scrubs_the_ledger_and_journals_the_rest(store: MemoryStoreBackend) -> None:
    v1, op1 = stage(store, "cache")
    v2, op2 = stage(store, "cache")
    kept, op3 = stage(store, "kept")
    shared = store.queue_operation([v2, kept])  # a repair operation covering both topics
    store.mark_running([op1])

    store.forget("fg_1", [v2])  # the newest version of "cache" only

    assert [m.memory_id for m in store.topic_versions("cache")] == [v1]
    assert store.topic_versions("cache")[0].status is MemoryStatus.ACTIVE  # superseded by what is gone
    assert store.operation(op2) is None  # pending, nothing left: dropped (never a projection rebuild)
    assert store.operation(shared).memoryIds == [kept]  # type: ignore[union-attr]
    assert store.operation(op1).status == "running"  # type: ignore[union-attr]
    assert store.operation(op3) is not None
    [entry] = store.forget_journal()
    assert (entry.forget_id, entry.memory_ids, entry.pending) == ("fg_1", [v2], ["vectors", "graph"])
    store.forget_step_done("fg_1", "graph")
    assert store.forget_journal()[0].pending == ["vectors"]
    store.forget_step_done("fg_1", "vectors")
    assert store.forget_journal() == []
    store.forget("fg_2", [v1, kept])
    assert list(store.iter_memories()) == [] and store.list_page(MemoryFilter(), Page(10)) == []
    assert store.operation(op1).memoryIds == []  # type: ignore[union-attr]  # running: kept, ends as usual


def test_a_forgotten_old_version_leaves_the_newest_as_it_was(store: MemoryStoreBackend) -> None:
    v1, _ = stage(store, "cache")
    v2, _ = stage(store, "cache")
    store.forget("fg", [v1])
    assert [(m.memory_id, m.status) for m in store.topic_versions("cache")] == [(v2, MemoryStatus.ACTIVE)]


def test_the_journal_survives_a_reopen(open_store: Any) -> None:
    first = open_store()
    gone, _ = stage(first, "secret")
    first.forget("fg_x", [gone])
    first.close()
    again = open_store()
    assert [(e.forget_id, e.memory_ids) for e in again.forget_journal()] == [("fg_x", [gone])]
    assert again.get_memories([gone]) == []


def test_sqlite_keeps_no_byte_of_a_forgotten_memory(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.db")
    gone, _ = stage(store, "secret", context=f"the password is {CANARY}")
    stage(store, "other", context="nothing to see")
    files = [tmp_path / "store.db", tmp_path / "store.db-wal"]
    assert any(CANARY.encode() in f.read_bytes() for f in files if f.exists())
    store.forget("fg", [gone])
    assert not [f.name for f in tmp_path.iterdir() if CANARY.encode() in f.read_bytes()]
    assert (tmp_path / "store.db-wal").stat().st_size == 0  # checkpointed and truncated
    store.close()


# -- the service -------------------------------------------------------------------------------
@pytest.fixture
def live(service: FlowbabyService) -> Iterator[tuple[FlowbabyService, FakeWorker]]:  # noqa: F811
    """The never-opened service of test_hardening with a fake worker behind its operation manager."""
    worker = FakeWorker()
    service.operations = OperationManager(service.store, worker, max_running=2, max_queued=20, timeout_sec=30)
    yield service, worker


async def _forget(svc: FlowbabyService, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """forgetMemory as a front calls it: the request validated into its model, the reply as JSON."""
    reply = await svc.forget_memory(validate_request(ForgetMemoryRequest, params), **kwargs)
    return reply.model_dump(mode="json")


async def _start(svc: FlowbabyService) -> None:
    svc._warm_task = asyncio.create_task(svc._warm_up())
    svc._embed_task = asyncio.create_task(svc._embed_loop())
    svc.operations.start()
    await svc.vectors()


async def _stop(svc: FlowbabyService) -> None:
    await svc.operations.stop(1)
    for task in (svc._embed_task, svc._warm_task):
        if task is not None:
            task.cancel()
    if svc._vectors is not None:
        await asyncio.to_thread(svc._vectors.close)


def _files_holding(root: Path, text: str) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


def test_forget_takes_a_memory_out_of_search_and_every_local_file(live: tuple[FlowbabyService, FakeWorker]) -> None:
    svc, worker = live
    secret = summary("secret", context=QUERY, decisions=[f"Keep {CANARY}"])

    async def body() -> dict[str, Any]:
        await _start(svc)
        await call_json(svc, "ingest", secret)
        await call_json(svc, "ingest", summary("other", topic="Unrelated", context="Postgres vacuum runs nightly."))
        await svc.flush_vectors()
        await svc.operations.wait_idle()
        found = await call_json(svc, "retrieve", {"query": QUERY, "maxResults": 5})
        assert "secret" in [e["topicId"] for e in found["entries"]], (found.get("abstainReason"), found.get("indexing"))
        assert _files_holding(svc.paths.data, CANARY)  # it was on disk
        dry = await _forget(svc, {"topicId": "secret", "dryRun": True})
        assert (dry["dryRun"], dry["versions"], dry["forgetId"]) == (True, 1, None)
        shown = await call_json(svc, "get_memory", {"topicId": "secret"})
        assert shown["topicId"] == "secret"  # a dry run forgets nothing
        memory_id = (await call_json(svc, "get_memory", {"topicId": "secret"}))["latest"]["memoryId"]
        reply = await _forget(svc, {"topicId": "secret"}, agent_name="tester")
        after = await call_json(svc, "retrieve", {"query": QUERY, "maxResults": 5})
        listed = await call_json(svc, "list_memories", {"allVersions": True})
        try:
            await call_json(svc, "get_memory", {"topicId": "secret"})
        except FlowbabyError as error:
            missing = error.code.value
        try:
            await _forget(svc, {"topicId": "secret"})
        except FlowbabyError as error:
            again = error.code.value
        await _stop(svc)
        return {"reply": reply, "after": after, "listed": listed, "missing": missing, "again": again, "id": memory_id}

    out = run(body)
    reply = out["reply"]
    assert (reply["topics"], reply["versions"], reply["topicIds"], reply["pending"]) == (1, 1, ["secret"], [])
    assert reply["forgetId"].startswith("fg_")
    assert "secret" not in [e["topicId"] for e in out["after"]["entries"]]
    assert [m["topicId"] for m in out["listed"]["memories"]] == ["other"]
    assert out["missing"] == "NOT_FOUND" and out["again"] == "NOT_FOUND"
    assert worker.forgets == [[out["id"]]]  # the graph step ran, once
    assert svc.store.forget_journal() == []
    assert _files_holding(svc.paths.data, CANARY) == []  # SQLite, its WAL, LanceDB's fragments
    audit = (svc.paths.audit_log).read_text(encoding="utf-8")
    assert '"command": "forgetMemory"' in audit.replace('":"', '": "') and "secret" not in audit


def test_a_forget_during_that_memorys_build_runs_after_it(live: tuple[FlowbabyService, FakeWorker]) -> None:
    svc, worker = live
    building = asyncio.Event()
    worker.script.append(building)

    async def body() -> dict[str, Any]:
        await _start(svc)
        await call_json(svc, "ingest", summary("secret", context=f"Being built: {CANARY}"))
        while not worker.batches:  # the batch is running in the (fake) worker
            await asyncio.sleep(0.01)
        forgetting = asyncio.create_task(_forget(svc, {"topicId": "secret"}))
        await asyncio.sleep(0.3)
        assert worker.forgets == [] and not forgetting.done()  # the graph step waits for the build
        building.set()
        reply = await forgetting
        await _stop(svc)
        return reply

    reply = run(body)
    assert worker.calls == ["batch", "forget"] and reply["pending"] == []
    assert svc.store.forget_journal() == [] and svc.store.count_operations() == 0


def test_an_interrupted_forget_is_finished_at_the_next_start(live: tuple[FlowbabyService, FakeWorker]) -> None:
    """The store's transaction committed, then the process died: warm-up finishes the vector step and
    the operation manager the graph step."""
    svc, worker = live

    async def first() -> str:
        await _start(svc)
        await call_json(svc, "ingest", summary("secret", context=f"Interrupted: {CANARY}"))
        await svc.flush_vectors()
        await svc.operations.wait_idle()
        [gone] = [m.memory_id for m in svc.store.iter_memories()]
        svc.store.forget("fg_crash", [gone])  # the kill -9 comes right after this commit
        await _stop(svc)
        return gone

    gone = run(first)
    assert _files_holding(svc.paths.data, CANARY)  # LanceDB still holds it
    svc._retriever = svc._vectors = None
    svc.operations = OperationManager(svc.store, worker, max_running=2, max_queued=20, timeout_sec=30)

    async def restart() -> None:
        await _start(svc)
        await svc.operations.wait_idle()
        await _stop(svc)

    run(restart)
    assert worker.forgets == [[gone]] and svc.store.forget_journal() == []
    assert _files_holding(svc.paths.data, CANARY) == []


def test_forget_by_filter_and_its_validation(live: tuple[FlowbabyService, FakeWorker]) -> None:
    svc, _ = live

    async def body() -> dict[str, Any]:
        await _start(svc)
        for topic in ("tmp/a", "tmp/b", "keep"):
            await call_json(svc, "ingest", summary(topic))
        await call_json(svc, "ingest", summary("tmp/a", context="A second version of tmp/a."))
        dry = await _forget(svc, {"filter": {"topicIdPrefix": "tmp/"}, "dryRun": True})
        done = await _forget(svc, {"filter": {"topicIdPrefix": "tmp/"}})
        none = await _forget(svc, {"filter": {"topicIdPrefix": "nothing/"}})
        errors = {}
        for name, params in {
            "both": {"topicId": "keep", "filter": {}},
            "neither": {},
            "version alone": {"filter": {"text": "x"}, "version": 1},
            "empty filter": {"filter": {"allVersions": True, "text": None, "status": []}},
            "bad version": {"topicId": "keep", "version": 7},
        }.items():
            try:
                await _forget(svc, params)
            except FlowbabyError as error:
                errors[name] = (error.code.value, error.details.get("fields"))
        await _stop(svc)
        return {"dry": dry, "done": done, "none": none, "errors": errors}

    out = run(body)
    assert (out["dry"]["topics"], out["dry"]["versions"]) == (2, 3)
    assert (out["done"]["topics"], out["done"]["versions"], out["done"]["topicIds"]) == (2, 3, ["tmp/a", "tmp/b"])
    assert (out["none"]["versions"], out["none"]["forgetId"]) == (0, None)
    assert [m.topic_id for m in svc.store.iter_memories()] == ["keep"]
    assert out["errors"] == {
        "both": ("INVALID_PAYLOAD", ["topicId", "filter"]),
        "neither": ("INVALID_PAYLOAD", ["topicId", "filter"]),
        "version alone": ("INVALID_PAYLOAD", ["version"]),
        "empty filter": ("INVALID_PAYLOAD", ["filter"]),
        "bad version": ("NOT_FOUND", None),
    }


def test_cognee_text_files_are_removed_by_name_inside_the_data_folder_only(tmp_path: Path) -> None:
    """graph.cognify.worker.data_files: after a forget, a stored file that no remaining row names
    goes, whatever folder the rows' URIs name (a moved workspace); a symlink is unlinked, not
    followed; a data folder that links out of .flowbaby/ (a cloned repository) is left alone."""
    from graph.cognify.worker.data_files import remove_unnamed

    inside = tmp_path / ".flowbaby"
    data = inside / "cognee" / "data"
    (data / "sub").mkdir(parents=True)
    outside = tmp_path / "home"
    outside.mkdir()
    target = outside / "keep.txt"
    target.write_text("the user's own file")
    for name in ("text_a.txt", "text_b.txt", "text_c.txt", ".text_d.txt.7.tmp"):
        (data / name).write_text(CANARY)
    (data / "text_link.txt").symlink_to(target)
    old = "file:///old%20place/.flowbaby/cognee/data"
    kept = [f"file://{data}/text_b.txt", f"{old}/text_c.txt", f"{old}/..", None, "s3://bucket/"]
    assert remove_unnamed(data, inside, kept) == 2
    assert sorted(p.name for p in data.iterdir()) == [".text_d.txt.7.tmp", "sub", "text_b.txt", "text_c.txt"]
    assert target.read_text() == "the user's own file"

    linked = tmp_path / "cloned" / ".flowbaby"
    (linked / "cognee").mkdir(parents=True)
    (linked / "cognee" / "data").symlink_to(outside)
    assert remove_unnamed(linked / "cognee" / "data", linked, []) == 0
    assert target.exists()
