"""Per-sentence MiniLM vectors of every memory version, in the workspace's LanceDB.

A memory is embedded sentence by sentence and field by field (MiniLM reads 256
word pieces at most, so one vector per long text would lose its tail). These rows
make a memory searchable the moment it is staged, long before its graph exists.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from graph.embedder import Embedder, split_sentences
from graph.store import Memory

TABLE = "memory_chunks"
DIMENSIONS = 384


@dataclass(frozen=True)
class Chunk:
    memory_id: str
    topic_id: str
    field: str
    chunk_index: int
    text: str


def memory_chunks(memory: Memory) -> list[Chunk]:
    """The memory's text cut into embeddable sentences, tagged with their field."""
    chunks: list[Chunk] = []
    for field, items in memory.sections():
        for item in items:
            for sentence in split_sentences(item):
                chunks.append(Chunk(memory.memory_id, memory.topic_id, field, len(chunks), sentence))
    return chunks


def _schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("memory_id", pa.string()),
            pa.field("topic_id", pa.string()),
            pa.field("field", pa.string()),
            pa.field("chunk_index", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), DIMENSIONS)),
        ]
    )


class VectorIndex:
    """LanceDB table of chunk vectors; writes are serialised, reads are not."""

    def __init__(self, path: Path, embedder: Embedder) -> None:
        import lancedb

        self._db = lancedb.connect(str(path))
        self._embedder = embedder
        self._write_lock = threading.Lock()
        self._table = self._db.create_table(TABLE, schema=_schema(), exist_ok=True)

    def add_memories(self, memories: list[Memory]) -> int:
        """Embed and store all chunks of these memories; returns the number of rows."""
        chunks = [chunk for memory in memories for chunk in memory_chunks(memory)]
        if not chunks:
            return 0
        vectors = self._embedder.encode([c.text for c in chunks])
        rows = [
            {
                "memory_id": c.memory_id,
                "topic_id": c.topic_id,
                "field": c.field,
                "chunk_index": c.chunk_index,
                "text": c.text,
                "vector": vector,
            }
            for c, vector in zip(chunks, vectors)
        ]
        with self._write_lock:
            self._table.add(rows)
        return len(rows)

    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        """The nearest chunks as (memory_id, cosine similarity), best first."""
        if limit <= 0:
            return []
        rows = (
            self._table.search(vector, vector_column_name="vector")
            .distance_type("cosine")
            .select(["memory_id", "_distance"])
            .limit(limit)
            .to_arrow()
        )
        ids = rows.column("memory_id").to_pylist()
        distances = rows.column("_distance").to_pylist()
        return [(memory_id, 1.0 - distance) for memory_id, distance in zip(ids, distances)]

    def indexed_memory_ids(self) -> set[str]:
        table = self._table.to_lance().to_table(columns=["memory_id"])
        return set(table.column("memory_id").to_pylist())

    def count(self) -> int:
        return self._table.count_rows()

    def optimize(self) -> None:
        """Compact the many small fragments that one-memory appends leave behind."""
        with self._write_lock:
            self._table.optimize()
