"""Per-sentence MiniLM vectors of every memory version (graph.core.memory_chunks), durable in the
workspace's LanceDB and searched in memory: the embedded backend's counterpart of
graph.backends.team.vectors.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from graph.backends.embedded.chunk_table import ChunkTable, LanceChunkTable, committed_version, table_folder
from graph.backends.embedded.compact_vectors import (
    EXACT_ROWS,
    SHORTLIST_FACTOR,
    SHORTLIST_MIN,
    CompactFiles,
    CompactUnusable,
    MappedRows,
    TextFile,
    compact_path,
)
from graph.backends.embedded.lance_child import ChildChunkTable, LanceChildError
from graph.backends.vectors import Embedding
from graph.core.memories import Memory
from graph.core.memory_chunks import Chunk, memory_chunks

log = logging.getLogger("flowbaby.vectors")

__all__ = ["VectorIndex", "open_vector_index"]

NO_TABLE_VERSION = 0
"""The version a folder names while the table does not exist (LanceDB makes it at version 1)."""

UNTRUSTED_VERSION = -1
"""The table version a folder names once a table write failed: no table has it."""

COMPACT_EVERY = 100
"""Appends between two compactions: each add leaves a small LanceDB fragment (and a version),
and reading thousands of them makes every start slower."""


@dataclass
class _Loaded:
    """What one load of the compact folder gives, with the rows added since (lists only grow)."""

    memory_ids: list[str]
    topic_ids: list[str]
    numbers: dict[str, int]
    fields: list[str]
    base: int
    """Rows read from the folder; rows from here on were added by this process (`tail_chunks`)."""
    base_rows: np.ndarray
    texts: TextFile
    mapped: MappedRows | None
    basis: np.ndarray | None
    tail_chunks: list[Chunk]


class _View(NamedTuple):
    """One consistent snapshot of the searchable rows: rows below `size` never change, and the
    lists and buffers are only ever appended to (a forget publishes a new view)."""

    size: int
    loaded: _Loaded
    row_memory: np.ndarray
    """Per row: its memory's number in `loaded.memory_ids`."""
    exact: np.ndarray | None
    """Every row's float32 vector (up to EXACT_ROWS rows), or None: the compact search."""
    sketch: np.ndarray | None
    """The compact search's first stage: every row projected on `loaded.basis`."""
    tail: np.ndarray | None
    """The compact search's float32 rows added since the load (row `loaded.base` onwards)."""


class VectorIndex:
    """The chunk table (graph.backends.embedded.chunk_table) holds the vectors durably; searches run on the
    owner's compact copy (graph.backends.embedded.compact_vectors), which a start reads instead of the table.

    LanceDB's exact (flat) search took 52-65 ms per query at 60k chunks here; the same exact
    search as one matrix product over a float32 copy takes a few ms, so up to EXACT_ROWS chunks
    the copy is in memory (1.5 KB per chunk, about 90 MB at 10k memories). Above it (600k chunks
    at 100k memories: 921 MB), a scan of each row's sketch (its 64 principal components) picks a
    shortlist that is re-ranked exactly from the mapped float32 file. Chunk texts stay on disk until asked for.
    """

    def __init__(self, path: Path, embedder: Embedding, table: ChunkTable | None = None) -> None:
        """`table`: the table at `path` (LanceDB in this process unless given, e.g. a ChildChunkTable)."""
        self.dimensions = dimensions = embedder.dimensions
        self._embedder = embedder
        self._write_lock = threading.Lock()
        self._appends = 0
        self._path = path
        self._table = table if table is not None else LanceChunkTable(path, dimensions)
        self._compact_path = compact_path(path)
        self._compact_failed = False
        try:
            files = self._open_files()
            self._view = self._load(files)
            self.rebuilt_compact = False
            """True when this start had to rebuild the compact folder from the table (read whole)."""
        except CompactUnusable as exc:
            if self._compact_path.exists():
                log.warning("rebuilding %s from the table: %s", self._compact_path.name, exc)
            if table_folder(path).exists():
                version, _ = self._table.state()
                chunks, vectors = self._table.rows()
            else:  # nothing was ever appended: an empty folder mirrors the table that does not exist
                version, chunks, vectors = NO_TABLE_VERSION, [], np.empty((0, dimensions), np.float32)
            files = CompactFiles.create(self._compact_path, dimensions, version, chunks, vectors)
            del chunks, vectors
            self._view = self._load(files)
            self.rebuilt_compact = True
        self._files = files
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowbaby-vectors")
        self.write_failures = 0
        """Appends the table refused: those memories are searchable until this process ends, and
        the next start (or `repair`) embeds them again, as any memory without stored vectors."""

    def _open_files(self) -> CompactFiles:
        """The compact folder if it mirrors the table exactly (CompactUnusable if not). The table's
        version is read from its manifest names, so a start that finds the folder current never
        opens the table (its child process starts at the first write); only when those names
        cannot say is the table asked, and its rows counted."""
        version, rows = committed_version(self._path), None
        if version is None and not table_folder(self._path).exists():
            version = NO_TABLE_VERSION
        elif version is None:
            version, rows = self._table.state()
        files = CompactFiles.open(self._compact_path, self.dimensions, version)
        if rows is not None and files.header.rows != rows:
            raise CompactUnusable(f"holds {files.header.rows} rows, the table {rows}")
        if not files.header.sketch and files.header.rows > EXACT_ROWS:
            files.add_sketch()
        return files

    def _load(self, files: CompactFiles) -> _View:
        """The searchable rows from the folder: small arrays read, the rest mapped or read on demand."""
        header = files.header
        pairs = files.memories()
        rows = files.rows()
        memory_ids = [m for m, _ in pairs]
        basis = files.basis() if header.sketch else None
        loaded = _Loaded(
            memory_ids=memory_ids,
            topic_ids=[t for _, t in pairs],
            numbers={m: number for number, m in enumerate(memory_ids)},
            fields=list(header.fields),
            base=header.rows,
            base_rows=rows,
            texts=files.texts(),
            mapped=None if basis is None else files.mapped_vectors(),
            basis=basis,
            tail_chunks=[],
        )
        row_memory = np.empty(max(header.rows, 1024), dtype=np.int32)
        row_memory[: header.rows] = rows["memory"]
        if basis is None:
            exact = np.empty((max(header.rows, 1024), self.dimensions), dtype=np.float32)
            exact[: header.rows] = files.vectors()
            return _View(header.rows, loaded, row_memory, exact, None, None)
        tail = np.empty((0, self.dimensions), np.float32)
        sketch = np.empty((max(header.rows, 1024), header.sketch), dtype=np.float32)
        files.read_sketch(sketch[: header.rows])
        return _View(header.rows, loaded, row_memory, None, sketch, tail)

    def add_memories(self, memories: list[Memory]) -> int:
        """Embed these memories' chunks and make them searchable; returns the number of rows.
        The rows reach the table in the background, in order: a retrieval right after a stage
        must not wait for the table's child process to start (2.3-4.8 s under load, measured)."""
        chunks = [chunk for memory in memories for chunk in memory_chunks(memory)]
        if not chunks:
            return 0
        vectors = np.asarray(self._embedder.encode([c.text for c in chunks]), dtype=np.float32)
        with self._write_lock:  # queued under the lock: a forget's flush then covers every row it sees
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
            self._distrust()
            return
        self._mirror(lambda files: files.append(chunks, vectors, self._table.state()[0]))
        if compact:
            self._compact()

    def _mirror(self, write: Callable[[CompactFiles], None]) -> None:
        """Write to the compact folder after the table; after one failure, no more writes in this
        process (its files may hold a torn tail): the next start rebuilds the folder from the table."""
        files = self._files
        if self._compact_failed or files is None:
            return
        try:
            write(files)
        except Exception:
            self._compact_failed = True
            log.exception("writing %s failed; the next start rebuilds it from the table", self._compact_path.name)

    def _distrust(self) -> None:
        """After the table refused a write, the next start must not trust the folder by version
        alone: it reads the table itself, and a damaged table is moved aside there and rebuilt."""
        self._mirror(lambda files: files.commit(UNTRUSTED_VERSION))

    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        """The nearest chunks as (memory_id, cosine similarity), best first."""
        view, found = self._nearest(vector, limit)
        ids = view.loaded.memory_ids
        return [
            (ids[number], similarity)
            for number, similarity in zip(view.row_memory[found[0]].tolist(), found[1].tolist(), strict=True)
        ]

    def nearest_chunks(self, vector: list[float], limit: int) -> list[tuple[Chunk, float]]:
        """The nearest chunks with their cosine similarity, best first."""
        view, (rows, values) = self._nearest(vector, limit)
        return [(_chunk(view, row), similarity) for row, similarity in zip(rows.tolist(), values.tolist(), strict=True)]

    def _nearest(self, vector: list[float], limit: int) -> tuple[_View, tuple[np.ndarray, np.ndarray]]:
        """The view searched, and its nearest rows with their cosine similarity, best first: exact
        below EXACT_ROWS; above, the sketch scan's shortlist re-ranked exactly."""
        view = self._view  # one consistent snapshot
        size = view.size
        if limit <= 0 or not size:
            return view, (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32))
        query = np.asarray(vector, dtype=np.float32)
        limit = min(limit, size)
        if view.exact is None:
            return view, _shortlist(view, query, limit)
        similarities = view.exact[:size] @ query
        top = np.argpartition(-similarities, limit - 1)[:limit]
        top = top[np.argsort(-similarities[top], kind="stable")]
        return view, (top, similarities[top])

    def _append(self, vectors: np.ndarray, chunks: list[Chunk]) -> None:
        """Grow the in-memory rows by doubling, so appends cost O(1) amortised."""
        view = self._view
        loaded, size, count = view.loaded, view.size, len(vectors)
        numbers = np.empty(count, dtype=np.int32)
        for i, chunk in enumerate(chunks):
            number = loaded.numbers.get(chunk.memory_id)
            if number is None:
                number = loaded.numbers[chunk.memory_id] = len(loaded.memory_ids)
                loaded.memory_ids.append(chunk.memory_id)
                loaded.topic_ids.append(chunk.topic_id)
            numbers[i] = number
        row_memory = _grown(view.row_memory, size, count)
        row_memory[size : size + count] = numbers
        exact, sketch, tail = view.exact, view.sketch, view.tail
        if exact is not None:
            exact = _grown(exact, size, count)
            exact[size : size + count] = vectors
        else:
            assert sketch is not None and tail is not None and loaded.basis is not None
            sketch = _grown(sketch, size, count)
            sketch[size : size + count] = vectors @ loaded.basis
            tail = _grown(tail, size - loaded.base, count)
            tail[size - loaded.base : size - loaded.base + count] = vectors
        loaded.tail_chunks.extend(chunks)
        self._view = _View(size + count, loaded, row_memory, exact, sketch, tail)

    def forget(self, memory_ids: list[str]) -> None:
        """Take these memories out of search at once, and out of the table's files (after the
        appends queued before it): rows deleted, fragments rewritten, old versions removed. The
        compact folder is written again from the rows that remain, before the table changes (a
        crash in between leaves a folder that no longer matches the table: rebuilt at the next start)."""
        with self._write_lock:
            self.flush()
            view = self._view
            numbers = [n for m in set(memory_ids) if (n := view.loaded.numbers.get(m)) is not None]
            keep = np.flatnonzero(~np.isin(view.row_memory[: view.size], np.asarray(numbers, dtype=np.int32)))
            chunks = [_chunk(view, row) for row in keep.tolist()]
            vectors = _vectors(view, keep)
            files = CompactFiles.create(self._compact_path, self.dimensions, self._table.state()[0], chunks, vectors)
            del chunks, vectors
            self._files, self._compact_failed = files, False
            self._view = self._load(files)
            self._writer.submit(self._table.delete, memory_ids).result()
            self._mirror(lambda files: files.commit(self._table.state()[0]))

    def indexed_memory_ids(self) -> set[str]:
        view = self._view
        ids = view.loaded.memory_ids
        held = np.zeros(len(ids), dtype=bool)  # a mark per memory number: no sort of every row (np.unique)
        held[view.row_memory[: view.size]] = True
        return {ids[number] for number in np.flatnonzero(held).tolist()}

    def count(self) -> int:
        return self._view.size

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
            self._distrust()
            return
        self._mirror(lambda files: files.commit(self._table.state()[0]))

    def flush(self) -> None:
        """Wait until the appends made so far are in the table (or have failed)."""
        self._writer.submit(lambda: None).result()

    def close(self) -> None:
        """Store what is queued, then stop the table's child process, if it has one."""
        self._writer.shutdown(wait=True)
        self._table.close()


def _shortlist(view: _View, query: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows nearest by their sketch, re-ranked by their float32 vectors."""
    loaded, size = view.loaded, view.size
    assert view.sketch is not None and loaded.basis is not None
    approximate = view.sketch[:size] @ (query @ loaded.basis)
    wanted = min(size, max(SHORTLIST_FACTOR * limit, SHORTLIST_MIN))
    candidates = np.sort(np.argpartition(-approximate, wanted - 1)[:wanted])
    similarities = _vectors(view, candidates) @ query
    top = np.argpartition(-similarities, limit - 1)[:limit]
    top = top[np.argsort(-similarities[top], kind="stable")]
    return candidates[top], similarities[top]


def _vectors(view: _View, rows: np.ndarray) -> np.ndarray:
    """The float32 vectors of these rows (ascending), from memory or the mapped file."""
    if view.exact is not None:
        exact: np.ndarray = view.exact[rows]
        return exact
    loaded = view.loaded
    assert loaded.mapped is not None and view.tail is not None
    split = int(np.searchsorted(rows, loaded.base))
    return np.concatenate([loaded.mapped.take(rows[:split]), view.tail[rows[split:] - loaded.base]])


def _chunk(view: _View, row: int) -> Chunk:
    """One row's chunk, its text read from the folder's texts file."""
    loaded = view.loaded
    if row >= loaded.base:
        return loaded.tail_chunks[row - loaded.base]
    ends = loaded.base_rows["text_end"]
    record = loaded.base_rows[row]
    number = int(record["memory"])
    return Chunk(
        loaded.memory_ids[number],
        loaded.topic_ids[number],
        loaded.fields[int(record["field"])],
        int(record["chunk_index"]),
        loaded.texts.read(int(ends[row - 1]) if row else 0, int(record["text_end"])),
    )


def _grown(buffer: np.ndarray, size: int, count: int) -> np.ndarray:
    """`buffer` if it has room for `count` more rows after `size`, else a copy twice as large."""
    if size + count <= len(buffer):
        return buffer
    grown = np.empty((max(2 * len(buffer), size + count, 1024), *buffer.shape[1:]), dtype=buffer.dtype)
    grown[:size] = buffer[:size]
    return grown


def open_vector_index(
    path: Path, embedder: Embedding, idle_sec: float | None = None
) -> tuple[VectorIndex, Path | None]:
    """The index, or, if its folder cannot be read (a truncated file, another model's vector
    size), a new empty one after moving the folder aside: the vectors are derived from SQLite,
    so the caller re-embeds every memory. Returns the index and where the old folder went.
    `idle_sec`: serve the table from a child process that exits after that long without a
    call (graph.backends.embedded.lance_child); None: LanceDB in this process."""
    dimensions = embedder.dimensions  # a model that cannot load is not the index's fault: raise here

    def open_() -> VectorIndex:
        table = None if idle_sec is None else ChildChunkTable(path, dimensions, idle_sec, start=False)
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
        shutil.rmtree(compact_path(path), ignore_errors=True)  # it mirrored the old table
        return open_(), aside
