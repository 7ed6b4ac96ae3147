"""Per-sentence MiniLM vectors of every memory version (graph.search.memory_chunks), durable in the
workspace's LanceDB and searched in memory: the embedded backend's counterpart of
graph.backends.team.vectors.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from graph.backends.embedded.chunk_table import ChunkTable, LanceChunkTable
from graph.backends.embedded.lance_child import ChildChunkTable, LanceChildError
from graph.core.memories import Memory
from graph.search.embedder import Embedder
from graph.search.memory_chunks import Chunk, memory_chunks

log = logging.getLogger("flowbaby.vectors")

__all__ = ["VectorIndex", "open_vector_index"]

COMPACT_EVERY = 100
"""Appends between two compactions: each add leaves a small LanceDB fragment (and a version),
and reading thousands of them makes every start slower."""


class VectorIndex:
    """The chunk table (graph.backends.embedded.chunk_table) holds the vectors durably; searches run on an
    in-memory copy.

    LanceDB's exact (flat) search took 52-65 ms per query at 60k chunks here; the
    same exact search as one matrix product over a float32 copy takes a few ms.
    The copy costs 1.5 KB per chunk (about 90 MB at 10k memories).
    """

    def __init__(self, path: Path, embedder: Embedder, table: ChunkTable | None = None) -> None:
        """`table`: the table at `path` (LanceDB in this process unless given, e.g. a ChildChunkTable)."""
        self.dimensions = dimensions = embedder.dimensions
        self._embedder = embedder
        self._write_lock = threading.Lock()
        self._appends = 0
        self._table = table if table is not None else LanceChunkTable(path, dimensions)
        chunks, vectors = self._table.rows()
        self._chunks: list[Chunk] = chunks
        self._view = (vectors, len(chunks))
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowbaby-vectors")
        self.write_failures = 0
        """Appends the table refused: those memories are searchable until this process ends, and
        the next start (or `repair`) embeds them again, as any memory without stored vectors."""

    def add_memories(self, memories: list[Memory]) -> int:
        """Embed these memories' chunks and make them searchable; returns the number of rows.
        The rows reach the table in the background, in order: a retrieval right after a stage
        must not wait for the table's child process to start (2.3-4.8 s under load, measured)."""
        chunks = [chunk for memory in memories for chunk in memory_chunks(memory)]
        if not chunks:
            return 0
        vectors = np.asarray(self._embedder.encode([c.text for c in chunks]), dtype=np.float32)
        with self._write_lock:
            self._append(vectors, chunks)
            self._appends += 1
            compact = self._appends >= COMPACT_EVERY
            if compact:
                self._appends = 0
        self._writer.submit(self._store, chunks, vectors, compact)
        return len(chunks)

    def _store(self, chunks: list[Chunk], vectors: np.ndarray, compact: bool) -> None:
        try:
            self._table.add(chunks, vectors)
        except Exception:
            self.write_failures += 1
            log.exception("storing %d chunk vectors failed; the next start embeds their memories again", len(chunks))
            return
        if compact:
            self._compact()

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

    def forget(self, memory_ids: list[str]) -> None:
        """Take these memories out of search at once, and out of the table's files (after the
        appends queued before it): rows deleted, fragments rewritten, old versions removed."""
        gone = set(memory_ids)
        with self._write_lock:
            buffer, size = self._view
            keep = [i for i, chunk in enumerate(self._chunks[:size]) if chunk.memory_id not in gone]
            chunks = [self._chunks[i] for i in keep]
            vectors = np.empty((max(len(keep), 1024), buffer.shape[1]), dtype=np.float32)
            vectors[: len(keep)] = buffer[keep]
            self._chunks = chunks
            self._view = (vectors, len(keep))
        self._writer.submit(self._table.delete, memory_ids).result()

    def indexed_memory_ids(self) -> set[str]:
        return {chunk.memory_id for chunk in self._chunks[: self._view[1]]}

    def count(self) -> int:
        return self._view[1]

    def optimize(self) -> None:
        """Compact now, after the appends made so far (every COMPACT_EVERY appends this happens
        on its own)."""
        self._writer.submit(self._compact).result()

    def _compact(self) -> None:
        """Compact the many small fragments that one-memory appends leave behind. A failed
        compaction leaves the data as it was, so it only logs."""
        try:
            self._table.optimize()
        except Exception:
            log.exception("LanceDB compaction failed; the next one retries")

    def flush(self) -> None:
        """Wait until the appends made so far are in the table (or have failed)."""
        self._writer.submit(lambda: None).result()

    def close(self) -> None:
        """Store what is queued, then stop the table's child process, if it has one."""
        self._writer.shutdown(wait=True)
        self._table.close()


def open_vector_index(path: Path, embedder: Embedder, idle_sec: float | None = None) -> tuple[VectorIndex, Path | None]:
    """The index, or, if its folder cannot be read (a truncated file, another model's vector
    size), a new empty one after moving the folder aside: the vectors are derived from SQLite,
    so the caller re-embeds every memory. Returns the index and where the old folder went.
    `idle_sec`: serve the table from a child process that exits after that long without a
    call (graph.backends.embedded.lance_child); None: LanceDB in this process."""
    dimensions = embedder.dimensions  # a model that cannot load is not the index's fault: raise here

    def open_() -> VectorIndex:
        table = None if idle_sec is None else ChildChunkTable(path, dimensions, idle_sec)
        return VectorIndex(path, embedder, table)

    try:
        return open_(), None
    except LanceChildError:  # the process failed, not the data: nothing to move aside
        raise
    except Exception as exc:
        if not path.exists():  # nothing on disk to blame: the failure is the warm-up's own
            raise
        aside = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        log.warning(
            "vector index %s is unreadable (%s: %s); moved to %s and rebuilt", path, type(exc).__name__, exc, aside
        )
        os.replace(path, aside)
        return open_(), aside
