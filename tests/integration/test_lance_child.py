"""The memory chunk table served from a child process (graph.backends.embedded.lance_child): what it stores
comes back bit for bit, it exits when idle and comes back on the next call, a killed child is
replaced, an unreadable table is moved aside, and the owning process never loads LanceDB. The
session vectors' table (graph.backends.embedded.session_table) too, and a session search in the bridge
leaves LanceDB out of it as well."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from graph.backends.embedded.chunk_table import LanceChunkTable
from graph.backends.embedded.lance_child import ChildChunkTable, TableUnreadable
from graph.backends.embedded.session_table import ChildSessionTable, SessionTable
from graph.backends.embedded.vectors import open_vector_index
from graph.core.memory_chunks import Chunk
from tests.conftest import summary
from tests.support.fakes import HashEmbedder
from tests.support.session_fixtures import canary_session
from tests.support.store_only import store_only_env


def _rows(count: int, start: int = 0, dimensions: int = 8) -> tuple[list[Chunk], np.ndarray]:
    rng = np.random.default_rng(start)
    chunks = [Chunk(f"m{i}", f"t{i}", "context", 0, f"chunk {i} ünïcode ✓") for i in range(start, start + count)]
    return chunks, rng.standard_normal((count, dimensions)).astype(np.float32)


def _wait_exited(table: ChildChunkTable | ChildSessionTable, timeout: float = 30.0) -> None:
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


def test_session_vectors_in_a_child_reach_lancedb(tmp_path: Path) -> None:
    """Adds, a delete and a restart after idling: the child's table reads back bit for bit, and
    it is the table the in-process SessionTable reads; clear empties it."""
    path = tmp_path / "vectors.lance"
    table = ChildSessionTable(path, 8, idle_sec=0.5)
    vectors = np.random.default_rng(3).standard_normal((5, 8)).astype(np.float32)
    table.add("ses_a", ["a0", "a1", "a2"], vectors[:3])
    table.add("ses_b", ["b0", "b'1"], vectors[3:])  # a quote in an id reaches the delete filter
    table.delete(["a1", "b'1"])
    _wait_exited(table)
    ids, keys, stored = table.rows()  # a new child
    assert (ids, keys) == (["a0", "a2", "b0"], ["ses_a", "ses_a", "ses_b"])
    assert np.array_equal(stored, vectors[[0, 2, 3]])
    in_process = SessionTable(path, 8).rows()
    assert in_process[:2] == (ids, keys) and np.array_equal(in_process[2], stored)
    table.clear()
    assert table.rows()[0] == []
    table.close()


def test_the_owning_process_never_maps_lancedb_or_arrow(spawn, workspace: Path, tmp_path: Path) -> None:
    """Staged, embedded, searched, and a session imported and searched: the bridge itself never
    loads LanceDB, pyarrow or pandas (its children do), yet the vectors are in LanceDB."""
    db, sessions = canary_session(tmp_path / "opencode", workspace)
    env = {**os.environ, **sessions, "FLOWBABY_BUILD_GRAPH": "0"}  # reads no graph
    client = spawn(workspace, env=env)
    pid = client.result("health", timeout=60)["pid"]
    client.result("ingestForAgent", summary())
    reply = client.result("retrieveForAgent", {"query": "Why did we move the session cache to Redis?"})
    assert reply["entries"] and reply["entries"][0]["topicId"] == "redis-cache"
    assert (
        client.result("sessionsImport", {"session_id": "ses_canary"}, timeout=120)["index_status"]["status"] == "ready"
    )
    hits = client.result("sessionsSearch", {"session_id": "ses_canary", "q": "lowest card network latency", "limit": 1})
    assert "eu-west-3" in hits["results"][0]["chunk_text"], hits
    maps = Path(f"/proc/{pid}/maps").read_text()
    assert "_lancedb" not in maps and "libarrow" not in maps and "pandas" not in maps
    client.close()
    db.close()
    chunks, _ = LanceChunkTable(workspace / ".flowbaby" / "vectors.lance", 384).rows()
    assert {c.topic_id for c in chunks} == {"redis-cache"}
    session_ids, _, _ = SessionTable(workspace / ".flowbaby" / "sessions" / "vectors.lance", 384).rows()
    assert session_ids


def _lance_children(pid: int) -> list[int]:
    """The LanceDB child processes of `pid` (a child has its own session, not its own parent)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"lance_child" in command:
            found.append(int(entry.name))
    return found


def test_a_start_that_only_reads_never_starts_lancedb(spawn, workspace: Path) -> None:
    """The owner's compact copy is checked against the table's manifest names: a start that only
    searches answers without the LanceDB child; the first write starts it and reaches the table."""
    first = spawn(workspace, env=store_only_env())  # reads no graph: its closes wait for no cognee build
    assert _lance_children(first.result("health", timeout=60)["pid"]) == []  # no table yet: none to open
    first.result("ingestForAgent", summary())
    first.close()
    client = spawn(workspace, env=store_only_env())
    pid = client.result("health", timeout=60)["pid"]
    reply = client.result("retrieveForAgent", {"query": "Why did we move the session cache to Redis?"})
    assert reply["entries"] and reply["entries"][0]["topicId"] == "redis-cache"
    assert _lance_children(pid) == []
    client.result("ingestForAgent", summary("ledger-lock", topic="Ledger lock incident"))
    deadline = time.monotonic() + 60
    while not _lance_children(pid):
        assert time.monotonic() < deadline, "the write never started the LanceDB child"
        time.sleep(0.1)
    client.close()
    chunks, _ = LanceChunkTable(workspace / ".flowbaby" / "vectors.lance", 384).rows()
    assert {c.topic_id for c in chunks} == {"redis-cache", "ledger-lock"}
