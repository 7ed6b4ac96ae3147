"""The whole graph's snapshot without networkx gives what WorkspaceGraph gives, and the engine keeps it
until the projection is saved again or a version is stored, forgotten or changes state."""

from __future__ import annotations

import asyncio
import copy
import random
from pathlib import Path
from typing import Any

import networkx as nx

from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.embedded.projection import FileProjection
from graph.core.contract import GraphSnapshotRequest, MemoryStatus
from graph.core.graph_projection import build_projection, memory_node, parse_projection
from graph.core.memories import new_operation_id
from graph.engine.inspection import Inspection
from graph.inspection.snapshot import whole_snapshot
from graph.inspection.workspace_graph import WorkspaceGraph
from tests.unit.core.test_projection import FakeCognee, _memory


def _networkx(data: dict[str, Any] | None, store: MemoryStore) -> dict[str, Any]:
    return WorkspaceGraph(parse_projection(data), store.iter_memories()).snapshot()


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Equal nodes in the same order and equal edges (networkx lists them by node, the file by save)."""
    assert {k: v for k, v in a.items() if k != "edges"} == {k: v for k, v in b.items() if k != "edges"}
    assert sorted(a["edges"], key=repr) == sorted(b["edges"], key=repr)


def _projection(tmp_path: Path) -> tuple[MemoryStore, nx.MultiDiGraph]:
    """Six memories, four of them in the graph; one superseded since, one failed since (the projection's
    copies are older than the store's), and a decision sentence saved as an entity by an older version."""
    store = MemoryStore(tmp_path / "store.sqlite")
    rng = random.Random(7)
    memories = [store.stage(_memory(f"t-{i}", rng), new_operation_id()) for i in range(6)]
    cognee = FakeCognee()
    cognee.cognify(memories[:4])
    graph = build_projection(*cognee.data(), store.iter_memories())
    graph.add_node("entity:old", kind="entity", name="we keep the ledger on postgres for the next two years")
    graph.add_edge(memory_node(memories[0].memory_id), "entity:old", key="mentions", relation="mentions")
    store.set_status(memories[1].memory_id, MemoryStatus.SUPERSEDED)
    store.set_graph_state([memories[2].memory_id], "failed")
    return store, graph


def test_whole_snapshot_equals_the_networkx_snapshot(tmp_path: Path) -> None:
    store, graph = _projection(tmp_path)
    data = nx.node_link_data(graph, edges="edges")
    fast = whole_snapshot(data, store.iter_memories())
    _same(fast, _networkx(data, store))
    assert "entity:old" not in {n["id"] for n in fast["nodes"]}
    assert not [e for e in fast["edges"] if "entity:old" in (e["source"], e["target"])]
    # A projection networkx reads differently than written: a repeated node, a repeated edge, an edge
    # without a key, an edge to a node not listed.
    odd = copy.deepcopy(data)
    odd["nodes"].append({**odd["nodes"][0], "description": "later"})
    odd["edges"] += [dict(odd["edges"][0]), {"source": odd["nodes"][1]["id"], "target": "entity:elsewhere"}]
    del odd["edges"][1]["key"]
    _same(whole_snapshot(odd, store.iter_memories()), _networkx(odd, store))
    odd_edges = {"graph": {"name": "g"}, "nodes": [], "edges": [{"source": "a", "target": "b"}]}
    for unreadable in (None, {}, odd_edges, {"nodes": ["not an object"]}):
        _same(whole_snapshot(unreadable, store.iter_memories()), _networkx(unreadable, store))
    store.close()


class _Inspector(Inspection):
    """The engine's inspection over a real store and projection file, without the rest of the engine."""

    def __init__(self, store: MemoryStore, projection: FileProjection) -> None:
        self.store, self.projection, self._whole_graph = store, projection, None


def test_the_engine_keeps_the_snapshot_until_the_graph_or_a_memory_changes(tmp_path: Path) -> None:
    store, graph = _projection(tmp_path)
    (tmp_path / "graph").mkdir()
    projection = FileProjection(tmp_path / "graph" / "projection.json")
    projection.save(graph, expected=None)
    engine = _Inspector(store, projection)
    whole = GraphSnapshotRequest()

    def snapshot() -> Any:
        return asyncio.run(engine.graph_snapshot(whole))

    first = snapshot()
    assert snapshot() is first  # nothing changed: the same reply, not a build
    rng = random.Random(3)
    added = store.stage(_memory("t-new", rng), new_operation_id())  # a write
    second = snapshot()
    assert second is not first and memory_node(added.memory_id) in {n["id"] for n in second.nodes}
    other = MemoryStore(tmp_path / "store.sqlite")  # another process (the worker) changes a graph state
    other.set_graph_state([added.memory_id], "failed")
    other.close()
    third = snapshot()
    assert third is not second
    assert {n["id"]: n.get("graph_state") for n in third.nodes}[memory_node(added.memory_id)] == "failed"
    forgotten = next(m for m in store.iter_memories() if m.topic_id == "t-0")
    store.forget("f-1", [forgotten.memory_id])
    assert snapshot() is not third  # (the forget's own step then saves the projection without it)
    graph.add_node("entity:saved-later", kind="entity", name="kafka", entity_type="technology")
    projection.save(graph, expected=None)  # the worker saves the projection again
    assert "entity:saved-later" in {n["id"] for n in snapshot().nodes}
    _same(snapshot().model_dump(exclude={"topicId", "hops", "success"}), _networkx(projection.read()[1], store))
    store.close()
