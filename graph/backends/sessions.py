"""The seam between the session index and its storage: SQLite bookkeeping and LanceDB vectors
under `.flowbaby/sessions/` by default (graph.sessions.store, graph.sessions.vectors); tables
in the namespace's Postgres schema when FLOWBABY_DATABASE_URL is set (graph.backends.team.sessions)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graph.backends.memory_store import database_url, namespace_for
from graph.core.workspace import WorkspacePaths
from graph.sessions.chunking import TurnChunk
from graph.sessions.store import Imported, SessionStore
from graph.sessions.vectors import SessionVectors


class SessionChunkStore(Protocol):
    """Imported sessions, their watermarks, and every chunk's text (see SessionStore)."""

    def imported(self, key: str) -> Imported | None: ...
    def chunk_count(self, key: str) -> int: ...
    def texts(self, key: str, message_ids: Iterable[str]) -> dict[str, str]: ...
    def replace_messages(self, key: str, message_ids: list[str], chunks: list[TurnChunk], full: bool) -> None: ...
    def mark_imported(
        self, key: str, source: str, session_id: str, directory: str, title: str, fingerprint: str,
        watermark: dict[str, Any], imported_at: str,
    ) -> None: ...  # fmt: skip
    def chunk_ids(self, key: str) -> list[str]: ...
    def chunks_by_id(self, ids: list[str]) -> dict[str, dict[str, Any]]: ...
    def turns(self, key: str) -> list[tuple[str, int, str, int]]: ...
    def turn_texts(self, key: str, message_ids: list[str]) -> dict[str, str]: ...
    def close(self) -> None: ...
    def keys_under(self, root: str) -> list[str]: ...
    def record(self, key: str) -> tuple[str, str, str, str] | None: ...
    def keys_for(self, session_id: str) -> list[str]: ...


class SessionVectorStore(Protocol):
    """Chunk vectors per session, searched exactly (see SessionVectors)."""

    dimensions: int

    def keep_variant(self, variant: str) -> None: ...
    def count(self, key: str) -> int: ...
    def total(self) -> int: ...
    def ids(self, key: str) -> set[str]: ...
    def add(self, key: str, ids: list[str], vectors: np.ndarray) -> None: ...
    def remove(self, key: str, ids: set[str]) -> None: ...
    def nearest(self, keys: list[str], vector: np.ndarray, limit: int) -> list[tuple[str, str, float]]: ...
    def clear(self) -> None: ...
    def optimize(self) -> None: ...
    def close(self) -> None: ...


def open_session_store(workspace: Path, folder: Path) -> SessionChunkStore:
    url = database_url()
    if not url:
        return SessionStore(folder / "index.sqlite")
    from graph.backends.team.sessions import PgSessionStore

    return PgSessionStore(url, namespace_for(WorkspacePaths(workspace)))


def open_session_vectors(
    workspace: Path, folder: Path, dimensions: int, idle_sec: float | None = None
) -> SessionVectorStore:
    """`idle_sec`: the embedded backend's LanceDB runs in a child that exits after that long idle
    (None: in this process)."""
    url = database_url()
    if not url:
        return SessionVectors(folder / "vectors.lance", dimensions, idle_sec)
    from graph.backends.team.sessions import PgSessionVectors

    return PgSessionVectors(url, namespace_for(WorkspacePaths(workspace)), dimensions)
