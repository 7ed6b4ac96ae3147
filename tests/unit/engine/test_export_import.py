"""Export and import over both backends (tests/unit/conftest.py): a round trip gives the same
versions and the same retrieval rankings, importing twice adds nothing, and a file with a bad
line imports nothing and names the line and field. Services are never opened (as in
test_hardening): a hash embedder, LanceDB in this process, a fake graph worker."""

from __future__ import annotations

import asyncio
import io
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from flowbaby.memories_command import ImportRefused, export_to, import_from, read_export
from flowbaby.owner_line import call_json
from graph.backends.backend import Backend
from graph.backends.embedded.backend import EmbeddedBackend
from graph.cognify.operations import OperationManager
from graph.core.contract import export_json_schema
from graph.core.settings import LLMSettings, Settings
from graph.core.workspace import WorkspaceLock, WorkspacePaths, resolve_workspace
from graph.engine.service import FlowbabyService
from tests.conftest import summary
from tests.support.fakes import FakeWorker
from tests.unit.engine.test_hardening import HashEmbedder, run

ROOT = Path(__file__).resolve().parents[3]
QUERIES = ("Why did we move the session cache to Redis?", "frontend build tool", "Kafka retries", "billing ledger")


@pytest.fixture
def make_service(
    make_backend: Callable[[WorkspacePaths], Backend], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], FlowbabyService]]:
    """A new workspace's service; on Postgres each folder is its own namespace (its name)."""
    in_process = EmbeddedBackend.vectors
    monkeypatch.setattr(EmbeddedBackend, "vectors", lambda backend, e, idle_sec: in_process(backend, e, None))
    made: list[FlowbabyService] = []

    def make(name: str) -> FlowbabyService:
        root = tmp_path / f"{name}{uuid.uuid4().hex[:8]}"
        root.mkdir()
        paths = resolve_workspace(root)
        settings = Settings(llm=LLMSettings(), embedding_model=str(tmp_path))
        backend = replace(make_backend(paths), namespace_name=None)
        service = FlowbabyService(paths, settings, WorkspaceLock(paths), None, backend=backend)
        service.embedder = HashEmbedder()  # type: ignore[assignment]
        service.operations = OperationManager(service.store, FakeWorker(), max_running=2, max_queued=50, timeout_sec=30)
        made.append(service)
        return service

    yield make
    for service in made:
        service.store.close()


@asynccontextmanager
async def started(service: FlowbabyService) -> AsyncIterator[FlowbabyService]:
    service._warm_task = asyncio.create_task(service._warm_up())
    service._embed_task = asyncio.create_task(service._embed_loop())
    service.operations.start()
    await service.vectors()
    try:
        yield service
    finally:
        await service.operations.stop(1)
        for task in (service._embed_task, service._warm_task):
            task.cancel()
        if service._vectors is not None:
            await asyncio.to_thread(service._vectors.close)


async def fill(service: FlowbabyService) -> None:
    await call_json(service, "ingest", summary("redis-cache"))
    await call_json(
        service, "ingest", summary("redis-cache", context="Second thoughts: Redis Sentinel for the session cache.")
    )
    await call_json(
        service,
        "ingest",
        summary(
            "frontend-build",
            topic="Frontend build",
            context="The frontend build moved from webpack to vite.",
            timeScope="Q1 2025",
            agentName="builder",
        ),
    )
    decision = summary("kafka", topic="Kafka retries", context="Kafka consumers retry with backoff.")
    decision["metadata"] = {**decision["metadata"], "status": "DecisionRecord", "planId": None}
    await call_json(service, "ingest", decision)


async def rankings(service: FlowbabyService) -> list[list[tuple[str, int]]]:
    await service.flush_vectors()
    out = []
    for query in QUERIES:
        reply = await call_json(service, "retrieve", {"query": query, "maxResults": 5, "includeSuperseded": True})
        out.append([(e["topicId"], e["version"]) for e in reply["entries"]])
    return out


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_round_trip_same_versions_same_rankings_and_twice_adds_nothing(
    make_service: Callable[[str], FlowbabyService], tmp_path: Path
) -> None:
    source, target = make_service("src"), make_service("dst")

    async def body() -> dict[str, Any]:
        async with started(source):
            await fill(source)
            before = await rankings(source)
            out = io.StringIO()
            count = await export_to(source, out)
        exported = out.getvalue()
        path = tmp_path / "memories.jsonl"
        path.write_text(exported)
        records, errors = read_export(path)
        async with started(target):
            first = await import_from(target, records)
            second = await import_from(target, records)
            after = await rankings(target)
            again = io.StringIO()
            await export_to(target, again)
        return {
            "count": count,
            "exported": exported,
            "errors": errors,
            "first": first,
            "second": second,
            "before": before,
            "after": after,
            "again": again.getvalue(),
        }

    out = run(body)
    lines = _lines(out["exported"])
    header, memories = lines[0], lines[1:]
    assert header["format"] == "flowbaby-memories" and header["formatVersion"] == 1 and header["memories"] == 4
    assert out["count"] == 4 and out["errors"] == []
    assert [(m["topicId"], m["version"], m["status"]) for m in memories] == [
        ("redis-cache", 1, "Superseded"),
        ("redis-cache", 2, "Active"),
        ("frontend-build", 1, "Active"),
        ("kafka", 1, "DecisionRecord"),
    ]
    assert memories[1]["supersedes"] == memories[0]["memoryId"] and memories[0]["supersedes"] is None
    assert memories[2]["timeScope"] == "Q1 2025" and memories[2]["agentName"] == "builder"
    assert "graphState" not in memories[0] and "vector" not in json.dumps(memories[0])  # nothing derived
    assert (out["first"]["imported"], out["first"]["skipped"]) == (4, 0)
    assert (out["second"]["imported"], out["second"]["skipped"]) == (0, 4)
    assert _lines(out["again"])[1:] == memories  # every field as it was
    assert out["after"] == out["before"] and any(out["before"])


def test_a_file_with_bad_lines_imports_nothing_and_names_each(
    make_service: Callable[[str], FlowbabyService], tmp_path: Path
) -> None:
    source, target = make_service("src"), make_service("dst")

    async def export() -> str:
        async with started(source):
            await fill(source)
            out = io.StringIO()
            await export_to(source, out)
        return out.getvalue()

    lines = run(export).splitlines()
    broken = list(lines)
    broken[1] = json.dumps({**json.loads(lines[1]), "status": "Gone"})
    broken[2] = "{not json"
    record = json.loads(lines[3])
    del record["topic"]
    broken[3] = json.dumps(record)
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(broken) + "\n")
    records, errors = read_export(path)
    statuses = "Active, Superseded, DecisionRecord, Proposed"
    assert errors[0] == f'line 2: INVALID_PAYLOAD: Field "status" must be one of {statuses}'
    assert errors[1].startswith("line 3: INVALID_PAYLOAD: not JSON")
    assert errors[2] == 'line 4: INVALID_PAYLOAD: Field "topic" is required and must be a non-empty string'
    assert len(errors) == 3

    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines[:-1]) + "\n")
    assert read_export(short)[1] == [
        'line 1: INVALID_PAYLOAD: Field "memories" says 4 versions; the file holds 3 (cut short?)'
    ]
    future = tmp_path / "future.jsonl"
    future.write_text("\n".join([json.dumps({**json.loads(lines[0]), "formatVersion": 2}), *lines[1:]]) + "\n")
    assert read_export(future)[1][0].startswith('line 1: INVALID_PAYLOAD: Field "formatVersion"')

    # A wrong memoryId and a version stored here with other content are found by the service's dry
    # run before anything is written: all or nothing.
    good, _ = read_export(_write(tmp_path, lines))
    wrong = [(n, dict(r)) for n, r in good]
    wrong[-1][1]["memoryId"] = str(uuid.uuid4())

    async def attempts() -> tuple[str, str, int]:
        async with started(target):
            with pytest.raises(ImportRefused) as refused_id:
                await import_from(target, wrong)
            await call_json(
                target, "ingest", summary("kafka", topic="Kafka", context="Another first version of kafka here.")
            )
            with pytest.raises(ImportRefused) as refused_conflict:
                await import_from(target, good)
            listed = await call_json(target, "list_memories", {"allVersions": True})
        return str(refused_id.value), str(refused_conflict.value), listed["count"]

    wrong_id, conflict, stored = run(attempts)
    assert wrong_id == (
        'line 5: INVALID_PAYLOAD: Field "memories.3.memoryId" is not the id of version 1 of topicId "kafka"'
    )
    assert conflict.startswith('line 5: INVALID_PAYLOAD: Field "memories.3.memoryId": this workspace stores')
    assert stored == 1  # the three good versions before it were not imported either


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "good.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_schema_file_is_the_models_schema() -> None:
    on_disk = json.loads((ROOT / "docs" / "export-format.schema.json").read_text(encoding="utf-8"))
    assert on_disk == export_json_schema()
