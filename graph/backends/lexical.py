"""What the retriever needs of its lexical lane: the in-memory BM25 index (graph.core.lexical),
rebuilt from every memory at start, by default; Postgres full-text over the namespace's memories
(graph.backends.team.lexical), kept by the database, on the team backend. Opened by
graph.backends.backend.Backend.lexical."""

from __future__ import annotations

from typing import Protocol


class LexicalSearch(Protocol):
    """What the retriever needs of the lexical lane (see LexicalIndex for the meaning of each)."""

    def add(self, memory_id: str, text: str) -> None: ...
    def knows(self, text: str) -> bool: ...
    def known_share(self, query: str) -> float: ...
    def search(self, query: str, limit: int | None = None) -> dict[str, float]: ...
