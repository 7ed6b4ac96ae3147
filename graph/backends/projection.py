"""Where the graph projection is kept: a file under .flowbaby/ (the embedded default) or, with
the team backend, a row of the namespace's schema (graph.backends.team.projection), so that every
server on the namespace reads the graph the worker of any one of them built.

A source hands out a stamp that changes with every save (the file's mtime, the row's version):
readers reload when it changes, and the worker folds a batch into the projection it saved last
only while the stamp is still its own (otherwise it rebuilds from cognee's graph).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from graph.core.graph_projection import parse_projection, read_projection_json, save_projection

if TYPE_CHECKING:  # networkx only where a graph is built or inspected (graph.core.graph_projection)
    import networkx as nx


class ProjectionSource(Protocol):
    def stamp(self) -> object | None:
        """The saved projection's version; None when there is none yet."""
        ...

    def read(self) -> tuple[object | None, dict[str, Any] | None]:
        """(stamp, JSON): {} when there is none, None when it is unreadable (then rebuilt)."""
        ...

    def save(self, graph: nx.MultiDiGraph, expected: object | None) -> object | None:
        """Save over the version `expected` (None: whatever is there); the new stamp, or None
        when another writer saved in between (nothing written)."""
        ...

    def close(self) -> None: ...


class FileProjection:
    """The projection file, replaced atomically; one worker per workspace writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def stamp(self) -> tuple[int, int, int] | None:
        """Each save is a new file renamed over the old one: its inode and size tell two saves apart
        even within one tick of the file system's clock (the modification time alone did not)."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return None
        return info.st_mtime_ns, info.st_ino, info.st_size

    def read(self) -> tuple[tuple[int, int, int] | None, dict[str, Any] | None]:
        return self.stamp(), read_projection_json(self.path)

    def save(self, graph: nx.MultiDiGraph, expected: object | None) -> tuple[int, int, int] | None:
        if expected is not None and self.stamp() != expected:
            return None
        save_projection(graph, self.path)
        return self.stamp()

    def close(self) -> None:
        return None


def load_graph(source: ProjectionSource) -> nx.MultiDiGraph:
    """The projection as a graph; none or an unreadable one reads as an empty graph."""
    return parse_projection(source.read()[1])
