"""The seam between the retriever and its lexical lane: the in-memory BM25 index
(graph.search.lexical), rebuilt from every memory at start, by default; Postgres full-text
over the namespace's memories (graph.backends.team.lexical), kept by the database, when
FLOWBABY_DATABASE_URL is set."""

from __future__ import annotations

from typing import Protocol

from graph.backends.memory_store import database_url, namespace_for
from graph.core.workspace import WorkspacePaths
from graph.search.lexical import LexicalIndex


class LexicalSearch(Protocol):
    """What the retriever needs of the lexical lane (see LexicalIndex for the meaning of each)."""

    def add(self, memory_id: str, text: str) -> None: ...
    def knows(self, text: str) -> bool: ...
    def known_share(self, query: str) -> float: ...
    def search(self, query: str, limit: int | None = None) -> dict[str, float]: ...


def open_lexical(paths: WorkspacePaths) -> LexicalSearch:
    url = database_url()
    if not url:
        return LexicalIndex()
    from graph.backends.team.lexical import PgLexicalIndex

    return PgLexicalIndex(url, namespace_for(paths))
