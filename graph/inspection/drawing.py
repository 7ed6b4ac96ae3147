"""A PNG of a graph neighbourhood with matplotlib: labelled nodes, entity types by colour,
superseded versions dashed. Used by `flowbaby graph show` and the inspection notebook.

matplotlib is in the `notebook` extra; it is imported here and nowhere on the bridge's path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx

from graph.core.files import atomic_writer
from graph.inspection.layout import positions
from graph.inspection.style import TYPE_COLOURS, node_category, node_colour, node_label

_SHAPES = {"memory": "s", "plan": "D"}
"""Memories are squares and plans diamonds; entities are circles."""


def draw_graph(graph: nx.MultiDiGraph, out: Path | None = None, title: str = "", focus: list[str] | None = None) -> Any:
    """Draw `graph`; nodes in `focus` get a thick outline. Saves a PNG when `out` is given
    and returns the matplotlib Figure (the notebook shows it inline)."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend needed
    from matplotlib.lines import Line2D

    focus_set = set(focus or ())
    size = max(7.0, min(18.0, 1.2 * len(graph) ** 0.5 + 4))
    fig = Figure(figsize=(size * 1.25, size))
    ax = fig.subplots()
    layout = positions(graph)
    simple = nx.DiGraph(graph)  # one arrow per pair is enough to read; keeps the picture clean
    supersedes = [(u, v) for u, v, d in graph.edges(data=True) if d.get("relation") == "supersedes"]
    others = [(u, v) for u, v in simple.edges() if (u, v) not in set(supersedes)]
    nx.draw_networkx_edges(
        simple,
        layout,
        edgelist=others,
        ax=ax,
        edge_color="#9a9a9a",
        alpha=0.35,
        arrows=True,
        arrowsize=8,
        node_size=300,
    )
    nx.draw_networkx_edges(
        simple,
        layout,
        edgelist=supersedes,
        ax=ax,
        edge_color="#333333",
        style="dashed",
        width=1.6,
        arrows=True,
        arrowsize=12,
        node_size=300,
    )
    for node, data in graph.nodes(data=True):
        x, y = layout[node]
        dashed = data.get("kind") == "memory" and data.get("status") == "Superseded"
        ax.scatter(
            [x],
            [y],
            s=420 if data.get("kind") == "memory" else 180,
            c=node_colour(data),
            marker=_SHAPES.get(str(data.get("kind")), "o"),
            edgecolors="#111111",
            linewidths=2.6 if node in focus_set else 1.0,
            linestyles="--" if dashed else "-",
            zorder=3,
        )
        ax.annotate(
            node_label(data, node, 28),
            (x, y),
            xytext=(6, 5),
            textcoords="offset points",
            fontsize=8,
            zorder=4,
            alpha=0.55 if dashed else 1.0,
        )
    present = {node_category(d) for _, d in graph.nodes(data=True)}
    handles = [
        Line2D(
            [],
            [],
            marker=_SHAPES.get(name, "o"),
            color="w",
            markerfacecolor=colour,
            markeredgecolor="#111111",
            markersize=9,
            label=name,
        )
        for name, colour in TYPE_COLOURS.items()
        if name in present
    ]
    handles.append(Line2D([], [], color="#333333", linestyle="--", label="supersedes"))
    ax.legend(handles=handles, loc="upper left", fontsize=8, frameon=True)
    ax.set_title(title)
    ax.axis("off")
    fig.tight_layout()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(out, binary=True) as handle:
            fig.savefig(handle, dpi=110, format="png")
    return fig
