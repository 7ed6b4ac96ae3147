"""Where the graph projection is kept: a file under .flowbaby/ (the embedded default) or, with
the team backend, a row of the namespace's schema (graph.backends.team.projection), so that every
server on the namespace reads the graph the worker of any one of them built.

A source hands out a stamp that changes with every save (the file's mtime, the row's version):
readers reload when it changes, and the worker folds a batch into the projection it saved last
only while the stamp is still its own (otherwise it rebuilds from cognee's graph).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from graph.core.graph_projection import LaneRecords, parse_projection

if TYPE_CHECKING:  # networkx only where a graph is built or inspected (graph.core.graph_projection)
    import networkx as nx


class ProjectionSource(Protocol):
    def stamp(self) -> object | None:
        """The saved projection's version; None when there is none yet."""
        ...

    def read(self) -> tuple[object | None, dict[str, Any] | None]:
        """(stamp, JSON): {} when there is none, None when it is unreadable (then rebuilt)."""
        ...

    def read_lane(self) -> tuple[object | None, LaneRecords | None]:
        """(stamp, what the graph lane reads of the projection): none yet reads as empty records,
        an unreadable one as None."""
        ...

    def save(self, graph: nx.MultiDiGraph, expected: object | None) -> object | None:
        """Save over the version `expected` (None: whatever is there); the new stamp, or None
        when another writer saved in between (nothing written)."""
        ...

    def close(self) -> None: ...


def load_graph(source: ProjectionSource) -> nx.MultiDiGraph:
    """The projection as a graph; none or an unreadable one reads as an empty graph."""
    return parse_projection(source.read()[1])
