"""The memory chunk index over both backends (LanceDB in tmp_path, pgvector in a namespace of
the session's real Postgres): what is added is found, nearest first, after a reopen too; the
team index's HNSW answers as the exact search does on a few thousand chunks."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graph.search.pg_vectors import PgVectorIndex
from graph.search.vector_backend import MemoryVectors
from graph.search.vectors import VectorIndex
from tests.postgres import PostgresServer
from tests.unit.fakes import HashEmbedder, memory


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
    open_index().add_memories([memory("m1", context="Redis keeps the session cache")])
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
