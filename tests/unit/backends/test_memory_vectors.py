"""The memory chunk index over both backends (LanceDB in tmp_path, pgvector in a namespace of
the session's real Postgres): what is added is found, nearest first, after a reopen too; the
team index's HNSW answers as the exact search does on a few thousand chunks. With a slow or
failing chunk table behind the embedded index: a memory is searchable before its rows are stored."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from graph.backends.embedded.vectors import VectorIndex
from graph.backends.team.vectors import PgVectorIndex
from graph.backends.vectors import MemoryVectors
from graph.core.memory_chunks import Chunk
from tests.support.fakes import HashEmbedder, memory
from tests.support.postgres import PostgresServer


@pytest.fixture(params=["lancedb", pytest.param("pgvector", marks=pytest.mark.postgres)])
def open_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], MemoryVectors]]:
    namespace = f"t{uuid.uuid4().hex[:12]}"
    opened: list[PgVectorIndex] = []

    def open_() -> MemoryVectors:
        if request.param == "lancedb":
            return VectorIndex(tmp_path / "vectors.lance", HashEmbedder())  # type: ignore[arg-type]
        server: PostgresServer = request.getfixturevalue("postgres")
        index = PgVectorIndex(server.url(), namespace, HashEmbedder())  # type: ignore[arg-type]
        opened.append(index)
        return index

    yield open_
    for index in opened:
        index.close()


def test_what_is_added_is_found_nearest_first(open_index: Callable[[], MemoryVectors]) -> None:
    index = open_index()
    assert (index.count(), index.indexed_memory_ids(), index.dimensions) == (0, set(), 384)
    rows = index.add_memories(
        [memory("m1", context="Redis keeps the session cache"), memory("m2", context="Postgres holds the ledger")]
    )
    assert rows == index.count() == 4  # topic and context of each
    assert index.indexed_memory_ids() == {"m1", "m2"}
    [query] = HashEmbedder().encode(["Postgres holds the ledger"])
    [(chunk, similarity), *rest] = index.nearest_chunks(query, 4)
    assert (chunk.memory_id, chunk.topic_id, chunk.field, chunk.text) == ("m2", "m2", "context", chunk.text)
    assert chunk.text == "Postgres holds the ledger" and similarity == pytest.approx(1.0, abs=1e-5)
    assert len(rest) == 3 and all(s < 0.5 for _, s in rest)
    assert index.search(query, 1) == [("m2", pytest.approx(1.0, abs=1e-5))]
    assert index.search(query, 0) == []


def test_the_index_survives_a_reopen(open_index: Callable[[], MemoryVectors]) -> None:
    first = open_index()
    first.add_memories([memory("m1", context="Redis keeps the session cache")])
    first.close()  # a restart: what was added is stored by then
    again = open_index()
    assert again.indexed_memory_ids() == {"m1"} and again.count() == 2


def test_a_limit_beyond_the_default_search_breadth_returns_every_row(open_index: Callable[[], MemoryVectors]) -> None:
    """HNSW returns at most hnsw.ef_search rows; the team index raises it to the limit."""
    index = open_index()
    index.add_memories([memory(f"m{i}", context=f"memory number {i} of many") for i in range(150)])
    [query] = HashEmbedder().encode(["anything"])
    assert len(index.search(query, 300)) == 300


def test_hnsw_finds_what_exact_search_finds(postgres: PostgresServer, tmp_path: Path) -> None:
    """Recall@10 of the pgvector HNSW index against LanceDB's exact search on the same 2,000 chunks."""
    memories = [memory(f"m{i}", context=f"note {i} about subsystem {i % 97}") for i in range(1000)]
    exact = VectorIndex(tmp_path / "vectors.lance", HashEmbedder())  # type: ignore[arg-type]
    team = PgVectorIndex(postgres.url(), f"t{uuid.uuid4().hex[:12]}", HashEmbedder())  # type: ignore[arg-type]
    exact.add_memories(memories)
    team.add_memories(memories)
    queries = HashEmbedder().encode([f"query {i}" for i in range(30)])
    found = [
        len({c.text for c, _ in exact.nearest_chunks(q, 10)} & {c.text for c, _ in team.nearest_chunks(q, 10)})
        for q in queries
    ]
    team.close()
    assert sum(found) / (10 * len(queries)) >= 0.9


class SlowTable:
    """A chunk table whose appends wait for the test (a child process starting) or fail."""

    def __init__(self, fail: bool = False) -> None:
        self.release = threading.Event()
        self.fail = fail
        self.stored: list[str] = []

    def rows(self) -> tuple[list[Chunk], np.ndarray]:
        return [], np.zeros((0, HashEmbedder.dimensions), dtype=np.float32)

    def add(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        self.release.wait(30)
        if self.fail:
            raise OSError("disk full")
        self.stored += [c.memory_id for c in chunks]

    def state(self) -> tuple[int, int]:
        return len(self.stored), len(self.stored)

    def optimize(self) -> None: ...
    def close(self) -> None: ...


def test_a_memory_is_searchable_before_its_rows_are_stored(tmp_path: Path) -> None:
    table = SlowTable()
    index = VectorIndex(tmp_path / "unused", HashEmbedder(), table)  # type: ignore[arg-type]
    index.add_memories([memory("m1", context="Redis keeps the session cache")])
    [query] = HashEmbedder().encode(["Redis keeps the session cache"])
    assert index.search(query, 1)[0][0] == "m1" and table.stored == []  # not stored yet, searchable
    table.release.set()
    index.flush()
    assert table.stored == ["m1", "m1"]
    index.close()


def test_a_refused_append_is_counted_and_the_memory_stays_searchable(tmp_path: Path) -> None:
    table = SlowTable(fail=True)
    table.release.set()
    index = VectorIndex(tmp_path / "unused", HashEmbedder(), table)  # type: ignore[arg-type]
    index.add_memories([memory("m1", context="Redis keeps the session cache")])
    index.flush()
    assert index.write_failures == 1 and index.indexed_memory_ids() == {"m1"}
    index.close()
