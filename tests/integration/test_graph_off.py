"""FLOWBABY_BUILD_GRAPH=0 through the real bridge: memories are staged, embedded and found, their
graph operations wait in the ledger, no cognee worker ever starts; the next start with the setting
at 1 builds them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from graph.core.graph_projection import load_projection, memory_node
from graph.core.workspace import resolve_workspace
from tests.conftest import summary

pytestmark = pytest.mark.slow

WORKER_STARTED = "cognee worker started"


def _logs(workspace: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted((workspace / ".flowbaby" / "logs").rglob("*.log*")))


def test_graph_building_off_leaves_the_graph_pending_and_the_next_start_builds_it(spawn, workspace: Path) -> None:
    # Capacity 2 (2 running + 0 queued): with building on, a third memory would be refused (429).
    env = {**os.environ, "FLOWBABY_MAX_QUEUED": "0"}
    off = spawn(workspace, env={**env, "FLOWBABY_BUILD_GRAPH": "0"})
    staged = [
        off.result("ingestForAgent", summary(f"topic-{i}", topic=f"Decision {i} on E_LEDGER_LOCK")) for i in range(3)
    ]
    assert all(r["staged"] and r["ingestion_metrics"]["graph"] == "pending" for r in staged)
    found = off.result("retrieveForAgent", {"query": "E_LEDGER_LOCK", "maxResults": 5})
    assert {e["topicId"] for e in found["entries"]} == {"topic-0", "topic-1", "topic-2"}
    assert not any("graph" in e["lanes"] for e in found["entries"])
    gone = off.result("forgetMemory", {"topicId": "topic-2"})  # nothing built: no worker needed for it
    assert gone["versions"] == 1 and gone["pending"] == []
    index = off.result("indexStatus")
    assert index["graphBuilding"] is False and index["status"] == "partial"
    assert index["counts"]["pendingOperations"] == 2 and "FLOWBABY_BUILD_GRAPH=0" in index["message"]
    queue = off.result("backgroundStatus")
    assert queue["graphBuilding"] is False and queue["counts"] == {"pending": 2}
    health = off.result("health")
    assert health["graphBuilding"] is False and health["workerPid"] is None and health["pendingOperations"] == 2
    off.close()
    paths = resolve_workspace(workspace)
    assert WORKER_STARTED not in _logs(workspace) and not paths.cognee_system.exists()

    on = spawn(workspace, env=env)
    ids = {r["operationId"] for r in staged[:2]}
    done = [on.wait_notification(300)["params"] for _ in ids]
    assert {n["operationId"] for n in done} == ids and {n["status"] for n in done} == {"completed"}
    assert on.result("health")["graphBuilding"] is True
    on.close()
    assert WORKER_STARTED in _logs(workspace)
    graph = load_projection(paths.projection)
    for reply in staged[:2]:
        assert graph.has_node(memory_node(reply["ingestion_metrics"]["memoryId"]))
