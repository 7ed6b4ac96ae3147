"""Session chunk vectors: durable in LanceDB (`.flowbaby/sessions/vectors.lance`), searched as
one in-memory float32 matrix per session (exact cosine; under a millisecond at thousands of chunks).

The product is numpy's own loop (einsum), not BLAS: OpenBLAS splits a matrix-vector product of
this size over its threads, and on a busy machine waiting for them took the p95 of a product
that needs 0.2 ms to 40-80 ms (measured at load 11 on 2 cores; einsum's p95 was 12 ms)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

TABLE = "session_chunks"


class SessionVectors:
    def __init__(self, path: Path, dimensions: int) -> None:
        """`dimensions` is the encoder's vector size; a table of another size (another model) is
        dropped and made again, since its vectors cannot be compared with this model's queries."""
        import lancedb  # with pyarrow, only once session memory is used (~100 MB)
        import pyarrow as pa

        self.dimensions = dimensions
        self._path = path
        self._db = lancedb.connect(str(path))
        schema = pa.schema(
            [
                pa.field("embedding_id", pa.string()),
                pa.field("session_key", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dimensions)),
            ]
        )
        self._table = self._db.create_table(TABLE, schema=schema, exist_ok=True, mode=self._mode(schema))
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[list[str], np.ndarray]] = {}
        # LanceDB's own reader: `to_lance()` would import pylance as well, ~45 MB for good.
        stored = self._table.to_arrow().select(["embedding_id", "session_key", "vector"])
        if stored.num_rows:
            flat = stored.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
            matrix = np.asarray(flat, dtype=np.float32).reshape(-1, dimensions)
            by_key: dict[str, list[int]] = {}
            for row, key in enumerate(stored.column("session_key").to_pylist()):
                by_key.setdefault(key, []).append(row)
            ids = stored.column("embedding_id").to_pylist()
            for key, rows in by_key.items():
                self._sessions[key] = ([ids[r] for r in rows], matrix[rows])

    def keep_variant(self, variant: str) -> None:
        """Vectors made by another encoder variant are dropped; the variant in use is noted next
        to the table (`vectors.variant`)."""
        marker = self._path.parent / "vectors.variant"
        if marker.is_file() and marker.read_text() == variant:
            return
        if self.total():
            self.clear()
        marker.write_text(variant)

    def _mode(self, schema: pa.Schema) -> str:
        """ "overwrite" when the stored table holds vectors of another size, else "create"."""
        try:
            stored = self._db.open_table(TABLE).schema.field("vector").type
        except ValueError:  # no table yet
            return "create"
        return "create" if stored == schema.field("vector").type else "overwrite"

    def count(self, key: str) -> int:
        entry = self._sessions.get(key)
        return len(entry[0]) if entry else 0

    def total(self) -> int:
        return sum(len(ids) for ids, _ in self._sessions.values())

    def ids(self, key: str) -> set[str]:
        entry = self._sessions.get(key)
        return set(entry[0]) if entry else set()

    def add(self, key: str, ids: list[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        import pyarrow as pa  # loaded with the table already

        with self._lock:
            self._table.add(
                pa.table(
                    {
                        "embedding_id": pa.array(ids, pa.string()),
                        "session_key": pa.array([key] * len(ids), pa.string()),
                        "vector": pa.FixedSizeListArray.from_arrays(
                            pa.array(vectors.reshape(-1), pa.float32()), self.dimensions
                        ),
                    }
                )
            )
            old_ids, old = self._sessions.get(key, ([], np.empty((0, self.dimensions), np.float32)))
            self._sessions[key] = (old_ids + ids, np.vstack([old, vectors]))

    def remove(self, key: str, ids: set[str]) -> None:
        if not ids:
            return
        with self._lock:
            listed = sorted(ids)
            for start in range(0, len(listed), 500):
                quoted = ",".join("'" + i.replace("'", "''") + "'" for i in listed[start : start + 500])
                self._table.delete(f"embedding_id IN ({quoted})")
            old_ids, old = self._sessions.get(key, ([], np.empty((0, self.dimensions), np.float32)))
            keep = [i for i, eid in enumerate(old_ids) if eid not in ids]
            self._sessions[key] = ([old_ids[i] for i in keep], old[keep])

    def nearest(self, keys: list[str], vector: np.ndarray, limit: int) -> list[tuple[str, str, float]]:
        """(session_key, embedding_id, cosine similarity) of the nearest chunks, best first."""
        found: list[tuple[str, str, float]] = []
        for key in keys:
            entry = self._sessions.get(key)
            if not entry or not entry[0]:
                continue
            ids, matrix = entry
            scores = np.einsum("ij,j->i", matrix, vector)  # one thread: see the module's docstring
            top = min(limit, len(ids))
            best = np.argpartition(-scores, top - 1)[:top]
            found.extend((key, ids[i], float(scores[i])) for i in best.tolist())
        found.sort(key=lambda hit: -hit[2])
        return found[:limit]

    def clear(self) -> None:
        """Drop every vector (they came from another encoder variant)."""
        with self._lock:
            self._table.delete("true")
            self._sessions.clear()

    def optimize(self) -> None:
        with self._lock:
            self._table.optimize()

    def close(self) -> None:
        """LanceDB holds no connection; the table is read again at the next open."""
