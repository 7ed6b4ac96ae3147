"""The owner's persisted, compact copy of the chunk table (`vectors.compact/` beside `vectors.lance/`).

Reading the whole LanceDB table at every start (through its child process, as Python objects) took
32-41 s and 2 GB of RSS at 100k memories (600k chunks). This folder holds the same rows in the shape
the search needs, so a start reads a few small arrays and maps the rest:

  header.json     what is committed: row count, byte sizes, the LanceDB table version it mirrors,
                  the vector size, the sketch's size; replaced atomically after the data files are synced
  vectors.f32     one float32 row per chunk (read whole below EXACT_ROWS, else mapped and read by row)
  basis.f32       above EXACT_ROWS: the SKETCH_DIMENSIONS principal directions of the rows (d x k)
  sketch.f32      above EXACT_ROWS: each row projected on the basis (k float32), the first stage
  rows.bin        per chunk: memory number, chunk index, field number, end of its text in texts.bin
  texts.bin       the chunk texts, UTF-8, read only for the chunks a caller asks for
  memories.jsonl  one [memory_id, topic_id] per memory number

LanceDB stays the durable truth. The folder is trusted only if its header parses, every file holds at
least what the header commits, and the header names the table's current version; anything else (no
folder, a torn header, a short file, a table changed behind it) rebuilds it from the table. Bytes past
the committed sizes (an append cut short) are cut off.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graph.backends.embedded.chunk_table import Chunk
from graph.core.files import atomic_writer, write_atomic
from graph.core.workspace import open_no_follow

FORMAT = 1
EXACT_ROWS = 150_000
"""Up to this many chunks the search is exact over a float32 copy in memory (230 MB at this size);
above it, a scan of each row's sketch picks a shortlist that is re-ranked exactly from the mapped
float32 file."""
SKETCH_DIMENSIONS = 64
"""The sketch: a row projected on the rows' first principal directions (1/6 of MiniLM's 384 floats)."""
SKETCH_SAMPLE = 100_000
"""Rows the principal directions are computed from (evenly spaced)."""
SHORTLIST_FACTOR = 8
SHORTLIST_MIN = 4_000
"""The shortlist is max(SHORTLIST_FACTOR * limit, SHORTLIST_MIN) rows (recall measured in
docs/measurements.md)."""

ROW = np.dtype([("memory", "<i4"), ("chunk_index", "<i4"), ("field", "<i2"), ("text_end", "<i8")])
FILES = ("vectors.f32", "basis.f32", "sketch.f32", "rows.bin", "texts.bin", "memories.jsonl")


class CompactUnusable(ValueError):
    """The folder cannot be trusted (missing, torn, or behind the table): rebuild it."""


def compact_path(lance_path: Path) -> Path:
    return lance_path.with_name(lance_path.stem + ".compact")


def principal_basis(vectors: np.ndarray, dimensions: int) -> np.ndarray:
    """The `dimensions` directions of largest variance of these rows (columns, float32): a dot
    product over them ranks rows almost as the full one does, since the rest carries little variance."""
    sample = np.asarray(vectors[:: max(1, len(vectors) // SKETCH_SAMPLE)], dtype=np.float64)
    covariance = np.cov(sample.T) if len(sample) > 1 else np.eye(sample.shape[1])
    _, directions = np.linalg.eigh(covariance)
    return np.ascontiguousarray(directions[:, ::-1][:, :dimensions], dtype=np.float32)


@dataclass
class Header:
    dimensions: int
    table_version: int
    rows: int = 0
    text_bytes: int = 0
    memories: int = 0
    memory_bytes: int = 0
    fields: list[str] = field(default_factory=list)
    sketch: int = 0
    """The sketch's size (0: no sketch, the exact search)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "dimensions": self.dimensions,
            "tableVersion": self.table_version,
            "rows": self.rows,
            "textBytes": self.text_bytes,
            "memories": self.memories,
            "memoryBytes": self.memory_bytes,
            "fields": self.fields,
            "sketch": self.sketch,
        }

    @classmethod
    def read(cls, path: Path, dimensions: int) -> Header:
        try:
            raw = json.loads((path / "header.json").read_text())
            if raw["format"] != FORMAT or raw["dimensions"] != dimensions:
                raise CompactUnusable(f"format {raw['format']}, {raw['dimensions']}-d vectors")
            header = cls(
                dimensions,
                int(raw["tableVersion"]),
                int(raw["rows"]),
                int(raw["textBytes"]),
                int(raw["memories"]),
                int(raw["memoryBytes"]),
                [str(f) for f in raw["fields"]],
                int(raw["sketch"]),
            )
        except CompactUnusable:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CompactUnusable(f"header: {type(exc).__name__}: {exc}") from exc
        if not 0 <= header.sketch <= dimensions:
            raise CompactUnusable(f"header: a sketch of {header.sketch} dimensions")
        return header

    def sizes(self) -> dict[str, int]:
        return {
            "vectors.f32": self.rows * self.dimensions * 4,
            "basis.f32": self.dimensions * self.sketch * 4,
            "sketch.f32": self.rows * self.sketch * 4,
            "rows.bin": self.rows * ROW.itemsize,
            "texts.bin": self.text_bytes,
            "memories.jsonl": self.memory_bytes,
        }


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CompactFiles:
    """The folder's files: open (validated), appended to, rewritten. One writer (the index's writer
    thread, or a caller holding its lock); readers use the arrays `load` returns."""

    def __init__(self, path: Path, header: Header) -> None:
        self.path = path
        self.header = header
        self._memory_numbers: dict[str, int] = {}

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path, dimensions: int, table_version: int) -> CompactFiles:
        """The committed folder, its uncommitted tails cut off; CompactUnusable if it cannot be trusted."""
        header = Header.read(path, dimensions)
        if header.table_version != table_version:
            raise CompactUnusable(f"mirrors table version {header.table_version}, the table is at {table_version}")
        for name, size in header.sizes().items():
            try:
                actual = (path / name).stat().st_size
            except OSError as exc:
                raise CompactUnusable(f"{name}: {exc}") from exc
            if actual < size:
                raise CompactUnusable(f"{name} holds {actual} bytes, the header commits {size}")
            if actual > size:
                os.truncate(path / name, size)
        files = cls(path, header)
        return files

    @classmethod
    def create(
        cls, path: Path, dimensions: int, table_version: int, chunks: list[Chunk], vectors: np.ndarray
    ) -> CompactFiles:
        """A new folder holding these rows, written aside and moved into place."""
        building = path.with_name(path.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        for name in FILES:
            (building / name).touch()
        files = cls(building, Header(dimensions, table_version))
        if len(chunks) > EXACT_ROWS:
            files.write_basis(principal_basis(vectors, SKETCH_DIMENSIONS))
        files.append(chunks, vectors, table_version)
        old = path.with_name(path.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if path.exists():
            os.replace(path, old)
        os.replace(building, path)
        _fsync_dir(path.parent)
        shutil.rmtree(old, ignore_errors=True)
        files.path = path
        return files

    # -- reading ---------------------------------------------------------------------
    def memories(self) -> list[tuple[str, str]]:
        if not self.header.memories:
            return []
        try:
            text = (self.path / "memories.jsonl").read_bytes()[: self.header.memory_bytes].decode("utf-8")
            pairs = json.loads("[" + text.rstrip("\n").replace("\n", ",") + "]")
        except ValueError as exc:  # bytes that are not what was written
            raise CompactUnusable(f"memories.jsonl: {exc}") from exc
        if len(pairs) != self.header.memories:
            raise CompactUnusable(
                f"memories.jsonl holds {len(pairs)} memories, the header commits {self.header.memories}"
            )
        self._memory_numbers = {memory_id: number for number, (memory_id, _) in enumerate(pairs)}
        return [(str(m), str(t)) for m, t in pairs]

    def rows(self) -> np.ndarray:
        rows = np.fromfile(self.path / "rows.bin", dtype=ROW, count=self.header.rows)
        if len(rows) and (
            int(rows["memory"].max()) >= self.header.memories
            or int(rows["memory"].min()) < 0
            or int(rows["field"].max()) >= len(self.header.fields)
            or int(rows["text_end"][-1]) != self.header.text_bytes
        ):
            raise CompactUnusable("rows.bin points past the committed memories, fields or texts")
        return rows

    def vectors(self) -> np.ndarray:
        """The float32 rows in memory (the exact search's copy)."""
        return np.fromfile(
            self.path / "vectors.f32", dtype=np.float32, count=self.header.rows * self.header.dimensions
        ).reshape(-1, self.header.dimensions)

    def mapped_vectors(self) -> MappedRows:
        return MappedRows(self.path / "vectors.f32", self.header.rows, self.header.dimensions)

    def basis(self) -> np.ndarray:
        header = self.header
        count = header.dimensions * header.sketch
        return np.fromfile(self.path / "basis.f32", dtype=np.float32, count=count).reshape(header.dimensions, -1)

    def read_sketch(self, out: np.ndarray) -> None:
        """The sketch rows read straight into `out` (header.rows x header.sketch float32, C order):
        one pass and no second 150 MB copy at 100k memories, and the read releases the GIL while warm-up's
        other steps run."""
        view = out.data.cast("B")
        with open(self.path / "sketch.f32", "rb") as file:
            if file.readinto(view) != view.nbytes:
                raise CompactUnusable("sketch.f32 is shorter than its header says")

    def texts(self) -> TextFile:
        return TextFile(self.path / "texts.bin")

    # -- writing ---------------------------------------------------------------------
    def append(self, chunks: Sequence[Chunk], vectors: np.ndarray, table_version: int) -> None:
        """Append these rows, sync them, then commit the header naming `table_version`."""
        header = self.header
        if len(chunks):
            if not self._memory_numbers and header.memories:
                self.memories()
            fields = {name: number for number, name in enumerate(header.fields)}
            new_memories: list[str] = []
            numbers = np.empty(len(chunks), dtype=np.int32)
            field_numbers = np.empty(len(chunks), dtype=np.int16)
            texts = [chunk.text.encode("utf-8") for chunk in chunks]
            for i, chunk in enumerate(chunks):
                number = self._memory_numbers.get(chunk.memory_id)
                if number is None:
                    number = self._memory_numbers[chunk.memory_id] = header.memories + len(new_memories)
                    new_memories.append(json.dumps([chunk.memory_id, chunk.topic_id]) + "\n")
                numbers[i] = number
                if chunk.field not in fields:
                    fields[chunk.field] = len(header.fields)
                    header.fields.append(chunk.field)
                field_numbers[i] = fields[chunk.field]
            rows = np.empty(len(chunks), dtype=ROW)
            rows["memory"] = numbers
            rows["chunk_index"] = [chunk.chunk_index for chunk in chunks]
            rows["field"] = field_numbers
            rows["text_end"] = header.text_bytes + np.cumsum([len(t) for t in texts])
            block = np.ascontiguousarray(vectors, dtype=np.float32)
            memory_bytes = "".join(new_memories).encode("utf-8")
            parts: dict[str, bytes | memoryview] = {
                "vectors.f32": block.data,
                "rows.bin": rows.data,
                "texts.bin": b"".join(texts),
                "memories.jsonl": memory_bytes,
            }
            if header.sketch:
                parts["sketch.f32"] = np.ascontiguousarray(block @ self.basis()).data
            for name, data in parts.items():
                with open(self.path / name, "ab", opener=open_no_follow) as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
            header.rows += len(chunks)
            header.text_bytes += len(parts["texts.bin"])
            header.memories += len(new_memories)
            header.memory_bytes += len(memory_bytes)
        self.commit(table_version)

    def write_basis(self, basis: np.ndarray) -> None:
        """Set the sketch's basis (before any row is written with it: `add_sketch` projects the rows
        already there); committed with the next header."""
        write_atomic(self.path / "basis.f32", np.ascontiguousarray(basis, dtype=np.float32).tobytes(), durable=True)
        self.header.sketch = basis.shape[1]

    def add_sketch(self) -> None:
        """Past EXACT_ROWS, the sketch of every row, committed with its basis: from then on appends
        write sketches too."""
        header = self.header
        shape = (header.rows, header.dimensions)
        vectors = np.memmap(self.path / "vectors.f32", dtype=np.float32, mode="r", shape=shape)
        basis = principal_basis(vectors, SKETCH_DIMENSIONS)
        with atomic_writer(self.path / "sketch.f32", binary=True, durable=True) as out:
            for start in range(0, header.rows, 65_536):
                out.write(np.ascontiguousarray(vectors[start : start + 65_536] @ basis).data)
        del vectors
        self.write_basis(basis)
        self.commit(header.table_version)

    def commit(self, table_version: int) -> None:
        """Name the table version the committed rows mirror (after an append, or a compaction,
        which changes the version but not the rows)."""
        self.header.table_version = table_version
        write_atomic(self.path / "header.json", json.dumps(self.header.to_json()), durable=True)


class MappedRows:
    """The float32 file mapped, read by row: the pages a read touches are dropped from this process's
    mapping afterwards (they stay in the page cache), so the re-rank does not grow the RSS."""

    def __init__(self, path: Path, rows: int, dimensions: int) -> None:
        self.rows, self.dimensions = rows, dimensions
        self._map: mmap.mmap | None = None
        self._array: np.ndarray = np.empty((0, dimensions), dtype=np.float32)
        if rows:
            with open(path, "rb") as handle:
                self._map = mmap.mmap(handle.fileno(), rows * dimensions * 4, access=mmap.ACCESS_READ)
            self._array = np.frombuffer(self._map, dtype=np.float32).reshape(rows, dimensions)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The rows at these positions (ascending: the reads then go forward through the file). Most of
        the cost is the page faults of those reads (8,000 rows: ~80 ms on a loaded 2-core machine)."""
        out: np.ndarray = self._array[positions]
        if self._map is not None and len(positions):
            self._map.madvise(mmap.MADV_DONTNEED)
        return out


class TextFile:
    """Chunk texts read by byte range when asked for."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDONLY)

    def read(self, start: int, end: int) -> str:
        return os.pread(self._fd, end - start, start).decode("utf-8")

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
