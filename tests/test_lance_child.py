"""The memory chunk table served from a child process (graph.search.lance_child): what it stores
comes back bit for bit, it exits when idle and comes back on the next call, a killed child is
replaced, an unreadable table is moved aside, and the owning process never loads LanceDB."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from graph.search.chunk_table import Chunk, LanceChunkTable
from graph.search.lance_child import ChildChunkTable, TableUnreadable
from graph.search.vectors import open_vector_index
from tests.conftest import summary
from tests.unit.fakes import HashEmbedder


def _rows(count: int, start: int = 0, dimensions: int = 8) -> tuple[list[Chunk], np.ndarray]:
    rng = np.random.default_rng(start)
    chunks = [Chunk(f"m{i}", f"t{i}", "context", 0, f"chunk {i} ünïcode ✓") for i in range(start, start + count)]
    return chunks, rng.standard_normal((count, dimensions)).astype(np.float32)


def _wait_exited(table: ChildChunkTable, timeout: float = 30.0) -> None:
    """Until the table's child has exited (`pid` reaps it): a killed one stays a zombie while
    its threads are torn down."""
    deadline = time.monotonic() + timeout
    while table.pid is not None:
        assert time.monotonic() < deadline, "the child is still running"
        time.sleep(0.05)


def test_rows_come_back_bit_for_bit_and_as_lancedb_stored_them(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lance"
    table = ChildChunkTable(path, 8, idle_sec=0)
    first, second = _rows(3), _rows(2, start=3)
    table.add(*first)
    table.add(*second)
    chunks, vectors = table.rows()
    table.close()
    assert chunks == first[0] + second[0]
    assert np.array_equal(vectors, np.concatenate([first[1], second[1]]))
    in_process, stored = LanceChunkTable(path, 8).rows()  # the same LanceDB table, read directly
    assert in_process == chunks and np.array_equal(stored, vectors)


def test_the_child_exits_when_idle_and_the_next_call_starts_it_again(tmp_path: Path) -> None:
    table = ChildChunkTable(tmp_path / "vectors.lance", 8, idle_sec=0.5)
    pid = table.pid
    assert pid is not None
    table.add(*_rows(2))
    _wait_exited(table)
    table.add(*_rows(1, start=2))
    assert table.pid not in (None, pid)
    assert [c.memory_id for c in table.rows()[0]] == ["m0", "m1", "m2"]
    table.close()


def test_a_killed_child_is_replaced_and_nothing_written_is_lost(tmp_path: Path) -> None:
    """Killed between two calls: the next call starts a new child."""
    table = ChildChunkTable(tmp_path / "vectors.lance", 8, idle_sec=0)
    table.add(*_rows(2))
    pid = table.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    _wait_exited(table)
    table.add(*_rows(1, start=2))
    assert [c.memory_id for c in table.rows()[0]] == ["m0", "m1", "m2"]
    table.close()


class Embedder12(HashEmbedder):
    dimensions = 12


def test_a_table_of_another_size_is_unreadable_and_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "vectors.lance"
    ChildChunkTable(path, 8, idle_sec=0).close()
    with pytest.raises(TableUnreadable):
        ChildChunkTable(path, 12, idle_sec=0)
    index, aside = open_vector_index(path, Embedder12(), idle_sec=0)  # type: ignore[arg-type]
    assert aside is not None and aside.exists() and index.count() == 0
    index.close()


def test_the_owning_process_never_maps_lancedb_or_arrow(spawn, workspace: Path) -> None:
    """Staged, embedded, searched: the bridge itself never loads LanceDB, pyarrow or pandas
    (its child does), yet the vectors are in LanceDB for the next start."""
    client = spawn(workspace)
    pid = client.result("health", timeout=60)["pid"]
    client.result("ingestForAgent", summary())
    reply = client.result("retrieveForAgent", {"query": "Why did we move the session cache to Redis?"})
    assert reply["entries"] and reply["entries"][0]["topicId"] == "redis-cache"
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert "_lancedb" not in maps and "libarrow" not in maps and "pandas" not in maps
    client.close()
    chunks, _ = LanceChunkTable(workspace / ".flowbaby" / "vectors.lance", 384).rows()
    assert {c.topic_id for c in chunks} == {"redis-cache"}
