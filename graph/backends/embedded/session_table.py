"""Session chunk vectors in LanceDB (`.flowbaby/sessions/vectors.lance`), the durable half of
graph.backends.embedded.session_vectors: in this process (SessionTable) or in a child process (ChildSessionTable,
`python -m graph.backends.embedded.session_table`), so that a process serving session searches does not keep
LanceDB, pyarrow and pandas (~150 MB) for its whole life.

Wire: graph.backends.embedded.lance_child's, with these requests:
  {"op": "rows"}                          -> {"ok": true, "rows": n} + embedding ids and session keys
                                             (offsets and bytes each), then the vectors
  {"op": "add", "key": k, "ids": [...]} + vectors -> {"ok": true}
  {"op": "delete", "ids": [...]}          -> {"ok": true}
  {"op": "clear"} / {"op": "optimize"}    -> {"ok": true}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graph.backends.embedded.lance_child import (
    ChildTable,
    child_arguments,
    decode_strings,
    encode_strings,
    encode_vectors,
    serve,
)

TABLE = "session_chunks"
DELETE_BATCH = 500
"""Embedding ids per LanceDB delete (its filter is one SQL expression)."""


class SessionTable:
    def __init__(self, path: Path, dimensions: int) -> None:
        """A table of another vector size (another model) is dropped and made again, since its
        vectors cannot be compared with this model's queries."""
        import lancedb
        import pyarrow as pa

        self.dimensions = dimensions
        self._db = lancedb.connect(str(path))
        schema = pa.schema(
            [
                pa.field("embedding_id", pa.string()),
                pa.field("session_key", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dimensions)),
            ]
        )
        self._table = self._db.create_table(TABLE, schema=schema, exist_ok=True, mode=self._mode(schema))

    def _mode(self, schema: Any) -> str:
        """ "overwrite" when the stored table holds vectors of another size, else "create"."""
        try:
            stored = self._db.open_table(TABLE).schema.field("vector").type
        except ValueError:  # no table yet
            return "create"
        return "create" if stored == schema.field("vector").type else "overwrite"

    def arrow(self) -> Any:
        """LanceDB's own reader: `to_lance()` would import pylance as well, ~45 MB for good."""
        return self._table.to_arrow().select(["embedding_id", "session_key", "vector"])

    def rows(self) -> tuple[list[str], list[str], np.ndarray]:
        """Every row's embedding id, session key and vector."""
        stored = self.arrow()
        flat = stored.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        vectors = np.asarray(flat, dtype=np.float32).reshape(-1, self.dimensions)
        return stored.column("embedding_id").to_pylist(), stored.column("session_key").to_pylist(), vectors

    def add(self, key: str, ids: list[str], vectors: np.ndarray) -> None:
        import pyarrow as pa  # loaded with the table already

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

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), DELETE_BATCH):
            quoted = ",".join("'" + i.replace("'", "''") + "'" for i in ids[start : start + DELETE_BATCH])
            self._table.delete(f"embedding_id IN ({quoted})")

    def clear(self) -> None:
        self._table.delete("true")

    def optimize(self) -> None:
        self._table.optimize()

    def close(self) -> None:
        """LanceDB holds no connection; the table is read again at the next open."""


class ChildSessionTable(ChildTable):
    """SessionTable's surface over a LanceChild running this module."""

    module = __name__

    def rows(self) -> tuple[list[str], list[str], np.ndarray]:
        header, parts = self._child.call({"op": "rows"})
        ids, keys = decode_strings(parts, 2)
        return ids, keys, np.frombuffer(parts[-1], dtype=np.float32).reshape(int(header["rows"]), self.dimensions)

    def add(self, key: str, ids: list[str], vectors: np.ndarray) -> None:
        self._child.call(
            {"op": "add", "key": key, "ids": ids}, np.ascontiguousarray(vectors, dtype=np.float32).tobytes()
        )

    def delete(self, ids: list[str]) -> None:
        self._child.call({"op": "delete", "ids": ids})

    def clear(self) -> None:
        self._child.call({"op": "clear"})


def _handle(table: SessionTable, header: dict[str, Any], parts: list[bytearray]) -> tuple[dict[str, Any], list[bytes]]:
    op = header["op"]
    if op == "rows":
        stored = table.arrow()
        return {"ok": True, "rows": stored.num_rows}, [
            *encode_strings(stored, ("embedding_id", "session_key")),
            encode_vectors(stored),
        ]
    if op == "add":
        ids = [str(i) for i in header["ids"]]
        table.add(
            str(header["key"]), ids, np.frombuffer(parts[0], dtype=np.float32).reshape(len(ids), table.dimensions)
        )
    elif op == "delete":
        table.delete([str(i) for i in header["ids"]])
    elif op == "clear":
        table.clear()
    elif op == "optimize":
        table.optimize()
    else:
        raise ValueError(f"unknown op {op!r}")
    return {"ok": True}, []


def main() -> None:
    args = child_arguments("graph.backends.embedded.session_table")
    serve(lambda: SessionTable(args.path, args.dimensions), _handle)


if __name__ == "__main__":
    main()
