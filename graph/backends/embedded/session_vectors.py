"""Session chunk vectors: durable in LanceDB (`.flowbaby/sessions/vectors.lance`, through
graph.backends.embedded.session_table), searched as one in-memory float32 matrix per session (exact cosine;
under a millisecond at thousands of chunks).

The product is numpy's own loop (einsum), not BLAS: OpenBLAS splits a matrix-vector product of
this size over its threads, and on a busy machine waiting for them took the p95 of a product
that needs 0.2 ms to 40-80 ms (measured at load 11 on 2 cores; einsum's p95 was 12 ms)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from graph.backends.embedded.session_table import ChildSessionTable, SessionTable
from graph.core.files import write_atomic


class SessionRows(Protocol):
    """Where the vectors are durable (graph.backends.embedded.session_table): LanceDB in this process or in a child."""

    def rows(self) -> tuple[list[str], list[str], np.ndarray]: ...
    def add(self, key: str, ids: list[str], vectors: np.ndarray) -> None: ...
    def delete(self, ids: list[str]) -> None: ...
    def clear(self) -> None: ...
    def optimize(self) -> None: ...
    def close(self) -> None: ...


class SessionVectors:
    def __init__(self, path: Path, dimensions: int, idle_sec: float | None = None) -> None:
        """`dimensions` is the encoder's vector size (a table of another size is made again, empty).
        `idle_sec`: LanceDB runs in a child process that exits after that long without a call
        (graph.backends.embedded.session_table); None: in this process."""
        self.dimensions = dimensions
        self._path = path
        self._table: SessionRows = (
            SessionTable(path, dimensions) if idle_sec is None else ChildSessionTable(path, dimensions, idle_sec)
        )
        self._lock = threading.Lock()
        self._sessions: dict[str, tuple[list[str], np.ndarray]] = {}
        self._rows: dict[str, dict[str, int]] = {}
        """Per session, embedding id -> row of its matrix; made at the first lookup, dropped on change."""
        ids, keys, matrix = self._table.rows()
        by_key: dict[str, list[int]] = {}
        for row, key in enumerate(keys):
            by_key.setdefault(key, []).append(row)
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
        write_atomic(marker, variant)

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
        with self._lock:
            self._table.add(key, ids, vectors)
            old_ids, old = self._sessions.get(key, ([], np.empty((0, self.dimensions), np.float32)))
            self._sessions[key] = (old_ids + ids, np.vstack([old, vectors]))
            self._rows.pop(key, None)

    def remove(self, key: str, ids: set[str]) -> None:
        if not ids:
            return
        with self._lock:
            self._table.delete(sorted(ids))
            old_ids, old = self._sessions.get(key, ([], np.empty((0, self.dimensions), np.float32)))
            keep = [i for i, eid in enumerate(old_ids) if eid not in ids]
            self._sessions[key] = ([old_ids[i] for i in keep], old[keep])
            self._rows.pop(key, None)

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

    def similarities(self, wanted: dict[str, list[str]], vector: np.ndarray) -> dict[str, float]:
        """embedding id -> cosine similarity with `vector`, for the given chunks of each session
        (those with a vector): the lexical lane's hits outside the nearest chunks."""
        found: dict[str, float] = {}
        for key, eids in wanted.items():
            with self._lock:
                entry = self._sessions.get(key)
                if not entry or not eids:
                    continue
                rows = self._rows.get(key)
                if rows is None:
                    rows = self._rows[key] = {eid: n for n, eid in enumerate(entry[0])}
            at = [(eid, rows[eid]) for eid in eids if eid in rows]
            if at:
                scores = np.einsum("ij,j->i", entry[1][[n for _, n in at]], vector)
                found.update(zip([eid for eid, _ in at], scores.tolist(), strict=True))
        return found

    def clear(self) -> None:
        """Drop every vector (they came from another encoder variant)."""
        with self._lock:
            self._table.clear()
            self._sessions.clear()
            self._rows.clear()

    def optimize(self) -> None:
        with self._lock:
            self._table.optimize()

    def close(self) -> None:
        """Stop the table's child process, if it has one."""
        self._table.close()
