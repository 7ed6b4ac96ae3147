"""The seam between the engine and the memory chunk vectors: LanceDB under `.flowbaby/` by
default (graph.search.vectors), pgvector in the namespace's schema when FLOWBABY_DATABASE_URL
is set (graph.search.pg_vectors)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from graph.core.storage import database_url, namespace_for
from graph.core.store import Memory
from graph.core.workspace import WorkspacePaths
from graph.search.embedder import Embedder
from graph.search.vectors import Chunk, open_vector_index


class MemoryVectors(Protocol):
    """What the service needs of a chunk index (graph.search.vectors.VectorIndex)."""

    @property
    def dimensions(self) -> int: ...
    @property
    def write_failures(self) -> int:
        """Appends that did not reach durable storage (the memories are searchable until the
        process ends; `repair` or the next start embeds them again)."""
        ...

    def add_memories(self, memories: list[Memory]) -> int: ...
    def search(self, vector: list[float], limit: int) -> list[tuple[str, float]]: ...
    def nearest_chunks(self, vector: list[float], limit: int) -> list[tuple[Chunk, float]]: ...
    def indexed_memory_ids(self) -> set[str]: ...
    def count(self) -> int: ...
    def optimize(self) -> None: ...
    def forget(self, memory_ids: list[str]) -> None:
        """Out of search and out of durable storage (graph.search.vectors.VectorIndex.forget)."""
        ...

    def close(self) -> None: ...


def open_memory_vectors(
    paths: WorkspacePaths, embedder: Embedder, idle_sec: float | None
) -> tuple[MemoryVectors, Path | None]:
    """The index, and where an unreadable LanceDB folder was moved (None: nothing moved). The
    LanceDB table is served from a child process that exits after `idle_sec` without a call
    (None: LanceDB in this process, as the unit tier runs it)."""
    url = database_url()
    if not url:
        return open_vector_index(paths.vectors, embedder, idle_sec)
    from graph.search.pg_vectors import PgVectorIndex

    embedder.dimensions  # noqa: B018 (a model that cannot load is not the index's fault: raise here)
    return PgVectorIndex(url, namespace_for(paths), embedder), None
