"""The networkx projection of cognee's graph, persisted after each cognify.

Retrieval and the notebook read this file instead of cognee's database, which one
process may hold locked. It keeps what a reader needs and drops cognee's plumbing:

- memory nodes (`memory:<uuid>`, one per stored version) with topic, plan, status;
- entity nodes (cognee's entity id) with name, type, and the memories they came from;
- memory -mentions-> entity (through cognee's chunk -contains-> entity edges);
- entity -<relation>-> entity as extracted;
- memory -supersedes-> memory and plan -contains-> memory from the store.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from graph.core.files import write_atomic
from graph.core.jsonwire import loads_stored
from graph.core.memories import Memory, memory_uuid

if TYPE_CHECKING:  # imported where a graph is built or loaded: the owner's search reads the JSON only (~20 MB less)
    import networkx as nx

STRUCTURAL_TYPES = frozenset({"topic", "session", "decision", "plan"})
"""Entity types that describe a memory's own frame rather than what it talks about."""

STATEMENT_WORDS = 9
"""An "entity" named by this many words or more is a statement, not a thing."""


def is_statement(name: str, entity_type: str) -> bool:
    """A whole sentence rather than a thing: the offline extractor's decision nodes (a decision's text,
    keyed by its hash, which links only its own memory's entities) or any entity named by a long run of
    words. Left out of the projection: the memory itself holds its decisions, and as nodes they are drawn
    and listed beside real entities (issue 49)."""
    return entity_type == "decision" or len(name.split()) >= STATEMENT_WORDS


def memory_node(memory_id: str) -> str:
    return f"memory:{memory_id}"


def memory_attributes(memory: Memory) -> dict[str, Any]:
    """A memory node's attributes, the same in the projection and in inspection's join."""
    return {
        "kind": "memory",
        "name": memory.topic,
        "topic_id": memory.topic_id,
        "version": memory.version,
        "status": memory.status.value,
        "plan_id": memory.plan_id or "",
        "session_id": memory.session_id or "",
        "created_at": memory.created_at,
        "graph_state": memory.graph_state,
    }


def build_projection(
    nodes: list[tuple[str, dict[str, Any]]],
    edges: list[tuple[str, str, str, dict[str, Any]]],
    memories: Iterable[Memory],
) -> nx.MultiDiGraph:
    """Fold cognee's whole node/edge lists and every stored memory into a new projection
    (the full rebuild: the first batch of a worker, and the repair path)."""
    import networkx as nx

    graph = nx.MultiDiGraph()
    fold_projection(graph, nodes, edges, memories)
    return graph


def fold_projection(
    graph: nx.MultiDiGraph,
    nodes: list[tuple[str, dict[str, Any]]],
    edges: list[tuple[str, str, str, dict[str, Any]]],
    memories: Iterable[Memory],
) -> None:
    """Fold part of cognee's graph and some memories into a projection, in place.

    Folding a batch's subgraph (`batch_subgraph`) and the memories that are new or changed
    since the projection was built gives the same graph as a full rebuild: work in
    proportion to the batch, not the workspace. `memories` must hold every version of a
    topic that is new here and not yet in the projection, except versions older than the
    projection's own.
    """
    by_topic: dict[str, list[Memory]] = defaultdict(list)
    for memory in memories:
        graph.add_node(memory_node(memory.memory_id), **memory_attributes(memory))
        by_topic[memory.topic_id].append(memory)
        if memory.plan_id:
            plan = f"plan:{memory.plan_id}"
            graph.add_node(plan, kind="plan", name=memory.plan_id)
            graph.add_edge(plan, memory_node(memory.memory_id), key="contains", relation="contains")
    for topic_id, versions in by_topic.items():
        versions.sort(key=lambda m: m.version)
        # The version before the oldest one here is already in the projection (store versions count up by one).
        before = memory_node(memory_uuid(topic_id, versions[0].version - 1))
        if versions[0].version > 1 and before in graph:
            graph.add_edge(memory_node(versions[0].memory_id), before, key="supersedes", relation="supersedes")
        for older, newer in zip(versions, versions[1:], strict=False):
            graph.add_edge(
                memory_node(newer.memory_id), memory_node(older.memory_id), key="supersedes", relation="supersedes"
            )

    props = dict(nodes)
    entity_type: dict[str, str] = {}
    chunk_document: dict[str, str] = {}
    for node_id, data in nodes:
        if data.get("type") == "DocumentChunk" and data.get("document_id"):
            chunk_document[node_id] = str(data["document_id"])
    for src, dst, rel, _ in edges:
        if rel == "is_a" and props.get(dst, {}).get("type") == "EntityType":
            entity_type[src] = str(props[dst].get("name", ""))
    for node_id, data in nodes:  # statements are not entities: no node, no edge
        if data.get("type") == "Entity" and is_statement(str(data.get("name", "")), entity_type.get(node_id, "")):
            props[node_id] = {**data, "type": "Statement"}

    sources: dict[str, set[str]] = defaultdict(set)
    related: set[str] = set()
    for src, dst, rel, _ in edges:
        src_type = props.get(src, {}).get("type")
        dst_type = props.get(dst, {}).get("type")
        if src_type == "DocumentChunk" and dst_type == "Entity" and src in chunk_document:
            holder = memory_node(chunk_document[src])
            if holder in graph:
                sources[dst].add(holder)
                graph.add_edge(holder, dst, key="mentions", relation="mentions")
        elif src_type == "Entity" and dst_type == "Entity":
            graph.add_edge(src, dst, key=rel, relation=rel)
            related.update((src, dst))

    for node_id, data in nodes:
        if props[node_id].get("type") != "Entity":  # chunks, documents, summaries, types, statements
            continue
        if node_id not in graph and not sources.get(node_id):
            continue
        known = graph.nodes[node_id] if node_id in graph else {}
        # Already sorted: adding a batch's few memories to a hub entity's thousands is a linear merge.
        mentioned: list[str] = known.get("sources", [])
        added = {m.removeprefix("memory:") for m in sources.get(node_id, ())}.difference(mentioned)
        if added:
            mentioned = sorted(mentioned + sorted(added))
        graph.add_node(
            node_id,
            kind="entity",
            name=str(data.get("name", "")),
            entity_type=entity_type.get(node_id, known.get("entity_type", "")),
            description=str(data.get("description", ""))[:300],
            sources=mentioned,
        )
    # Entity-to-entity edges may reference entities that were dropped as plumbing.
    graph.remove_nodes_from([n for n in related if n in graph and "kind" not in graph.nodes[n]])


def batch_subgraph(
    nodes: list[tuple[str, dict[str, Any]]],
    edges: list[tuple[str, str, str, dict[str, Any]]],
    memory_ids: Iterable[str],
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, str, str, dict[str, Any]]]]:
    """The part of cognee's graph that a batch of memories added or touched: their chunks, the
    entities those contain, and those entities' types and relations to each other."""
    wanted = set(memory_ids)
    props = dict(nodes)
    chunks = {
        node_id
        for node_id, data in nodes
        if data.get("type") == "DocumentChunk" and str(data.get("document_id", "")) in wanted
    }
    entities = {dst for src, dst, _, _ in edges if src in chunks and props.get(dst, {}).get("type") == "Entity"}
    # cognee relates entities of one chunk, which that chunk contains: a relation the batch made has
    # both ends among its entities (a hub's relations to the rest of the graph are older, and kept).
    kept = [edge for edge in edges if edge[0] in chunks or edge[0] in entities and edge[1] in entities]
    ends = chunks | entities | {end for edge in kept for end in edge[:2]}
    kept += [edge for edge in edges if edge[2] == "is_a" and edge[0] in ends]
    ends |= {edge[1] for edge in kept}
    return [(node_id, props[node_id]) for node_id in ends if node_id in props], kept


def save_projection(graph: nx.MultiDiGraph, path: Path) -> dict[str, Any]:
    """Atomic and durable: written to a temporary file, fsynced, renamed over the old one and the
    folder fsynced, so neither a reader nor a power cut ever sees half a file. Returns the JSON saved."""
    data = projection_data(graph)
    write_durably(path, json.dumps(data).encode("utf-8"))
    return data


def projection_data(graph: nx.MultiDiGraph) -> dict[str, Any]:
    import networkx as nx

    data: dict[str, Any] = nx.node_link_data(graph, edges="edges")
    return data


def dump_projection(graph: nx.MultiDiGraph) -> bytes:
    return json.dumps(projection_data(graph)).encode("utf-8")


def write_durably(path: Path, data: bytes) -> None:
    write_atomic(path, data, durable=True)


def read_projection_json(path: Path) -> dict[str, Any] | None:
    """The projection file's JSON; {} if there is none yet, None if it is unreadable (empty,
    truncated, not JSON): a derived file, so the caller treats it as empty and has it rebuilt."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    return parse_projection_bytes(raw)


def load_projection(path: Path) -> nx.MultiDiGraph:
    """The projection as a graph; an unreadable file reads as an empty graph."""
    return parse_projection(read_projection_json(path))


def parse_projection_bytes(raw: bytes) -> dict[str, Any] | None:
    """Projection JSON from its bytes; None if it is not a projection (see read_projection_json)."""
    try:
        data = loads_stored(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("nodes", []), list) else None


def parse_projection(data: dict[str, Any] | None) -> nx.MultiDiGraph:
    """A graph from projection JSON; none or an unreadable one is an empty graph."""
    import networkx as nx

    if not data:
        return nx.MultiDiGraph()
    try:
        return nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
    except (KeyError, TypeError, ValueError, AttributeError, nx.NetworkXError):  # AttributeError: a node not an object
        return nx.MultiDiGraph()


class LaneRecords(NamedTuple):
    """What the graph lane reads of a projection: entity nodes in the file's order as (id, name, type,
    the memories it came from), relations between two distinct entities as (source, target, key) in
    the file's order, and each memory's entities. Memories and entities sorted and each once."""

    entities: list[tuple[str, str, str, tuple[str, ...]]]
    relations: list[tuple[str, str, str]]
    memory_entities: dict[str, tuple[str, ...]]
    positions: tuple[list[str], list[np.ndarray]] | None = None
    """Read from a saved lane: its memories in order, and each entity's memories as positions into them
    (what the graph lane's seed and expansion compute on, with no id looked up at query time)."""


def lane_records(data: dict[str, Any] | None) -> LaneRecords | None:
    """The lane's records of projection JSON; None when it is unreadable or not shaped like a
    projection (the lane then serves an empty graph). A projection has ~9 `mentions` edges a memory,
    which the entities' `sources` already say: only the few entity-to-entity edges are kept."""
    if data is None:
        return None
    nodes, edges = data.get("nodes", []), data.get("edges", [])
    if not isinstance(edges, list):
        return None
    if not all(isinstance(n, dict) and "id" in n for n in nodes):
        return None
    entities: list[tuple[str, str, str, tuple[str, ...]]] = []
    memory_entities: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        if node.get("kind") != "entity":
            continue
        sources = set(node.get("sources", []))
        for memory_id in sources:
            memory_entities[memory_id].add(node["id"])
        entities.append((node["id"], node.get("name", ""), node.get("entity_type", ""), tuple(sorted(sources))))
    ids = {entity[0] for entity in entities}
    relations: list[tuple[str, str, str]] = []
    for edge in edges:  # one pass: ~1M edges at 100k memories
        if not (isinstance(edge, dict) and "source" in edge and "target" in edge and "key" in edge):
            return None
        src, dst = edge["source"], edge["target"]
        if src in ids and dst in ids and src != dst:
            relations.append((src, dst, edge["key"]))
    return LaneRecords(entities, relations, {m: tuple(sorted(memory_entities[m])) for m in sorted(memory_entities)})


def dump_lane(stamp: object, records: LaneRecords) -> bytes:
    """The lane's records as plain JSON, for the projection of `stamp`: each memory id written once,
    sorted, and both directions of the memory-entity join as indexes (~18 MB at 100k memories against
    the projection's ~220 MB), so a reader builds no set and sorts nothing."""
    memories = sorted(records.memory_entities)
    index = {m: i for i, m in enumerate(memories)}
    position: dict[str, int] = {}
    for i, entity in enumerate(records.entities):
        position.setdefault(entity[0], i)
    lane = {
        "projection": stamp,
        "memories": memories,
        "entities": [[e, name, kind, list(map(index.__getitem__, held))] for e, name, kind, held in records.entities],
        "relations": records.relations,
        "memoryEntities": [list(map(position.__getitem__, records.memory_entities[m])) for m in memories],
    }
    return json.dumps(lane, separators=(",", ":")).encode("utf-8")


def parse_lane(raw: bytes, stamp: object) -> LaneRecords | None:
    """The lane's records from dump_lane's bytes if they were written for the projection of `stamp`;
    None otherwise (missing, stale, damaged: the caller reads the projection itself). Plain JSON,
    checked while it is read: nothing in a workspace is unpickled or trusted to be well formed."""
    try:
        lane = loads_stored(raw)
        if not isinstance(lane, dict) or lane.get("projection") != stamp:
            return None
        memories = lane["memories"]
        if not isinstance(memories, list) or not all(type(m) is str for m in memories):
            return None
        memory = memories.__getitem__
        entities: list[tuple[str, str, str, tuple[str, ...]]] = []
        positions: list[np.ndarray] = []
        for entity_id, name, kind, held in lane["entities"]:
            if not (type(entity_id) is type(name) is type(kind) is str and type(held) is list):
                return None
            entities.append((entity_id, name, kind, tuple(map(memory, held))))  # an index out of range raises
            at = np.array(held, dtype=np.int32)
            if at.size and at.min() < 0:  # Python would read it from the end
                return None
            positions.append(at)
        relations: list[tuple[str, str, str]] = []
        for src, dst, key in lane["relations"]:
            if not type(src) is type(dst) is type(key) is str:
                return None
            relations.append((src, dst, key))
        entity = [e[0] for e in entities].__getitem__
        joined = lane["memoryEntities"]
        if not isinstance(joined, list) or not all(type(held) is list for held in joined):
            return None
        memory_entities = dict(zip(memories, (tuple(map(entity, held)) for held in joined), strict=True))
    except (ValueError, KeyError, TypeError, IndexError, OverflowError):
        return None
    return LaneRecords(entities, relations, memory_entities, (memories, positions))
