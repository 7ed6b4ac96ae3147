"""Where memory chunk vectors are kept durably: one LanceDB table, `memory_chunks`.

The search itself runs on an in-memory copy (graph.backends.embedded.vectors), so the table is only read
whole at start and appended to. `ChunkTable` is that surface; `LanceChunkTable` is LanceDB
itself, and graph.backends.embedded.lance_child serves one from a child process, so that the owning
process never loads LanceDB, pyarrow and pandas (about 100 MB it would keep for its whole life).
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graph.core.memory_chunks import Chunk

TABLE = "memory_chunks"
FIELDS = ("memory_id", "topic_id", "field", "chunk_index", "text")


def table_folder(path: Path) -> Path:
    """The table's own folder in the database folder `path` (absent until the table is made)."""
    return path / f"{TABLE}.lance"


def committed_version(path: Path) -> int | None:
    """The table's newest committed version, read from its manifest file names without LanceDB
    (about 2 CPU-s to import): a start checks the owner's compact copy against it, and needs no
    LanceDB until it writes. Lance commits a version by writing `_versions/{2**64-1-v:020}.manifest`
    (its V2 naming, lancedb's default) or `{v}.manifest` (V1); None when the folder does not say."""
    try:
        names = os.listdir(table_folder(path) / "_versions")
    except OSError:
        return None
    stems = [name.removesuffix(".manifest") for name in names if name.endswith(".manifest")]
    numbers = [int(stem) for stem in stems if stem.isdigit()]
    if not numbers or len(numbers) != len(stems):
        return None
    if all(len(stem) == 20 for stem in stems):
        return 2**64 - 1 - min(numbers)
    return max(numbers) if not any(len(stem) == 20 for stem in stems) else None


class ChunkTable(Protocol):
    """The durable chunk rows: read whole, appended to, compacted."""

    def rows(self) -> tuple[list[Chunk], np.ndarray]:
        """Every stored chunk and its vector (one float32 row each, in the same order)."""
        ...

    def add(self, chunks: list[Chunk], vectors: np.ndarray) -> None: ...
    def optimize(self) -> None: ...
    def state(self) -> tuple[int, int]:
        """The table's version and row count: what the owner's compact copy must match to be trusted
        (graph.backends.embedded.compact_vectors). The rows are counted by reading one small column, so a
        damaged data file fails here as it did when every start read the whole table."""
        ...

    def delete(self, memory_ids: list[str]) -> None:
        """Drop these memories' rows, then rewrite the data files and remove every older version,
        so no file under the table's folder still holds them."""
        ...

    def close(self) -> None: ...


class LanceChunkTable:
    """The table in this process. Opening it checks that its vectors have the model's size."""

    def __init__(self, path: Path, dimensions: int) -> None:
        import lancedb
        import pyarrow as pa

        self.dimensions = dimensions
        schema = pa.schema(
            [
                pa.field("memory_id", pa.string()),
                pa.field("topic_id", pa.string()),
                pa.field("field", pa.string()),
                pa.field("chunk_index", pa.int32()),
                pa.field("text", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dimensions)),
            ]
        )
        self._table = lancedb.connect(str(path)).create_table(TABLE, schema=schema, exist_ok=True)
        stored_size = self._table.schema.field("vector").type.list_size
        if stored_size != dimensions:
            raise ValueError(f"the index holds {stored_size}-d vectors; the model makes {dimensions}-d ones")

    def arrow(self) -> Any:
        """The whole table as one pyarrow Table (LanceDB's own reader: `to_lance()` would import
        pylance as well, ~45 MB for good)."""
        return self._table.to_arrow()

    def rows(self) -> tuple[list[Chunk], np.ndarray]:
        stored = self.arrow()
        chunks = [Chunk(*row) for row in zip(*(stored.column(f).to_pylist() for f in FIELDS), strict=True)]
        flat = stored.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        return chunks, np.asarray(flat, dtype=np.float32).reshape(-1, self.dimensions)

    def add(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        self._table.add(
            [
                {
                    "memory_id": c.memory_id,
                    "topic_id": c.topic_id,
                    "field": c.field,
                    "chunk_index": c.chunk_index,
                    "text": c.text,
                    "vector": vector,
                }
                for c, vector in zip(chunks, vectors.tolist(), strict=True)
            ]
        )

    def optimize(self) -> None:
        self._table.optimize()

    def state(self) -> tuple[int, int]:
        counted = self._table.search().select(["chunk_index"]).limit(None).to_arrow()
        return int(self._table.version), int(counted.num_rows)

    def delete(self, memory_ids: list[str]) -> None:
        if memory_ids:
            quoted = ", ".join("'" + m.replace("'", "''") + "'" for m in memory_ids)
            self._table.delete(f"memory_id IN ({quoted})")
        # Compaction rewrites fragments (a deletion alone only marks rows); cleanup with no age
        # limit removes the superseded fragments, deletion files and manifests at once.
        self._table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

    def close(self) -> None:
        """Nothing to release: LanceDB keeps no handle open between calls."""
