"""Which backend serves a workspace, chosen in one place.

`open_backend` is the only reader of FLOWBABY_DATABASE_URL. The URL comes from the process
environment only, never from a workspace's .env: it carries a password and decides where every
memory goes. Empty: the embedded backend (SQLite, LanceDB and files under `.flowbaby/`); a
postgresql:// URL: the team backend, one schema per namespace (graph.backends.team).

The engine receives a `Backend` and opens every store through it, so the choice is made once;
unit tests build one directly instead of setting environment variables. Implementations are
imported when opened: the worker child never loads the vector stack, and the embedded default
never loads psycopg.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.workspace import DATA_DIR, WorkspacePaths

if TYPE_CHECKING:
    from graph.backends.lexical import LexicalSearch
    from graph.backends.memory_store import Closeable, MemoryStoreBackend
    from graph.backends.projection import ProjectionSource
    from graph.backends.sessions import SessionChunkStore, SessionVectorStore
    from graph.backends.throttle import RetrievalThrottle
    from graph.backends.vectors import Embedding, MemoryVectors
    from graph.core.audit import AuditSink

DATABASE_URL_ENV = "FLOWBABY_DATABASE_URL"
NAMESPACE_ENV = "FLOWBABY_NAMESPACE"
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
RESERVED_NAMESPACES = frozenset({"admin"})
"""Names no namespace may take: schema `flowbaby_admin` holds the server's tokens."""
NAMESPACES_DIR = "namespaces"
"""Under a team server's `.flowbaby/`: one working folder per namespace it serves (logs, worker)."""
REFRESH_POLL_ENV = "FLOWBABY_REFRESH_POLL_SEC"
REFRESH_POLL_SEC = 5.0
"""How often a server on the team backend reads recent chunk arrivals, in case a notification was lost."""


def team_database_url() -> str:
    """The team database's URL, or "" for the embedded backend."""
    url = os.environ.get(DATABASE_URL_ENV, "").strip()
    if url and not url.startswith(("postgresql://", "postgres://")):
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{DATABASE_URL_ENV} must be a postgresql:// URL")
    return url


def namespace_problem(name: str) -> str | None:
    """Why `name` cannot be a namespace, or None."""
    if not _NAMESPACE.match(name):
        return "must be 1-48 characters of a-z, 0-9, _ and -, starting with a letter or digit"
    if name in RESERVED_NAMESPACES:
        return f'"{name}" is reserved'
    return None


def namespace_for(paths: WorkspacePaths) -> str:
    """A team server's namespace folder (`<workspace>/.flowbaby/namespaces/<ns>`) is that namespace,
    whatever the environment says (its graph worker inherits the server's); else FLOWBABY_NAMESPACE,
    else the workspace folder's name made safe (lower case, a-z 0-9 _ -)."""
    if paths.root.parent.name == NAMESPACES_DIR and paths.root.parent.parent.name == DATA_DIR:
        return paths.root.name
    explicit = os.environ.get(NAMESPACE_ENV, "").strip()
    slug = re.sub(r"[^a-z0-9_-]+", "-", paths.root.name.lower()).strip("-_")[:48] or "default"
    problem = namespace_problem(explicit or slug)
    if problem:
        source = NAMESPACE_ENV if explicit else f"The namespace from the folder name (set {NAMESPACE_ENV})"
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{source} {problem}")
    return explicit or slug


@dataclass(frozen=True)
class Backend:
    """One workspace's backend: every durable store the engine uses, opened from here.

    `url` empty: embedded. `namespace_name`: the team namespace, when not the one the workspace
    names (namespace_for). Each method opens a new handle; the caller closes it."""

    paths: WorkspacePaths
    url: str = ""
    namespace_name: str | None = None

    @property
    def team(self) -> bool:
        return bool(self.url)

    @cached_property
    def namespace(self) -> str:
        return self.namespace_name or namespace_for(self.paths)

    def memory_store(self, *, check: bool = False, owner: bool = True) -> MemoryStoreBackend:
        """Memory versions and the operation ledger. `check`: SQLite's integrity check (the owner,
        once per start). `owner`: the serving process, which holds the namespace; the graph worker
        child does not."""
        if not self.team:
            from graph.backends.embedded.memory_store import open_sealed_store

            return open_sealed_store(self.paths, check=check)
        from graph.backends.team.memory_store import PostgresMemoryStore

        return PostgresMemoryStore(self.url, self.namespace, owner=owner)

    def vectors(self, embedder: Embedding, idle_sec: float | None) -> tuple[MemoryVectors, Path | None]:
        """The chunk index, and where an unreadable LanceDB folder was moved (None: nothing moved).
        The LanceDB table is served from a child process that exits after `idle_sec` without a call
        (None: LanceDB in this process, as the unit tier runs it)."""
        if not self.team:
            from graph.backends.embedded.vectors import open_vector_index

            return open_vector_index(self.paths.vectors, embedder, idle_sec)
        from graph.backends.team.vectors import PgVectorIndex

        embedder.dimensions  # noqa: B018 (a model that cannot load is not the index's fault: raise here)
        return PgVectorIndex(self.url, self.namespace, embedder), None

    def lexical(self) -> LexicalSearch:
        """BM25 in memory, rebuilt from every memory at start; Postgres full-text, kept by the database."""
        if not self.team:
            from graph.core.lexical import LexicalIndex

            return LexicalIndex()
        from graph.backends.team.lexical import PgLexicalIndex

        return PgLexicalIndex(self.url, self.namespace)

    def throttle(self, per_minute: int | None) -> RetrievalThrottle:
        """This process's retrieval throttle; on the team backend, one shared by every server on the namespace."""
        if not self.team:
            from graph.backends.throttle import RetrievalThrottle

            return RetrievalThrottle(per_minute)
        from graph.backends.team.throttle import SharedRetrievalThrottle

        return SharedRetrievalThrottle(self.url, self.namespace, per_minute)

    def projection(self) -> ProjectionSource:
        """The graph projection: a file under .flowbaby/, or a row of the namespace's schema."""
        if not self.team:
            from graph.backends.embedded.projection import FileProjection

            return FileProjection(self.paths.projection)
        from graph.backends.team.projection import PostgresProjection

        return PostgresProjection(self.url, self.namespace)

    def audit(self) -> AuditSink:
        """The audit file under .flowbaby/, or the namespace's audit table."""
        if not self.team:
            from graph.backends.embedded.audit_log import AuditLog

            return AuditLog(self.paths.audit_log)
        from graph.backends.team.audit import PostgresAuditLog

        return PostgresAuditLog(self.url, self.namespace)

    def session_store(self, folder: Path) -> SessionChunkStore:
        """The session index's bookkeeping and chunk texts (`folder`: `.flowbaby/sessions/`)."""
        if not self.team:
            from graph.backends.embedded.session_store import open_sealed_session_store

            return open_sealed_session_store(folder, self.paths.root)
        from graph.backends.team.sessions import PgSessionStore

        return PgSessionStore(self.url, self.namespace)

    def session_vectors(self, folder: Path, dimensions: int, idle_sec: float | None = None) -> SessionVectorStore:
        """Session chunk vectors. `idle_sec`: the embedded backend's LanceDB runs in a child that exits
        after that long idle (None: in this process)."""
        if not self.team:
            from graph.backends.embedded.session_vectors import SessionVectors

            return SessionVectors(folder / "vectors.lance", dimensions, idle_sec)
        from graph.backends.team.sessions import PgSessionVectors

        return PgSessionVectors(self.url, self.namespace, dimensions)

    def watch(self, handler: Callable[[str, list[str], dict[str, Any]], None]) -> Closeable | None:
        """On the team backend: listen to the namespace's changes made by other servers
        (graph.backends.team.events), started and listening; None on the embedded backend (one
        process per workspace: nothing to follow)."""
        if not self.team:
            return None
        from graph.backends.team.events import NamespaceListener

        try:
            poll = float(os.environ.get(REFRESH_POLL_ENV) or REFRESH_POLL_SEC)
        except ValueError:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{REFRESH_POLL_ENV} is seconds") from None
        listener = NamespaceListener(self.url, self.namespace, handler, max(0.05, poll))
        listener.start()
        return listener


def open_backend(paths: WorkspacePaths) -> Backend:
    """The workspace's backend, as the process environment chooses it."""
    return Backend(paths, team_database_url())


def adopt_stores(paths: WorkspacePaths) -> tuple[list[str], int | None]:
    """`flowbaby adopt`: seal the workspace's embedded memory store and session index as the user's
    (graph.core.seal); the files sealed, and how many memory versions the store holds (None: no store)."""
    from graph.backends.embedded.memory_store import STORE_PURPOSE, MemoryStore
    from graph.backends.embedded.sealed_db import seal_db
    from graph.backends.embedded.session_store import SESSIONS_PURPOSE

    sealed = []
    for path, purpose in (
        (paths.data / "sessions" / "index.sqlite", SESSIONS_PURPOSE),
        (paths.store_db, STORE_PURPOSE),
    ):
        if path.is_file() and path.stat().st_size > 0:
            seal_db(path, purpose, paths.root)
            sealed.append(str(path))
    if str(paths.store_db) not in sealed:
        return sealed, None
    store = MemoryStore(paths.store_db, readonly=True)
    try:
        return sealed, store.counts()["memories"]
    finally:
        store.close()
