"""The embedded backend's graph projection: `.flowbaby/graph/projection.json`, replaced atomically
after each cognify (graph.backends.projection holds the seam and the team's row is
graph.backends.team.projection), and beside it `lane.json`, what the graph lane reads of it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.core.files import remove_leftovers
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
from graph.core.workspace import PRIVATE_FILE_MODE

if TYPE_CHECKING:
    import networkx as nx

LANE_FILE = "lane.json"
LANE_LOCK = "lane.lock"


class FileProjection:
    """The projection file, replaced atomically; one worker per workspace writes it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lane_path = path.with_name(LANE_FILE)
        """The graph lane's records of the projection (entities, their memories, their relations), saved
        with it: at 100k memories the owner reads 22 MB instead of parsing 219 MB of JSON (a 1.6 GB peak)."""
        self.lock_path = path.with_name(LANE_LOCK)

    @contextlib.contextmanager
    def _writing_lane(self, wait: bool = True) -> Iterator[None]:
        """Held by a save from deleting the old lane.json to writing the new one, and by a reader
        writing a missing one, so that no lane.json is written for a projection already replaced.
        `wait=False` raises BlockingIOError (an OSError) while another holds it."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield
        finally:
            os.close(fd)

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
        cut between the two files, a damaged lane.json), which then writes lane.json for it. Only the
        worker writes the projection."""
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
        records = lane_records(parse_projection_bytes(raw))
        if records is not None:
            self._write_missing_lane(stamp, records)
        return stamp, records

    def _write_missing_lane(self, stamp: tuple[int, int, int], records: LaneRecords) -> None:
        """lane.json for the projection just parsed, so the next start reads 22 MB instead of parsing
        it again (a workspace from before lane.json, a save cut between the two files): written only if
        that projection is still the one there, under the lock a save holds, so a forget's save never
        finds a lane.json of the projection it replaces. Not while a save holds the lock (it writes its
        own; a retrieval refreshing the lane does not wait for it), nor in a read-only workspace."""
        with contextlib.suppress(OSError), self._writing_lane(wait=False):
            if self.stamp() == stamp:
                write_durably(self.lane_path, dump_lane(list(stamp), records))

    def save(self, graph: nx.MultiDiGraph, expected: object | None) -> tuple[int, int, int] | None:
        """The old lane.json is deleted first (none outlives the projection it describes: forget rewrites
        both), and the new one written once the new projection's stamp is known."""
        if expected is not None and self.stamp() != expected:
            return None
        with self._writing_lane():
            self.lane_path.unlink(missing_ok=True)
            remove_leftovers(self.lane_path)  # a lane write cut short
            data = save_projection(graph, self.path)
            stamp = self.stamp()
            records = lane_records(data)
            if stamp is not None and records is not None:
                write_durably(self.lane_path, dump_lane(list(stamp), records))
        return stamp

    def close(self) -> None:
        return None
