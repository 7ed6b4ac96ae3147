"""The team backend's stores, opened for one namespace of the team database: each implementation
is imported when opened, so the embedded default never loads psycopg."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from graph.backends.backend import REFRESH_POLL_ENV, REFRESH_POLL_SEC, Backend, ServerCaches
from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.environment import Environment

if TYPE_CHECKING:
    from graph.backends.decision_log import DecisionLog
    from graph.backends.lexical import LexicalSearch
    from graph.backends.memory_store import Closeable, MemoryStoreBackend
    from graph.backends.projection import ProjectionSource
    from graph.backends.sessions import SessionChunkStore, SessionVectorStore
    from graph.backends.throttle import RetrievalThrottle
    from graph.backends.vectors import Embedding, MemoryVectors
    from graph.core.api_tokens import TokenStore
    from graph.core.audit import AuditSink


@dataclass(frozen=True)
class TeamBackend(Backend):
    """One schema per namespace in Postgres + pgvector, shared by every server on the namespace."""

    shared: ClassVar[bool] = True

    def memory_store(self, *, check: bool = False, owner: bool = True) -> MemoryStoreBackend:
        from graph.backends.team.memory_store import PostgresMemoryStore

        return PostgresMemoryStore(self.url, self.namespace, owner=owner)

    def vectors(self, embedder: Embedding, idle_sec: float | None) -> tuple[MemoryVectors, Path | None]:
        from graph.backends.team.vectors import PgVectorIndex

        embedder.dimensions  # noqa: B018 (a model that cannot load is not the index's fault: raise here)
        return PgVectorIndex(self.url, self.namespace, embedder), None

    def lexical(self) -> LexicalSearch:
        """Postgres full-text, kept by the database."""
        from graph.backends.team.lexical import PgLexicalIndex

        return PgLexicalIndex(self.url, self.namespace)

    def throttle(self, per_minute: int | None) -> RetrievalThrottle:
        from graph.backends.team.throttle import SharedRetrievalThrottle

        return SharedRetrievalThrottle(self.url, self.namespace, per_minute)

    def projection(self) -> ProjectionSource:
        from graph.backends.team.projection import PostgresProjection

        return PostgresProjection(self.url, self.namespace)

    def audit(self) -> AuditSink:
        from graph.backends.team.audit import PostgresAuditLog

        return PostgresAuditLog(self.url, self.namespace)

    def decision_log(self) -> DecisionLog:
        """The namespace's `reconcile_log` table, shared by its servers."""
        from graph.backends.team.decision_log import PgDecisionLog

        return PgDecisionLog(self.url, self.namespace)

    def session_store(self, folder: Path) -> SessionChunkStore:
        from graph.backends.team.sessions import PgSessionStore

        return PgSessionStore(self.url, self.namespace)

    def session_vectors(self, folder: Path, dimensions: int, idle_sec: float | None = None) -> SessionVectorStore:
        from graph.backends.team.sessions import PgSessionVectors

        return PgSessionVectors(self.url, self.namespace, dimensions)

    def watch(self, handler: Callable[[str, list[str], dict[str, Any]], None]) -> Closeable | None:
        """The namespace's changes made by other servers (graph.backends.team.events)."""
        from graph.backends.team.events import NamespaceListener

        try:
            poll = Environment.read().seconds(REFRESH_POLL_ENV, REFRESH_POLL_SEC)
        except ValueError:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{REFRESH_POLL_ENV} is seconds") from None
        listener = NamespaceListener(self.url, self.namespace, handler, max(0.05, poll))
        listener.start()
        return listener

    def graph_build_lock(self) -> AbstractAsyncContextManager[float] | None:
        """One graph build per namespace across servers (graph.backends.team.build_lock)."""
        from graph.backends.team.build_lock import namespace_build_lock

        return namespace_build_lock(self.url, self.namespace)

    def follow_changes(self, caches: ServerCaches) -> Closeable | None:
        """The namespace's change feed (graph.backends.team.change_feed) on the listener of `watch`."""
        from graph.backends.team.change_feed import RemoteChanges

        changes = RemoteChanges(caches)
        return self.watch(changes.handle)

    @classmethod
    def token_store(cls, url: str) -> TokenStore:
        """Schema flowbaby_admin of the team database, migrated on open (graph.backends.team.admin)."""
        from graph.backends.team.admin import PostgresTokenStore

        return PostgresTokenStore(url)

    def cognee_databases(self) -> tuple[dict[str, str], str | None]:
        """cognee's tables, vectors and graph in the namespace's own cognee schema of the team database."""
        from graph.backends.team.cognee_databases import cognee_schema, create_cognee_schema, postgres_environment

        schema = cognee_schema(self.namespace)
        create_cognee_schema(self.url, schema)
        return postgres_environment(self.url), schema


BACKEND = TeamBackend
