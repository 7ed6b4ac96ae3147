"""What the engine needs of the memory chunk vectors: LanceDB under `.flowbaby/` by default
(graph.backends.embedded.vectors), pgvector in the namespace's schema on the team backend
(graph.backends.team.vectors); opened by graph.backends.backend.Backend.vectors."""

from __future__ import annotations

from typing import Protocol

from graph.core.memories import Memory
from graph.core.memory_chunks import Chunk


class Embedding(Protocol):
    """What a chunk index needs of the embedder (graph.search.embedder.Embedder): the vector size,
    read when the index opens (a model that cannot load fails there), and normalised vectors."""

    @property
    def dimensions(self) -> int: ...
    def encode(self, texts: list[str]) -> list[list[float]]: ...


class MemoryVectors(Protocol):
    """What the service needs of a chunk index (graph.backends.embedded.vectors.VectorIndex)."""

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
        """Out of search and out of durable storage (graph.backends.embedded.vectors.VectorIndex.forget)."""
        ...

    def close(self) -> None: ...
