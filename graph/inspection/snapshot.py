"""The whole graph's node-link snapshot (`graphSnapshot` without a topic), built from the projection's JSON.

The memory browser's overview asks for it first thing; through networkx (import, build, copy, dump) it
took most of a cold page's second at 2,000 entities. The projection is already node-link JSON, so the
same snapshot as `WorkspaceGraph(...).snapshot()` is a filter and a merge of dicts: statements left out
with their edges, each stored memory's attributes laid over its node (or a new node for a staged one).
A projection networkx would read differently (a repeated node or edge, an edge without a key or to an
unknown node) is first normalised through networkx itself, so both give the same answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graph.core.graph_projection import is_statement, memory_attributes, memory_node, parse_projection
from graph.core.memories import Memory


def whole_snapshot(data: dict[str, Any] | None, memories: Iterable[Memory]) -> dict[str, Any]:
    """Node-link JSON (networkx's layout: nodes, then edges with source, target and key) of the
    projection `data` joined with the store's `memories`."""
    data = _regular(data) or _normalised(data)
    nodes: dict[str, dict[str, Any]] = {}
    dropped: set[str] = set()
    for node in data["nodes"]:
        attrs = {k: v for k, v in node.items() if k != "id"}
        name, entity_type = str(attrs.get("name", "")), str(attrs.get("entity_type", ""))
        if attrs.get("kind") == "entity" and is_statement(name, entity_type):
            dropped.add(node["id"])
        else:
            nodes[node["id"]] = attrs
    for memory in memories:
        # The store is the truth for a memory's status and graph state; a staged one has no node yet.
        nodes.setdefault(memory_node(memory.memory_id), {}).update(memory_attributes(memory))
    edges = [
        {**{k: v for k, v in e.items() if k not in ("source", "target", "key")}, **_ends(e)}
        for e in data["edges"]
        if e["source"] not in dropped and e["target"] not in dropped
    ]
    return {
        "directed": True,
        "multigraph": True,
        "graph": dict(data.get("graph") or {}),
        "nodes": [{**attrs, "id": node_id} for node_id, attrs in nodes.items()],
        "edges": edges,
    }


def _ends(edge: dict[str, Any]) -> dict[str, Any]:
    return {"source": edge["source"], "target": edge["target"], "key": edge["key"]}


def _regular(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """`data` when networkx would read it as written: unique string node ids, and edges between known
    nodes, each with a key, no two with the same ends and key. None otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("nodes", []), list):
        return None
    if not isinstance(data.get("edges", []), list) or not isinstance(data.get("graph") or {}, dict):
        return None
    nodes, edges = data.get("nodes", []), data.get("edges", [])
    ids = [n.get("id") if isinstance(n, dict) else None for n in nodes]
    known = set(ids)
    if len(known) != len(ids) or not all(isinstance(i, str) for i in known):
        return None
    ends = set()
    for e in edges:
        if not isinstance(e, dict) or e.get("source") not in known or e.get("target") not in known:
            return None
        if e.get("key") is None or not _hashable(e["key"]):
            return None
        ends.add((e["source"], e["target"], e["key"]))
    if len(ends) != len(edges):
        return None
    return {"graph": data.get("graph") or {}, "nodes": nodes, "edges": edges}


def _hashable(value: object) -> bool:
    return isinstance(value, (str, int, float, bool))


def _normalised(data: dict[str, Any] | None) -> dict[str, Any]:
    """What networkx makes of an irregular projection (an unreadable one is empty), as node-link JSON."""
    import networkx as nx

    normal: dict[str, Any] = nx.node_link_data(parse_projection(data), edges="edges")
    return normal
