"""The embedded backend's graph projection: `.flowbaby/graph/projection.json`, replaced atomically
after each cognify (graph.backends.projection holds the seam and the team's row is
graph.backends.team.projection), and beside it `lane.json`, what the graph lane reads of it."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.core.graph_projection import (
    LaneRecords,
    dump_lane,
    lane_records,
    parse_lane,
    parse_projection_bytes,
    read_projection_json,
    save_projection,
    write_durably,
)

if TYPE_CHECKING:
    import networkx as nx

LANE_FILE = "lane.json"


class FileProjection:
    """The projection file, replaced atomically; one worker per workspace writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lane_path = path.with_name(LANE_FILE)
        """The graph lane's records of the projection (entities, their memories, their relations), saved
        with it: at 100k memories the owner reads 22 MB instead of parsing 219 MB of JSON (a 1.6 GB peak)."""

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

    def read_lane(self) -> tuple[tuple[int, int, int] | None, LaneRecords | None]:
        """The lane's records: from lane.json when it was saved for the projection there now (its stamp
        inside), else from the projection itself (a workspace saved before lane.json existed, a save
        cut between the two files, a damaged lane.json). Only the worker writes either file."""
        stamp = self.stamp()
        if stamp is None:
            return None, lane_records({})
        with contextlib.suppress(OSError):
            records = parse_lane(self.lane_path.read_bytes(), list(stamp))
            if records is not None:
                return stamp, records
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None, lane_records({})
        except OSError:
            return stamp, None
        # The stamp before the read: a save in between reads as a change at the next refresh.
        return stamp, lane_records(parse_projection_bytes(raw))

    def save(self, graph: nx.MultiDiGraph, expected: object | None) -> tuple[int, int, int] | None:
        """The old lane.json is deleted first (none outlives the projection it describes: forget rewrites
        both), and the new one written once the new projection's stamp is known."""
        if expected is not None and self.stamp() != expected:
            return None
        self.lane_path.unlink(missing_ok=True)
        data = save_projection(graph, self.path)
        stamp = self.stamp()
        records = lane_records(data)
        if stamp is not None and records is not None:
            write_durably(self.lane_path, dump_lane(list(stamp), records))
        return stamp

    def close(self) -> None:
        return None
