"""Folding batches into the projection gives exactly the graph a full rebuild gives; the graph lane's
lane.json, saved with it, gives the lane exactly what the projection gives."""

from __future__ import annotations

import fcntl
import json
import os
import random
import threading
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from graph.backends.embedded import projection as projection_module
from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.embedded.projection import FileProjection
from graph.cognify.worker.document import render_document
from graph.core.graph_projection import (
    batch_subgraph,
    build_projection,
    fold_projection,
    load_projection,
    memory_node,
    parse_lane,
    save_projection,
)
from graph.core.memories import Memory, new_operation_id
from graph.extract.extractor import extract_graph
from graph.inspection.workspace_graph import WorkspaceGraph
from graph.search.graph_lane import GraphLane
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


def _saved_workspace(tmp_path: Path) -> tuple[FileProjection, list[Memory]]:
    """A projection of twenty memories saved as the worker saves it (projection.json and lane.json)."""
    store = MemoryStore(tmp_path / "store.sqlite")
    rng = random.Random(11)
    memories = [store.stage(_memory(f"t-{i}", rng), new_operation_id()) for i in range(20)]
    cognee = FakeCognee()
    cognee.cognify(memories)
    graph = build_projection(*cognee.data(), store.iter_memories())
    store.close()
    (tmp_path / "graph").mkdir()
    source = FileProjection(tmp_path / "graph" / "projection.json")
    assert source.save(graph, expected=None) is not None
    return source, memories


def _lane_state(lane: GraphLane, memories: list[Memory]) -> list[Any]:
    """Everything a ranking or an inspection reads of the lane."""
    entities = lane.query_entities("billing auth search ledger Redis Postgres Kafka gRPC PLAT-105 PLAT-110")
    seeds = lane.seed(entities, 300)
    return [
        entities,
        seeds,
        lane.expand(seeds, set()),
        lane.supersession_inputs()[1:],
        lane.ubiquitous_words(),
        lane.damaged,
        [lane.neighbourhood(m.memory_id, 2) for m in memories],
    ]


def test_the_lane_reads_lane_json_saved_with_the_projection_and_sees_the_same_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, memories = _saved_workspace(tmp_path)
    assert source.lane_path.is_file() and oct(source.lane_path.stat().st_mode & 0o777) == "0o600"
    assert source.lane_path.stat().st_size < source.path.stat().st_size
    (tmp_path / "elsewhere").mkdir()
    from_projection = GraphLane(FileProjection(tmp_path / "elsewhere" / "projection.json"))
    (tmp_path / "elsewhere" / "projection.json").write_bytes(source.path.read_bytes())  # no lane.json for this one
    from_projection.refresh()

    def unread(raw: bytes) -> None:
        raise AssertionError("the projection itself was parsed")

    monkeypatch.setattr("graph.backends.embedded.projection.parse_projection_bytes", unread)
    from_lane = GraphLane(source)
    from_lane.refresh()
    expected = _lane_state(from_projection, memories)
    assert expected[0] and expected[1] and expected[2] and expected[3][0]  # the graph has entities, hops, relations
    assert _lane_state(from_lane, memories) == expected


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"projection": [1',
        b"[]",
        b'{"projection": "STAMP", "memories": [1], "entities": [], "relations": [], "memoryEntities": []}',
        b'{"projection": "STAMP", "memories": ["m"], "entities": [["e", "n", "t", [5]]], "relations": [],'
        b' "memoryEntities": [[0]]}',
        b'{"projection": "STAMP", "memories": ["m"], "entities": [["e", "n", "t", [0]]], "relations": [],'
        b' "memoryEntities": []}',
        b'{"projection": "STAMP", "memories": [], "entities": [], "relations": [["a", ["b"], "c"]],'
        b' "memoryEntities": []}',
        b'{"projection": [1, 2, 3], "memories": [], "entities": [], "relations": [], "memoryEntities": []}',
        b'{"projection": "STAMP", "memories": ["m"], "entities": [["e", "n", "t", [-1]]], "relations": [],'
        b' "memoryEntities": [[0]]}',
    ],
)
def test_a_damaged_or_stale_lane_json_is_ignored_for_the_projection(tmp_path: Path, content: bytes) -> None:
    source, memories = _saved_workspace(tmp_path)
    expected = GraphLane(FileProjection(source.path))
    expected.refresh()
    source.lane_path.write_bytes(content.replace(b'"STAMP"', json.dumps(list(source.stamp() or ())).encode()))
    lane = GraphLane(source)
    lane.refresh()
    assert _lane_state(lane, memories) == _lane_state(expected, memories)
    assert not lane.damaged and lane.query_entities("Redis Postgres Kafka gRPC")


def test_a_projection_saved_after_lane_json_is_read_whole_and_a_damaged_one_is_still_served_empty(
    tmp_path: Path,
) -> None:
    source, _ = _saved_workspace(tmp_path)
    stale = source.lane_path.read_bytes()
    lane = GraphLane(source)
    lane.refresh()
    assert lane.query_entities("redis postgres kafka grpc")
    # A save cut between the two files (or a flowbaby before lane.json): the projection is what counts.
    graph = load_projection(source.path)
    graph.remove_nodes_from([n for n, d in graph.nodes(data=True) if d.get("name") == "redis"])
    save_projection(graph, source.path)
    assert source.lane_path.read_bytes() == stale
    lane.refresh()
    assert lane.query_entities("redis") == {} and lane.query_entities("postgres kafka grpc")
    source.path.write_bytes(b'{"nodes": [')  # damaged, next to a lane.json of an earlier save
    lane.refresh()
    assert lane.damaged and lane.query_entities("postgres") == {}


def test_a_save_replaces_lane_json_and_never_leaves_the_old_one_beside_a_new_projection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _ = _saved_workspace(tmp_path)
    graph = load_projection(source.path)
    graph.remove_nodes_from([n for n, d in graph.nodes(data=True) if d.get("name") == "kafka"])

    stamp, original = source.stamp(), projection_module.write_durably

    def cut(path: Path, data: bytes) -> None:  # the power fails once the projection is written
        if path == source.lane_path:
            raise OSError("cut")
        original(path, data)

    monkeypatch.setattr(projection_module, "write_durably", cut)
    with pytest.raises(OSError):
        source.save(graph, expected=stamp)
    monkeypatch.undo()
    assert source.stamp() != stamp
    assert not source.lane_path.exists()  # removed before the projection was replaced
    assert source.save(graph, expected=source.stamp()) is not None
    assert b'"kafka"' not in source.lane_path.read_bytes() and source.lane_path.read_bytes().count(b'"redis"') == 1


def test_a_projection_read_without_its_lane_json_writes_one_so_the_next_start_reads_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace from before lane.json (or a save cut between the two files) would parse the whole
    projection at every start (4.6 s and a 1.9 GB peak at 100k memories): the first read writes it."""
    source, memories = _saved_workspace(tmp_path)
    source.lane_path.unlink()
    first = GraphLane(source)
    first.refresh()
    stamp = source.stamp()
    assert stamp is not None and parse_lane(source.lane_path.read_bytes(), list(stamp)) is not None
    assert oct(source.lane_path.stat().st_mode & 0o777) == "0o600"

    def unread(raw: bytes) -> None:
        raise AssertionError("the projection itself was parsed")

    monkeypatch.setattr(projection_module, "parse_projection_bytes", unread)
    again = GraphLane(source)
    again.refresh()
    assert _lane_state(again, memories) == _lane_state(first, memories)


def test_a_lane_json_written_by_a_reader_never_lands_beside_a_projection_saved_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker saves (a forget, say) while an owner parses the projection it replaces: the owner's
    lane.json for the old projection is not written, and the worker's for the new one stays."""
    source, _ = _saved_workspace(tmp_path)
    source.lane_path.unlink()
    graph = load_projection(source.path)
    graph.remove_nodes_from([n for n, d in graph.nodes(data=True) if d.get("name") == "kafka"])
    original = projection_module.lane_records
    saved: list[tuple[int, int, int] | None] = []

    def save_meanwhile(data: dict[str, Any] | None) -> Any:
        if not saved:  # the owner's parse; the save's own call goes straight through
            saved.append(None)
            saved[0] = source.save(graph, expected=None)
        return original(data)

    monkeypatch.setattr(projection_module, "lane_records", save_meanwhile)
    old_stamp, records = source.read_lane()
    assert records is not None and saved[0] is not None and saved[0] != old_stamp
    assert parse_lane(source.lane_path.read_bytes(), list(saved[0])) is not None  # the worker's, for its save
    assert b'"kafka"' not in source.lane_path.read_bytes()


def test_a_reader_does_not_wait_for_a_save_in_progress_and_leaves_lane_json_to_it(tmp_path: Path) -> None:
    """A retrieval refreshing the lane while the worker saves (the save holds lane.lock from its delete
    to its write) is not held up, and writes nothing: the save writes the lane.json of its projection."""
    source, _ = _saved_workspace(tmp_path)
    source.lane_path.unlink()
    fd = os.open(source.lock_path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the worker's save, mid-way
        read: list[Any] = []
        reader = threading.Thread(target=lambda: read.append(source.read_lane()), daemon=True)
        reader.start()
        reader.join(timeout=10)
        assert read, "the read waited for the save's lock"
        stamp, records = read[0]
        assert stamp == source.stamp() and records is not None and not source.lane_path.exists()
    finally:
        os.close(fd)
    source.read_lane()
    assert source.lane_path.exists()  # once the save is over, the next parse writes it


def test_decision_sentences_are_not_entities_of_the_projection(tmp_path: Path) -> None:
    """The offline extractor makes each decision a node (its whole sentence as the name); the projection,
    which the memory browser draws and lists, keeps the entities the decision is about and not the
    sentence, and a projection saved before that reads without them too."""
    store = MemoryStore(tmp_path / "store.sqlite")
    rng = random.Random(5)
    memories = [store.stage(_memory(f"d-{i}", rng), new_operation_id()) for i in range(4)]
    cognee = FakeCognee()
    cognee.cognify(memories)
    sentence = memories[0].decisions[0].lower()
    assert any(d.get("name") == sentence for _, d in cognee.nodes.items())  # the extractor's decision node
    cognee.nodes["entity:said"] = {"type": "Entity", "name": "we agreed to keep the billing ledger on postgres"}
    cognee.link(f"chunk-{memories[0].memory_id}", "entity:said", "contains")
    graph = build_projection(*cognee.data(), store.iter_memories())
    store.close()
    entities = {d["name"]: d for _, d in graph.nodes(data=True) if d.get("kind") == "entity"}
    assert entities and sentence not in entities and "entity:said" not in graph
    assert not [d for d in entities.values() if d["entity_type"] == "decision"]
    assert {"redis", "postgres", "kafka", "grpc"} & set(entities)  # what the decisions are about stays
    old = graph.copy()
    old.add_node("entity:old", kind="entity", name=sentence, entity_type="decision", sources=[])
    old.add_edge(memory_node(memories[0].memory_id), "entity:old", key="mentions", relation="mentions")
    assert "entity:old" not in WorkspaceGraph(old, memories).graph
