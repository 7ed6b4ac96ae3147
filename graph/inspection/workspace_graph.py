"""The public Python API for looking at a workspace's graph.

The CLI (`flowbaby graph ...`), the bridge's `graphSnapshot`, `GET /api/graph` and the
inspection notebook all read the graph through `WorkspaceGraph`. It joins the networkx
projection written after each cognify with the store's current view of every memory,
so a memory still waiting for its graph shows up (as a node with no edges) instead of
silently missing. Reading needs no workspace lock: the projection is replaced
atomically and the store is SQLite in WAL mode, so a running bridge is never disturbed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import networkx as nx

from graph.backends.embedded.memory_store import MemoryStore, check_store_sealed
from graph.core.contract import OperationStatus
from graph.core.files import atomic_writer
from graph.core.graph_projection import (
    STRUCTURAL_TYPES,
    is_statement,
    load_projection,
    memory_attributes,
    memory_node,
)
from graph.core.memories import Memory
from graph.core.workspace import WorkspacePaths, resolve_workspace
from graph.inspection.html_page import render_html
from graph.inspection.names import EXPORT_FORMATS, ExportFormat, TopicNotFound
from graph.inspection.style import node_category

__all__ = ["EXPORT_FORMATS", "ExportFormat", "TopicNotFound", "WorkspaceGraph"]


class WorkspaceGraph:
    """One workspace's entity graph joined with the store's memories."""

    def __init__(
        self, projection: nx.MultiDiGraph, memories: Iterable[Memory], operations: Iterable[OperationStatus] = ()
    ) -> None:
        self.graph = projection.copy()
        # A projection saved before statements were left out still holds them: not shown as entities.
        self.graph.remove_nodes_from(
            [
                n
                for n, d in projection.nodes(data=True)
                if d.get("kind") == "entity" and is_statement(str(d.get("name", "")), str(d.get("entity_type", "")))
            ]
        )
        self.memories: dict[str, Memory] = {}
        self.topics: dict[str, list[Memory]] = {}
        for memory in memories:
            self.memories[memory.memory_id] = memory
            self.topics.setdefault(memory.topic_id, []).append(memory)
            # A staged memory has no node yet; for every memory the store is the truth for
            # status and graph state, the projection's copy being as old as the last cognify.
            node = memory_node(memory.memory_id)
            self.graph.add_node(node, **memory_attributes(memory))
        for versions in self.topics.values():
            versions.sort(key=lambda m: m.version)
        self._errors = {op.operationId: op for op in operations if op.status == "failed"}

    @classmethod
    def load(cls, workspace: str | Path | WorkspacePaths) -> WorkspaceGraph:
        """Read a workspace's graph; safe while a bridge or server owns the workspace."""
        paths = workspace if isinstance(workspace, WorkspacePaths) else resolve_workspace(workspace, create=False)
        if not paths.store_db.is_file():
            return cls(load_projection(paths.projection), [])
        check_store_sealed(paths)  # a store that came with the repository is not shown as the user's
        store = MemoryStore(paths.store_db, readonly=True)  # writes nothing: no folder, no schema
        try:
            return cls(load_projection(paths.projection), list(store.iter_memories()), store.operations(("failed",)))
        finally:
            store.close()

    # -- counts -------------------------------------------------------------------------

    def _nodes_of(self, kind: str) -> list[str]:
        return [n for n, d in self.graph.nodes(data=True) if d.get("kind") == kind]

    def degree_distribution(self) -> dict[int, int]:
        """How many entities have each degree: a long tail is expected, a spike at 1 means
        entities that link nothing together."""
        counts = Counter(self.graph.degree(n) for n in self._nodes_of("entity"))
        return dict(sorted(counts.items()))

    def top_entities(self, top: int = 10) -> list[dict[str, Any]]:
        """The best-connected entities, each with the memories (topics) that mention it.
        A memory's own title, session and decisions are left out: they frame one memory
        rather than link several."""
        content = [
            n for n in self._nodes_of("entity") if self.graph.nodes[n].get("entity_type") not in STRUCTURAL_TYPES
        ]
        ranked = sorted(content, key=lambda n: (-self.graph.degree(n), str(self.graph.nodes[n].get("name", ""))))[:top]
        rows = []
        for node in ranked:
            data = self.graph.nodes[node]
            sources = [m for m in data.get("sources", []) if m in self.memories]
            rows.append(
                {
                    "id": node,
                    "name": data.get("name", ""),
                    "type": data.get("entity_type", ""),
                    "degree": self.graph.degree(node),
                    "memories": len(sources),
                    "topics": sorted({self.memories[m].topic_id for m in sources}),
                }
            )
        return rows

    def components(self, top: int = 5) -> list[dict[str, Any]]:
        """The largest weakly connected components, with the memories each holds."""
        parts = sorted(nx.weakly_connected_components(self.graph), key=len, reverse=True)[:top]
        rows = []
        for part in parts:
            memories = sorted(
                self.graph.nodes[n].get("topic_id", "") for n in part if self.graph.nodes[n].get("kind") == "memory"
            )
            rows.append(
                {
                    "nodes": len(part),
                    "memories": len(memories),
                    "entities": sum(1 for n in part if self.graph.nodes[n].get("kind") == "entity"),
                    "topics": sorted(set(memories)),
                }
            )
        return rows

    def waiting_memories(self) -> list[dict[str, Any]]:
        """Memories whose graph is not built: still pending, or failed (with the reason)."""
        rows = []
        for memory in self.memories.values():
            if memory.graph_state == "indexed":
                continue
            failure = self._errors.get(memory.operation_id or "")
            rows.append(
                {
                    "memoryId": memory.memory_id,
                    "topicId": memory.topic_id,
                    "version": memory.version,
                    "graphState": memory.graph_state,
                    "operationId": memory.operation_id,
                    "errorCode": failure.errorCode if failure else None,
                }
            )
        return sorted(rows, key=lambda r: (r["graphState"], r["topicId"], r["version"]))

    def stats(self, top: int = 10) -> dict[str, Any]:
        """What `flowbaby graph stats` prints."""
        entities = self._nodes_of("entity")
        return {
            "memories": len(self.memories),
            "memoriesInGraph": sum(1 for m in self.memories.values() if m.graph_state == "indexed"),
            "entities": len(entities),
            "relations": self.graph.number_of_edges(),
            "topEntities": self.top_entities(top),
            "components": self.components(),
            "waiting": self.waiting_memories(),
        }

    # -- neighbourhoods and paths --------------------------------------------------------

    def topic_nodes(self, topic_id: str) -> list[str]:
        """Every version of a topic, oldest first."""
        versions = self.topics.get(topic_id)
        if not versions:
            raise TopicNotFound(topic_id)
        return [memory_node(m.memory_id) for m in versions]

    def neighbourhood(self, topic_id: str, hops: int = 2) -> nx.MultiDiGraph:
        """Every version of the topic and what lies within `hops` edges of any of them,
        edge direction ignored (memory -> entity is one hop, -> another memory two)."""
        undirected = self.graph.to_undirected(as_view=True)
        keep: set[str] = set()
        for node in self.topic_nodes(topic_id):
            keep.update(nx.single_source_shortest_path_length(undirected, node, cutoff=hops))
        # Built in the whole graph's order, not the set's: the same neighbourhood then
        # exports and draws identically in every process (string hashing is randomised).
        around = nx.MultiDiGraph()
        around.add_nodes_from((n, d) for n, d in self.graph.nodes(data=True) if n in keep)
        around.add_edges_from(
            (u, v, k, d) for u, v, k, d in self.graph.edges(around, keys=True, data=True) if v in keep
        )
        return around

    def explain_path(self, topic_a: str, topic_b: str) -> list[dict[str, Any]]:
        """The shortest chain of nodes linking the newest versions of two topics, with the
        relation on each step: why a multi-hop answer brought the second memory back.
        Empty when nothing links them."""
        start, end = self.topic_nodes(topic_a)[-1], self.topic_nodes(topic_b)[-1]
        undirected = self.graph.to_undirected(as_view=True)
        try:
            path = nx.shortest_path(undirected, start, end)
        except nx.NetworkXNoPath:
            return []
        steps = []
        for i, node in enumerate(path):
            data = self.graph.nodes[node]
            step: dict[str, Any] = {"id": node, "name": data.get("name", ""), "category": node_category(data)}
            if i:
                step["relation"] = self._relation(path[i - 1], node)
            steps.append(step)
        return steps

    def _relation(self, a: str, b: str) -> str:
        for src, dst in ((a, b), (b, a)):
            edges = self.graph.get_edge_data(src, dst)
            if edges:
                relation = next(iter(edges.values())).get("relation", "")
                return relation if src == a else f"{relation} (reverse)"
        return ""

    def supersession_chains(self) -> list[dict[str, Any]]:
        """Topics with more than one version, oldest first, with dates and status."""
        return [
            {
                "topicId": topic_id,
                "versions": [
                    {
                        "version": m.version,
                        "memoryId": m.memory_id,
                        "status": m.status.value,
                        "createdAt": m.created_at,
                        "topic": m.topic,
                    }
                    for m in versions
                ],
            }
            for topic_id, versions in sorted(self.topics.items())
            if len(versions) > 1
        ]

    # -- export ---------------------------------------------------------------------------

    def snapshot(self, topic_id: str | None = None, hops: int = 2) -> dict[str, Any]:
        """Node-link JSON (networkx's own format) of the whole graph or one topic's neighbourhood."""
        graph = self.graph if topic_id is None else self.neighbourhood(topic_id, hops)
        data: dict[str, Any] = nx.node_link_data(graph, edges="edges")
        return data

    def export(self, fmt: ExportFormat, out: Path, topic_id: str | None = None, hops: int = 2) -> Path:
        """Write the graph (or one topic's neighbourhood) as GraphML, node-link JSON or HTML."""
        graph = self.graph if topic_id is None else self.neighbourhood(topic_id, hops)
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt not in EXPORT_FORMATS:
            raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
        with atomic_writer(out, binary=True) as handle:  # private: the graph holds the memories' names
            if fmt == "graphml":
                nx.write_graphml(_graphml_safe(graph), handle)
            elif fmt == "json":
                handle.write(json.dumps(nx.node_link_data(graph, edges="edges"), ensure_ascii=False).encode())
            else:
                handle.write(render_html(graph).encode())
        return out

    def draw(self, topic_id: str, hops: int, out: Path) -> nx.MultiDiGraph:
        """A PNG of one topic's neighbourhood; returns the neighbourhood drawn.
        matplotlib is imported here only, off every server's path."""
        from graph.inspection.drawing import draw_graph

        around = self.neighbourhood(topic_id, hops)
        draw_graph(around, out, title=f"{topic_id}: {hops}-hop neighbourhood", focus=self.topic_nodes(topic_id))
        return around


def _graphml_safe(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """GraphML holds scalars only: lists become comma-joined strings, None is dropped."""
    safe = nx.MultiDiGraph()

    def scalar(attrs: dict[str, Any]) -> dict[str, Any]:
        return {
            k: (",".join(map(str, v)) if isinstance(v, (list, tuple, set)) else v)
            for k, v in attrs.items()
            if v is not None
        }

    for node, data in graph.nodes(data=True):
        safe.add_node(node, **scalar(data))
    for src, dst, key, data in graph.edges(keys=True, data=True):
        safe.add_edge(src, dst, key=key, **scalar(data))
    return safe
