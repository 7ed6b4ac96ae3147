"""The embedded backend's stores, opened for one workspace: each implementation is imported when
opened, so the worker child never loads the vector stack."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from graph.backends.backend import Backend

if TYPE_CHECKING:
    from graph.backends.decision_log import DecisionLog
    from graph.backends.lexical import LexicalSearch
    from graph.backends.memory_store import MemoryStoreBackend
    from graph.backends.projection import ProjectionSource
    from graph.backends.sessions import SessionChunkStore, SessionVectorStore
    from graph.backends.throttle import RetrievalThrottle
    from graph.backends.vectors import Embedding, MemoryVectors
    from graph.core.audit import AuditSink


@dataclass(frozen=True)
class EmbeddedBackend(Backend):
    """SQLite, LanceDB (in a child process) and files under `.flowbaby/`; one owning process."""

    def memory_store(self, *, check: bool = False, owner: bool = True) -> MemoryStoreBackend:
        from graph.backends.embedded.memory_store import open_sealed_store

        return open_sealed_store(self.paths, check=check)

    def vectors(self, embedder: Embedding, idle_sec: float | None) -> tuple[MemoryVectors, Path | None]:
        from graph.backends.embedded.vectors import open_vector_index

        return open_vector_index(self.paths.vectors, embedder, idle_sec)

    def lexical(self) -> LexicalSearch:
        """BM25 in memory, rebuilt from every memory at start."""
        from graph.core.lexical import LexicalIndex

        return LexicalIndex()

    def throttle(self, per_minute: int | None) -> RetrievalThrottle:
        from graph.backends.throttle import RetrievalThrottle

        return RetrievalThrottle(per_minute)

    def projection(self) -> ProjectionSource:
        from graph.backends.embedded.projection import FileProjection

        return FileProjection(self.paths.projection)

    def audit(self) -> AuditSink:
        from graph.backends.embedded.audit_log import AuditLog

        return AuditLog(self.paths.audit_log)

    def decision_log(self) -> DecisionLog:
        """The workspace's sealed `.flowbaby/reconcile.jsonl`."""
        from graph.backends.embedded.decision_log import LOG_FILE, FileDecisionLog

        return FileDecisionLog(self.paths.data / LOG_FILE, self.paths.root)

    def session_store(self, folder: Path) -> SessionChunkStore:
        from graph.backends.embedded.session_store import open_sealed_session_store

        return open_sealed_session_store(folder, self.paths.root)

    def session_vectors(self, folder: Path, dimensions: int, idle_sec: float | None = None) -> SessionVectorStore:
        from graph.backends.embedded.session_vectors import SessionVectors

        return SessionVectors(folder / "vectors.lance", dimensions, idle_sec)


BACKEND = EmbeddedBackend
