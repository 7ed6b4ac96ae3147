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
import os
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from graph.core.store import Memory

STRUCTURAL_TYPES = frozenset({"topic", "session", "decision", "plan"})
"""Entity types that describe a memory's own frame rather than what it talks about."""


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
    """Fold cognee's node/edge lists and the store's memories into the projection."""
    graph = nx.MultiDiGraph()
    by_topic: dict[str, list[Memory]] = defaultdict(list)
    for memory in memories:
        graph.add_node(memory_node(memory.memory_id), **memory_attributes(memory))
        by_topic[memory.topic_id].append(memory)
        if memory.plan_id:
            plan = f"plan:{memory.plan_id}"
            graph.add_node(plan, kind="plan", name=memory.plan_id)
            graph.add_edge(plan, memory_node(memory.memory_id), key="contains", relation="contains")
    for versions in by_topic.values():
        versions.sort(key=lambda m: m.version)
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

    sources: dict[str, set[str]] = defaultdict(set)
    for src, dst, rel, _ in edges:
        src_type = props.get(src, {}).get("type")
        dst_type = props.get(dst, {}).get("type")
        if src_type == "DocumentChunk" and dst_type == "Entity" and src in chunk_document:
            source = memory_node(chunk_document[src])
            if source in graph:
                sources[dst].add(source)
                graph.add_edge(source, dst, key="mentions", relation="mentions")
        elif src_type == "Entity" and dst_type == "Entity":
            graph.add_edge(src, dst, key=rel, relation=rel)

    for node_id, data in nodes:
        if data.get("type") != "Entity":  # chunks, documents, summaries, types: cognee's plumbing
            continue
        if node_id not in graph and not sources.get(node_id):
            continue
        graph.add_node(
            node_id,
            kind="entity",
            name=str(data.get("name", "")),
            entity_type=entity_type.get(node_id, ""),
            description=str(data.get("description", ""))[:300],
            sources=sorted(m.removeprefix("memory:") for m in sources.get(node_id, ())),
        )
    # Entity-to-entity edges may reference entities that were dropped as plumbing.
    for node_id in [n for n, d in graph.nodes(data=True) if "kind" not in d]:
        graph.remove_node(node_id)
    return graph


def save_projection(graph: nx.MultiDiGraph, path: Path) -> None:
    """Atomic write, so a reader never sees half a file."""
    data = nx.node_link_data(graph, edges="edges")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def load_projection(path: Path) -> nx.MultiDiGraph:
    if not path.is_file():
        return nx.MultiDiGraph()
    data = json.loads(path.read_text(encoding="utf-8"))
    return nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
