"""Folding batches into the projection gives exactly the graph a full rebuild gives."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import networkx as nx

from graph.backends.embedded.memory_store import MemoryStore
from graph.cognify.worker.document import render_document
from graph.core.graph_projection import batch_subgraph, build_projection, fold_projection, memory_node
from graph.core.memories import Memory, new_operation_id
from graph.extract.extractor import extract_graph
from tests.support.fakes import memory as fake_memory

Nodes = list[tuple[str, dict[str, Any]]]
Edges = list[tuple[str, str, str, dict[str, Any]]]

SYSTEMS = ["billing", "auth", "search", "ledger"]
TECH = ["Redis", "Postgres", "Kafka", "gRPC"]


def _memory(topic_id: str, rng: random.Random) -> Memory:
    system, tech = rng.choice(SYSTEMS), rng.choice(TECH)
    ticket = f"PLAT-{rng.randint(100, 120)}"
    day = f"2025-01-{rng.randint(1, 28):02d}T10:00:00Z"
    return fake_memory(
        "",
        topic_id=topic_id,
        version=0,
        topic=f"{system.title()} with {tech} ({ticket})",
        context=f"The {system} service moved to {tech}; see {system}/{tech.lower()}_client.py and {ticket}.",
        decisions=[f"Use {tech} for {system}"],
        created=day,
        references=[f"{system}/{tech.lower()}_client.py"],
        agent_name="test",
        plan_id=rng.choice([None, "plan-1", "plan-2"]),
    )


class FakeCognee:
    """cognee's graph in the shape get_graph_data returns, grown batch by batch: a chunk per
    document, entities upserted by id (the latest description wins), typed by is_a edges."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}

    def cognify(self, memories: list[Memory]) -> None:
        for memory in memories:
            chunk = f"chunk-{memory.memory_id}"
            self.nodes[chunk] = {"type": "DocumentChunk", "document_id": memory.memory_id}
            self.nodes[f"doc-{memory.memory_id}"] = {"type": "TextDocument"}
            self.edges[(chunk, f"doc-{memory.memory_id}", "is_part_of")] = {}
            graph = extract_graph(render_document(memory))
            for node in graph["nodes"]:
                entity = f"entity:{node['id']}"
                self.nodes[entity] = {"type": "Entity", "name": node["name"].lower(), "description": memory.topic}
                self.nodes[f"type:{node['type']}"] = {"type": "EntityType", "name": node["type"]}
                self.edges[(chunk, entity, "contains")] = {}
                self.edges[(entity, f"type:{node['type']}", "is_a")] = {}
            for edge in graph["edges"]:
                key = (
                    f"entity:{edge['source_node_id']}",
                    f"entity:{edge['target_node_id']}",
                    edge["relationship_name"],
                )
                self.edges[key] = {}

    def link(self, src: str, dst: str, relation: str) -> None:
        self.edges[(src, dst, relation)] = {}

    def data(self) -> tuple[Nodes, Edges]:
        return list(self.nodes.items()), [(*key, value) for key, value in self.edges.items()]


def _same(a: nx.MultiDiGraph, b: nx.MultiDiGraph) -> None:
    assert dict(a.nodes(data=True)) == dict(b.nodes(data=True))
    assert sorted(a.edges(keys=True, data=True), key=repr) == sorted(b.edges(keys=True, data=True), key=repr)


def _changed(graph: nx.MultiDiGraph, store: MemoryStore) -> list[Memory]:
    """What the worker folds besides the batch: memories new to the projection or whose state moved."""
    ids = [
        memory_id
        for memory_id, state in store.memory_states().items()
        if (node := graph.nodes.get(memory_node(memory_id))) is None or (node["status"], node["graph_state"]) != state
    ]
    return store.get_memories(ids)


def test_folding_each_batch_equals_a_full_rebuild(tmp_path: Path) -> None:
    rng = random.Random(7)
    store = MemoryStore(tmp_path / "store.sqlite")
    cognee = FakeCognee()
    projection: nx.MultiDiGraph | None = None
    topics = [f"topic-{i}" for i in range(12)]
    for batch_number in range(8):
        # New topics and new versions of old ones (which supersede them); some stay pending, unbuilt.
        batch = []
        for _ in range(rng.randint(1, 4)):
            operation = new_operation_id()
            batch.append(store.stage(_memory(rng.choice(topics), rng), operation))
        unbuilt = store.stage(_memory(f"later-{batch_number}", rng), new_operation_id())
        cognee.cognify(batch)
        if batch_number == 3:  # a relation from a new entity to an old one nothing else mentions
            cognee.nodes["entity:orphan"] = {"type": "Entity", "name": "orphan", "description": ""}
            cognee.nodes["type:concept"] = {"type": "EntityType", "name": "concept"}
            cognee.link("entity:orphan", "type:concept", "is_a")
        if batch_number == 4:  # cognee relates entities of one chunk
            chunk = f"chunk-{batch[0].memory_id}"
            ours = next(dst for src, dst, rel in cognee.edges if src == chunk and rel == "contains")
            cognee.link(chunk, "entity:orphan", "contains")  # named again: it was dropped until now
            cognee.link(ours, "entity:orphan", "relates_to")
        nodes, edges = cognee.data()
        ids = [m.memory_id for m in batch]
        if projection is None:
            projection = build_projection(nodes, edges, store.iter_memories())
        else:
            fold_projection(projection, *batch_subgraph(nodes, edges, ids), _changed(projection, store))
        _same(projection, build_projection(nodes, edges, store.iter_memories()))
        store.finish([m.operation_id for m in batch if m.operation_id], "completed")
        assert unbuilt.memory_id not in ids
    assert projection is not None
    assert "entity:orphan" in projection and projection.nodes["entity:orphan"]["entity_type"] == "concept"
    assert any(k == "supersedes" for _, _, k in projection.edges(keys=True))
    store.close()


def test_batch_subgraph_holds_only_what_the_batch_touched(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "store.sqlite")
    rng = random.Random(3)
    first = [store.stage(_memory(f"a-{i}", rng), new_operation_id()) for i in range(5)]
    second = [store.stage(_memory("b", rng), new_operation_id())]
    cognee = FakeCognee()
    cognee.cognify(first + second)
    nodes, edges = cognee.data()
    sub_nodes, sub_edges = batch_subgraph(nodes, edges, [second[0].memory_id])
    chunks = {n for n, d in sub_nodes if d["type"] == "DocumentChunk"}
    assert chunks == {f"chunk-{second[0].memory_id}"}
    assert len(sub_edges) < len(edges)
    store.close()
