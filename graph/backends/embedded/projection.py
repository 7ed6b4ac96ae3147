"""The embedded backend's graph projection: `.flowbaby/data/graph/projection.json`, replaced
atomically after each cognify (graph.backends.projection holds the seam and the team's row is
graph.backends.team.projection)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.core.graph_projection import read_projection_json, save_projection

if TYPE_CHECKING:
    import networkx as nx


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
