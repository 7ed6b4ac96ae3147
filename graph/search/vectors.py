"""Per-sentence MiniLM vectors of every memory version, in the workspace's LanceDB.

A memory is embedded sentence by sentence and field by field (MiniLM reads 256
word pieces at most, so one vector per long text would lose its tail). These rows
make a memory searchable the moment it is staged, long before its graph exists.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from graph.core.store import Memory
from graph.search.embedder import Embedder, split_sentences

log = logging.getLogger("flowbaby.vectors")

TABLE = "memory_chunks"
COMPACT_EVERY = 100
"""Appends between two compactions: each add leaves a small LanceDB fragment (and a version),
and reading thousands of them makes every start slower."""


@dataclass(frozen=True)
class Chunk:
    memory_id: str
    topic_id: str
    field: str
    chunk_index: int
    text: str


TINY_CHARS = 16
"""A sentence shorter than this carries too little to embed alone: consecutive tiny ones of a
field are merged ("a; b; c") into one chunk of up to MERGED_CHARS."""
MERGED_CHARS = 300
MAX_CHUNKS_PER_MEMORY = 256
"""Vectors per memory at most: a memory's embedding cost is bounded, so one large or odd
summary cannot hold back everyone's searches. Text past this is still found by the lexical lane."""


def memory_chunks(memory: Memory) -> list[Chunk]:
    """The memory's text cut into embeddable sentences, tagged with their field."""
    chunks: list[Chunk] = []

    def add(field: str, text: str) -> None:
        if len(chunks) < MAX_CHUNKS_PER_MEMORY:
            chunks.append(Chunk(memory.memory_id, memory.topic_id, field, len(chunks), text))

    for field, items in memory.sections():
        merged: list[str] = []
        for item in items:
            for sentence in split_sentences(item):
                if len(sentence) >= TINY_CHARS:
                    if merged:
                        add(field, "; ".join(merged))
                        merged = []
                    add(field, sentence)
                    continue
                if merged and sum(len(m) + 2 for m in merged) + len(sentence) > MERGED_CHARS:
                    add(field, "; ".join(merged))
                    merged = []
                merged.append(sentence)
        if merged:
            add(field, "; ".join(merged))
    return chunks


def _schema(dimensions: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("memory_id", pa.string()),
            pa.field("topic_id", pa.string()),
            pa.field("field", pa.string()),
            pa.field("chunk_index", pa.int32()),
            pa.field("text", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dimensions)),
        ]
    )


class VectorIndex:
    """LanceDB holds the chunk vectors durably; searches run on an in-memory copy.

    LanceDB's exact (flat) search took 52-65 ms per query at 60k chunks here; the
    same exact search as one matrix product over a float32 copy takes a few ms.
    The copy costs 1.5 KB per chunk (about 90 MB at 10k memories).
    """

    def __init__(self, path: Path, embedder: Embedder) -> None:
        import lancedb

        self.dimensions = dimensions = embedder.dimensions
        self._db = lancedb.connect(str(path))
        self._embedder = embedder
        self._write_lock = threading.Lock()
        self._appends = 0
        self._table = self._db.create_table(TABLE, schema=_schema(dimensions), exist_ok=True)
        stored_size = self._table.schema.field("vector").type.list_size
        if stored_size != dimensions:
            raise ValueError(f"the index holds {stored_size}-d vectors; the model makes {dimensions}-d ones")
        fields = ["memory_id", "topic_id", "field", "chunk_index", "text"]
        # LanceDB's own reader: `to_lance()` would import pylance as well, ~45 MB for good.
        stored = self._table.to_arrow()
        self._chunks: list[Chunk] = [
            Chunk(*row) for row in zip(*(stored.column(f).to_pylist() for f in fields), strict=False)
        ]
        flat = stored.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        self._view = (np.asarray(flat, dtype=np.float32).reshape(-1, dimensions), len(self._chunks))

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
            for c, vector in zip(chunks, vectors, strict=False)
        ]
        with self._write_lock:
            self._table.add(rows)
            self._append(np.asarray(vectors, dtype=np.float32), chunks)
            self._appends += 1
            compact = self._appends >= COMPACT_EVERY
        if compact:
            self.optimize()
        return len(rows)

    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        """The nearest chunks as (memory_id, cosine similarity), best first (exact search)."""
        return [(chunk.memory_id, similarity) for chunk, similarity in self.nearest_chunks(vector, limit)]

    def nearest_chunks(self, vector: list[float], limit: int) -> list[tuple[Chunk, float]]:
        """The nearest chunks with their cosine similarity, best first (exact search)."""
        buffer, size = self._view  # one consistent snapshot; rows below size never change
        if limit <= 0 or not size:
            return []
        similarities = buffer[:size] @ np.asarray(vector, dtype=np.float32)
        limit = min(limit, size)
        top = np.argpartition(-similarities, limit - 1)[:limit]
        top = top[np.argsort(-similarities[top], kind="stable")]
        chunks = self._chunks
        return [(chunks[i], value) for i, value in zip(top.tolist(), similarities[top].tolist(), strict=True)]

    def _append(self, vectors: np.ndarray, chunks: list[Chunk]) -> None:
        """Grow the in-memory copy by doubling, so appends cost O(1) amortised."""
        buffer, size = self._view
        if size + len(vectors) > len(buffer):
            grown = np.empty((max(2 * len(buffer), size + len(vectors), 1024), buffer.shape[1]), dtype=np.float32)
            grown[:size] = buffer[:size]
            buffer = grown
        buffer[size : size + len(vectors)] = vectors
        self._chunks.extend(chunks)
        self._view = (buffer, size + len(vectors))

    def indexed_memory_ids(self) -> set[str]:
        return {chunk.memory_id for chunk in self._chunks[: self._view[1]]}

    def count(self) -> int:
        return self._view[1]

    def optimize(self) -> None:
        """Compact the many small fragments that one-memory appends leave behind (every
        COMPACT_EVERY appends). A failed compaction leaves the data as it was, so it only logs."""
        with self._write_lock:
            self._appends = 0
            try:
                self._table.optimize()
            except Exception:
                log.exception("LanceDB compaction failed; the next one retries")


def open_vector_index(path: Path, embedder: Embedder) -> tuple[VectorIndex, Path | None]:
    """The index, or, if its folder cannot be read (a truncated file, another model's vector
    size), a new empty one after moving the folder aside: the vectors are derived from SQLite,
    so the caller re-embeds every memory. Returns the index and where the old folder went."""
    embedder.dimensions  # noqa: B018 (a model that cannot load is not the index's fault: raise here)
    try:
        return VectorIndex(path, embedder), None
    except Exception as exc:
        if not path.exists():  # nothing on disk to blame: the failure is the warm-up's own
            raise
        aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        log.warning(
            "vector index %s is unreadable (%s: %s); moved to %s and rebuilt", path, type(exc).__name__, exc, aside
        )
        os.replace(path, aside)
        return VectorIndex(path, embedder), aside
