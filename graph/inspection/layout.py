"""Node positions for the pictures of a graph (the PNG and the HTML page), in [-1, 1]².

Seeded, so the same graph is always drawn the same way.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

KAMADA_KAWAI_MAX_NODES = 200
"""Kamada-Kawai spreads a neighbourhood-sized connected graph evenly, at a cost that grows fast."""
FORCE_LAYOUT_MAX_NODES = 1000
"""A spring layout takes a few seconds at this size and grows quadratically; larger graphs
are scattered instead (the HTML page still pans, zooms and filters them)."""


def positions(graph: nx.MultiDiGraph) -> dict[Any, Any]:
    layout: dict[Any, Any]
    if not len(graph):
        return {}
    if len(graph) <= KAMADA_KAWAI_MAX_NODES and nx.is_connected(graph.to_undirected(as_view=True)):
        layout = nx.kamada_kawai_layout(nx.Graph(graph))
        return layout
    if len(graph) <= FORCE_LAYOUT_MAX_NODES:
        layout = nx.spring_layout(graph, seed=7, k=2.0 / len(graph) ** 0.5)
        return layout
    layout = nx.rescale_layout_dict(nx.random_layout(graph, seed=7))
    return layout
