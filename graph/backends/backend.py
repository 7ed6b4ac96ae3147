"""Which backend serves a workspace, chosen in one place.

`open_backend` is the only reader of FLOWBABY_DATABASE_URL. The URL comes from the process
environment only, never from a workspace's .env: it carries a password and decides where every
memory goes. Its scheme names the backend: each is a package of graph.backends whose `__init__`
lists the schemes it serves (`SCHEMES`) and whose `backend` module exports `BACKEND`. Empty: the
embedded backend (SQLite, LanceDB and files under `.flowbaby/`); a postgresql:// URL: the team
backend, one schema per namespace (graph.backends.team).

The engine receives a `Backend` and opens every store through it, so the choice is made once;
unit tests build one directly instead of setting environment variables. Implementations are
imported when opened: the worker child never loads the vector stack, and the embedded default
never loads psycopg.
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from graph.core.contract import ErrorCode, FlowbabyError, MemoryStatus
from graph.core.environment import Environment
from graph.core.memories import Memory
from graph.core.namespaces import namespace_problem
from graph.core.workspace import DATA_DIR, WorkspacePaths

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

DATABASE_URL_ENV = "FLOWBABY_DATABASE_URL"
NAMESPACE_ENV = "FLOWBABY_NAMESPACE"
NAMESPACES_DIR = "namespaces"
"""Under a team server's `.flowbaby/`: one working folder per namespace it serves (logs, worker)."""
REFRESH_POLL_ENV = "FLOWBABY_REFRESH_POLL_SEC"
REFRESH_POLL_SEC = 5.0
"""How often a server on the team backend reads recent chunk arrivals, in case a notification was lost."""


def team_database_url() -> str:
    """The team database's URL, or "" for the embedded backend."""
    url = Environment.read().get(DATABASE_URL_ENV).strip()
    backend_class(url)  # a scheme no backend serves is refused here, before anything opens
    return url


def namespace_for(paths: WorkspacePaths) -> str:
    """A team server's namespace folder (`<workspace>/.flowbaby/namespaces/<ns>`) is that namespace,
    whatever the environment says (its graph worker inherits the server's); else FLOWBABY_NAMESPACE,
    else the workspace folder's name made safe (lower case, a-z 0-9 _ -)."""
    if paths.root.parent.name == NAMESPACES_DIR and paths.root.parent.parent.name == DATA_DIR:
        return paths.root.name
    explicit = Environment.read().get(NAMESPACE_ENV).strip()
    slug = re.sub(r"[^a-z0-9_-]+", "-", paths.root.name.lower()).strip("-_")[:48] or "default"
    problem = namespace_problem(explicit or slug)
    if problem:
        source = NAMESPACE_ENV if explicit else f"The namespace from the folder name (set {NAMESPACE_ENV})"
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{source} {problem}")
    return explicit or slug


class Catalog(Protocol):
    """What a backend's change feed keeps in step of the retriever's catalog (graph.search.catalog.Catalog)."""

    by_id: dict[str, Memory]

    def add(self, memory: Memory) -> None: ...
    def set_status(self, memory_id: str, status: MemoryStatus) -> None: ...


class Searching(Protocol):
    """The retriever (graph.search.retrieval.Retriever), as far as a change feed reaches into it."""

    @property
    def catalog(self) -> Catalog: ...


@dataclass(frozen=True)
class ServerCaches:
    """What this server keeps in memory that another server's changes to a shared namespace must reach:
    one value because the engine hands it through `Backend.follow_changes` to the team change feed,
    which alone opens it. `retriever` and `vectors` are read at each change (they are built later)."""

    loop: asyncio.AbstractEventLoop
    store: MemoryStoreBackend
    retriever: Callable[[], Searching | None]
    vectors: Callable[[], MemoryVectors | None]
    wake_operations: Callable[[], None]
    """Work was queued elsewhere: look at the ledger now."""
    forget: Callable[[list[str]], None]
    """Drop memories another server forgot from this server's caches."""


@dataclass(frozen=True)
class Backend(ABC):
    """One workspace's backend: every durable store the engine uses, opened from here.

    Each backend is a package of graph.backends whose `__init__` names the URL schemes it serves
    (`SCHEMES`; "" is the default, chosen when no URL is set) and whose `backend` module's `BACKEND`
    is its subclass of this; `open_backend` finds it by that convention, so a new backend is a new
    package and no existing file changes. `url`: the backend's URL ("" for the default).
    `namespace_name`: the namespace, when not the one the workspace names (namespace_for). Each
    method opens a new handle; the caller closes it."""

    paths: WorkspacePaths
    url: str = ""
    namespace_name: str | None = None

    shared: ClassVar[bool] = False
    """Many servers share its data (the team database): its graph data is never assumed empty, and
    `watch` follows the other servers' changes."""

    @cached_property
    def namespace(self) -> str:
        return self.namespace_name or namespace_for(self.paths)

    @abstractmethod
    def memory_store(self, *, check: bool = False, owner: bool = True) -> MemoryStoreBackend:
        """Memory versions and the operation ledger. `check`: an integrity check (the owner, once per
        start). `owner`: the serving process, which holds the namespace; the graph worker child does not."""

    @abstractmethod
    def vectors(self, embedder: Embedding, idle_sec: float | None) -> tuple[MemoryVectors, Path | None]:
        """The chunk index, and where an unreadable index was moved (None: nothing moved). `idle_sec`:
        a child process serving the index exits after that long without a call (None: in this process)."""

    @abstractmethod
    def lexical(self) -> LexicalSearch:
        """The memories' lexical index."""

    @abstractmethod
    def throttle(self, per_minute: int | None) -> RetrievalThrottle:
        """The retrieval throttle (this process's, or one shared by every server on the namespace)."""

    @abstractmethod
    def projection(self) -> ProjectionSource:
        """The graph projection."""

    @abstractmethod
    def audit(self) -> AuditSink:
        """Where audit entries go."""

    @abstractmethod
    def decision_log(self) -> DecisionLog:
        """The reconcile decisions and their undos (graph.backends.decision_log), kept beside the memories
        they change, so whoever reads the memories reads and undoes the same decisions."""

    @abstractmethod
    def session_store(self, folder: Path) -> SessionChunkStore:
        """The session index's bookkeeping and chunk texts (`folder`: `.flowbaby/sessions/`)."""

    @abstractmethod
    def session_vectors(self, folder: Path, dimensions: int, idle_sec: float | None = None) -> SessionVectorStore:
        """Session chunk vectors (`idle_sec` as for `vectors`)."""

    def watch(self, handler: Callable[[str, list[str], dict[str, Any]], None]) -> Closeable | None:
        """Where the backend is `shared`: listen to the namespace's changes made by other servers,
        started and listening; None where one process owns the data (nothing to follow)."""
        return None

    def follow_changes(self, caches: ServerCaches) -> Closeable | None:
        """Where the backend is `shared`: apply the other servers' changes to this server's caches
        (the retriever's catalog, the vector count, the operation queue), listening from now on;
        None where one process owns the data."""
        return None

    @classmethod
    def token_store(cls, url: str) -> TokenStore:
        """The per-user API tokens of the database at `url` (`flowbaby tokens`, a team server's auth)."""
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"per-user tokens live in a shared database ({DATABASE_URL_ENV})")

    def graph_build_lock(self) -> AbstractAsyncContextManager[float] | None:
        """Where many servers build one namespace's graph: a lock held around each build (it yields
        the seconds waited), so one build runs at a time; None where one process owns the data."""
        return None

    def cognee_databases(self) -> tuple[dict[str, str], str | None]:
        """What the graph worker's cognee needs to keep its data here: its environment's database
        settings and the schema to pin its connections to; ({}, None): cognee's own files under
        `.flowbaby/`. Called in the worker child only."""
        return {}, None


def _backend_packages() -> dict[str, str]:
    """URL scheme -> the package of graph.backends that serves it, read from each package's
    `SCHEMES` (its `__init__` holds no more, so this loads no driver)."""
    import graph.backends

    found: dict[str, str] = {}
    for module in pkgutil.iter_modules(graph.backends.__path__, "graph.backends."):
        if module.ispkg:
            for scheme in getattr(importlib.import_module(module.name), "SCHEMES", ()):
                found[scheme] = module.name
    return found


def backend_class(url: str) -> type[Backend]:
    """The backend that serves `url`'s scheme ("": the default); a FlowbabyError for any other."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if url and not scheme:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{DATABASE_URL_ENV} must be a URL (scheme://...)")
    packages = _backend_packages()
    if scheme not in packages:
        known = ", ".join(f"{name}://" for name in sorted(packages) if name)
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{DATABASE_URL_ENV} must be a {known} URL")
    backend: type[Backend] = importlib.import_module(packages[scheme] + ".backend").BACKEND
    return backend


def backend_for(paths: WorkspacePaths, url: str = "", namespace_name: str | None = None) -> Backend:
    """The workspace's backend for `url` ("": the default)."""
    return backend_class(url)(paths, url, namespace_name)


def open_backend(paths: WorkspacePaths) -> Backend:
    """The workspace's backend, as the process environment chooses it."""
    return backend_for(paths, team_database_url())


def adopt_stores(paths: WorkspacePaths) -> tuple[list[str], int | None]:
    """`flowbaby adopt`: seal the workspace's embedded memory store and session index as the user's
    (graph.core.seal), and its reconcile decision log's lines sealed for the folder it was moved from;
    the files sealed, and how many memory versions the store holds (None: no store)."""
    from graph.backends.embedded.decision_log import LOG_FILE, FileDecisionLog
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
    if FileDecisionLog(paths.data / LOG_FILE, paths.root).adopt():
        sealed.append(str(paths.data / LOG_FILE))
    if str(paths.store_db) not in sealed:
        return sealed, None
    store = MemoryStore(paths.store_db, readonly=True)
    try:
        return sealed, store.counts()["memories"]
    finally:
        store.close()
