"""Background graph building through the real bridge, cognee, LanceDB and MiniLM."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.client import BridgeClient
from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.embedded.vectors import VectorIndex
from graph.core.graph_projection import load_projection, memory_node
from graph.core.memories import memory_uuid
from graph.core.settings import load_settings
from graph.core.workspace import resolve_workspace
from graph.search.embedder import Embedder
from tests.conftest import summary

pytestmark = pytest.mark.slow


def _entity_names(workspace: Path) -> dict[str, dict]:
    graph = load_projection(workspace / ".flowbaby" / "graph" / "projection.json")
    return {d["name"]: {"id": n, **d} for n, d in graph.nodes(data=True) if d.get("kind") == "entity"}


LIMITER = summary(
    "limiter",
    topic="API rate limiter",
    context="The gateway rate limiter stores its sliding windows in the redis cluster.",
    decisions=["Return HTTP 429 with Retry-After"],
    references=[],
)
"""A second memory that shares the redis component with summary()."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One workspace for the module's graph reading tests (one bridge and cognee worker instead of one
    per test): summary() ingested and built, its notice and status taken, then LIMITER built after it."""
    workspace = tmp_path_factory.mktemp("built") / "ws"
    workspace.mkdir()
    client = BridgeClient(workspace, extra_args=["--shutdown-grace", "2"])
    try:
        reply = client.result("ingestForAgent", summary())
        notice = client.wait_notification(300)
        status = client.result("backgroundStatus", {"operationId": reply["operationId"]})
        second = client.result("ingestForAgent", LIMITER)
        client.wait_idle(300)
    finally:
        client.close()
    return {"workspace": workspace, "reply": reply, "notice": notice, "status": status, "second": second}


def test_summary_becomes_an_entity_graph(built: dict[str, Any]) -> None:
    reply, notice, status, workspace = built["reply"], built["notice"], built["status"], built["workspace"]
    assert reply["success"] and reply["staged"]
    assert notice["method"] == "backgroundOperationCompleted"
    assert notice["params"] == {"operationId": reply["operationId"], "status": "completed"}
    assert status["status"] == "completed" and status["startedAt"] and status["finishedAt"]
    assert status["metrics"]["llmCalls"] >= 1 and status["metrics"]["graphNodes"] > 5

    entities = _entity_names(workspace)
    for expected in ("redis", "memcached", "billing/reconcile.py", "e_ledger_lock", "session cache", "plan-015"):
        assert expected in entities, f"{expected} missing from {sorted(entities)}"
    assert entities["redis"]["entity_type"] == "technology"
    memory_id = reply["ingestion_metrics"]["memoryId"]
    graph = load_projection(workspace / ".flowbaby" / "graph" / "projection.json")
    mentioned = {
        graph.nodes[v]["name"] for _, v, k in graph.out_edges(memory_node(memory_id), keys=True) if k == "mentions"
    }
    assert {"redis", "billing/reconcile.py"} <= mentioned
    assert memory_id in entities["redis"]["sources"]
    # cognee keeps no vectors (contract section 6): no LanceDB collection
    paths = resolve_workspace(workspace)
    assert (paths.cognee_system / "databases").is_dir()
    assert not list(paths.cognee_system.rglob("*.lance")), "cognee wrote vector collections"


def test_cognee_vectors_when_asked(spawn, workspace: Path) -> None:
    """FLOWBABY_COGNEE_VECTORS=1 (contract section 10): cognee embeds into its own collections."""
    client = spawn(workspace, env={**os.environ, "FLOWBABY_COGNEE_VECTORS": "1"})
    reply = client.result("ingestForAgent", summary())
    client.wait_idle(300)
    status = client.result("backgroundStatus", {"operationId": reply["operationId"]})
    client.close()
    assert status["status"] == "completed" and status["metrics"]["embeddingCalls"] > 1
    tables = {path.name for path in resolve_workspace(workspace).cognee_system.rglob("*.lance")}
    assert {"Entity_name.lance", "DocumentChunk_text.lance"} <= tables, tables


def test_shared_component_links_two_summaries(built: dict[str, Any]) -> None:
    """The second memory, built in a later batch, joins the first one's redis entity."""
    redis = _entity_names(built["workspace"])["redis"]
    memory_ids = {built["reply"]["ingestion_metrics"]["memoryId"], built["second"]["ingestion_metrics"]["memoryId"]}
    assert memory_ids <= set(redis["sources"])


def test_kill_9_after_staged_reply_loses_nothing(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    reply = client.result("ingestForAgent", summary())
    assert reply["staged"]
    os.kill(client.proc.pid, signal.SIGKILL)
    client.proc.wait()

    restarted = spawn(workspace)
    assert restarted.result("health")["memories"] == 1
    final = restarted.wait_idle(300)
    memory_id = reply["ingestion_metrics"]["memoryId"]
    ops = final["operations"]
    assert any(op["status"] == "completed" and memory_id in op["memoryIds"] for op in ops), ops
    assert {op["status"] for op in ops} <= {"completed", "terminated"}
    restarted.close()

    paths = resolve_workspace(workspace)
    store = MemoryStore(paths.store_db)
    [memory] = store.get_memories([memory_id])
    store.close()
    assert memory.topic == "Redis caching decision" and memory.graph_state == "indexed"
    index = VectorIndex(paths.vectors, Embedder(load_settings(paths).embedding_model))
    assert memory_id in index.indexed_memory_ids()


def test_running_operation_interrupted_is_resumed_under_its_id(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    reply = client.result("ingestForAgent", summary())
    deadline = time.monotonic() + 120
    while client.result("backgroundStatus", {"operationId": reply["operationId"]})["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(client.proc.pid, signal.SIGKILL)
    client.proc.wait()

    restarted = spawn(workspace)
    final = restarted.wait_idle(300)
    assert [op["operationId"] for op in final["operations"]] == [reply["operationId"]]
    resumed = restarted.result("backgroundStatus", {"operationId": reply["operationId"]})
    assert (resumed["status"], resumed["attempts"], resumed["errorCode"]) == ("completed", 1, None)


def test_crashed_worker_is_retried(spawn, workspace: Path) -> None:
    client = spawn(workspace)
    reply = client.result("ingestForAgent", summary())
    deadline = time.monotonic() + 120
    while not (pid := client.result("health")["workerPid"]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    final = client.wait_idle(300)
    [op] = final["operations"]
    assert op["operationId"] == reply["operationId"]
    assert op["status"] == "completed" and op["attempts"] == 2


def test_memory_ids_are_stable_per_version() -> None:
    assert memory_uuid("t", 1) == memory_uuid("t", 1) != memory_uuid("t", 2)


def test_batch_over_deadline_fails_with_bridge_timeout_then_index_status_and_repair(spawn, workspace: Path) -> None:
    """A batch over its deadline fails with BRIDGE_TIMEOUT and keeps the memory; indexStatus then asks for
    a repair, which a healthy owner does once."""
    failing = spawn(workspace, env={**os.environ, "FLOWBABY_OPERATION_TIMEOUT_SEC": "0.2"})
    reply = failing.result("ingestForAgent", summary())
    notice = failing.wait_notification(300)
    assert notice["params"] == {"operationId": reply["operationId"], "status": "failed", "errorCode": "BRIDGE_TIMEOUT"}
    assert "deadline" in failing.result("backgroundStatus", {"operationId": reply["operationId"]})["error"]
    assert failing.result("health")["memories"] == 1  # the memory itself is kept
    status = failing.result("indexStatus")
    assert status["status"] == "repair_needed" and status["needs_repair"] and status["can_search"]
    assert status["counts"]["withoutGraph"] == 1 and status["counts"]["failedOperations"] == 1
    failing.close()

    healthy = spawn(workspace)
    repaired = healthy.result("repair", {})
    assert repaired["requeuedMemories"] == 1 and repaired["operationId"]
    assert healthy.result("repair", {})["requeuedMemories"] == 0  # nothing is queued twice
    assert healthy.wait_notification(300)["params"] == {"operationId": repaired["operationId"], "status": "completed"}
    final = healthy.result("indexStatus")
    assert final["status"] == "ready" and final["coverage"] == {"vectors": 1.0, "graph": 1.0}
    assert healthy.result("backgroundStatus", {"operationId": reply["operationId"]})["status"] == "failed"
