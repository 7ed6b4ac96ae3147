"""The seam between the engine and its durable store of memory versions and operations.

The engine (graph.service, graph.build) reaches the store only through `MemoryStoreBackend`.
The embedded default is `graph.core.store.MemoryStore` (SQLite under `.flowbaby/`); setting
FLOWBABY_DATABASE_URL=postgresql://... in the process environment selects the team backend
(`graph.core.pg_store`), one namespace per workspace. The URL is read from the environment
only, never from a workspace's .env: it carries a password and decides where every memory goes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from graph.core.contract import ErrorCode, FlowbabyError, MemoryFilter, MemoryStatus, OperationStatus
from graph.core.memory_query import Page
from graph.core.store import ForgetEntry, Memory, MemoryStore
from graph.core.workspace import DATA_DIR, WorkspacePaths

DATABASE_URL_ENV = "FLOWBABY_DATABASE_URL"
NAMESPACE_ENV = "FLOWBABY_NAMESPACE"
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
RESERVED_NAMESPACES = frozenset({"admin"})
"""Names no namespace may take: schema `flowbaby_admin` holds the server's tokens."""
NAMESPACES_DIR = "namespaces"
"""Under a team server's `.flowbaby/`: one working folder per namespace it serves (logs, worker)."""


class MemoryStoreBackend(Protocol):
    """Memory versions with supersession, and the background operation ledger (see MemoryStore)."""

    shared: bool
    """Other servers may claim this ledger's operations (Postgres): poll for them, and hold leases."""

    def close(self) -> None: ...
    def stage(self, memory: Memory, operation_id: str, *, capacity: int | None = None) -> Memory: ...
    def get_memories(self, memory_ids: list[str]) -> list[Memory]: ...
    def topic_versions(self, topic_id: str) -> list[Memory]: ...
    def iter_memories(self) -> Iterator[Memory]: ...
    def list_page(self, query: MemoryFilter, page: Page) -> list[Memory]: ...
    def matching_topics(self, query: MemoryFilter) -> list[str]: ...
    def forget(self, forget_id: str, memory_ids: list[str], steps: tuple[str, ...] = ...) -> None: ...
    def checkpoint(self) -> None: ...
    def import_memories(self, memories: list[Memory]) -> tuple[list[str], list[str]]: ...
    def supersede_older(self, topic_ids: list[str]) -> None: ...
    def forget_journal(self) -> list[ForgetEntry]: ...
    def forget_step_done(self, forget_id: str, step: str) -> None: ...
    def memory_states(self) -> dict[str, tuple[str, str]]: ...
    def set_graph_state(self, memory_ids: list[str], state: str) -> None: ...
    def set_status(self, memory_id: str, status: MemoryStatus) -> None: ...
    def counts(self) -> dict[str, int]: ...
    def operations(self, states: tuple[str, ...] | None = None) -> list[OperationStatus]: ...
    def operation(self, operation_id: str) -> OperationStatus | None: ...
    def count_operations(self, states: tuple[str, ...] = ("pending", "running")) -> int: ...
    def llm_usage(self) -> dict[str, Any]: ...
    def mark_running(self, operation_ids: list[str]) -> None: ...
    def claim(self, limit: int, lease_sec: float) -> list[OperationStatus]: ...
    def renew(self, operation_ids: list[str], lease_sec: float) -> list[str]: ...
    def requeue(self, operation_ids: list[str], *, refund_attempt: bool = False) -> None: ...
    def finish(
        self,
        operation_ids: list[str],
        state: str,
        *,
        error_code: str | None = None,
        error: str | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> None: ...
    def memories_without_graph(self) -> list[str]: ...
    def queue_operation(self, memory_ids: list[str]) -> str: ...
    def queue_operations(self, groups: list[list[str]]) -> list[str]: ...
    def recover_interrupted(self) -> list[str]: ...
    def prune_operations(self, keep: int = ...) -> int: ...


def database_url() -> str:
    """The team database's URL, or "" for the embedded store."""
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


def open_memory_store(paths: WorkspacePaths, *, check: bool = False, owner: bool = True) -> MemoryStoreBackend:
    """The workspace's store. `check`: SQLite's integrity check (the owner, once per start).
    `owner`: the serving process, which holds the namespace; the graph worker child does not."""
    url = database_url()
    if not url:
        return MemoryStore(paths.store_db, check=check)
    from graph.core.pg_store import PostgresMemoryStore

    return PostgresMemoryStore(url, namespace_for(paths), owner=owner)


REFRESH_POLL_ENV = "FLOWBABY_REFRESH_POLL_SEC"
REFRESH_POLL_SEC = 5.0
"""How often a server on the team backend reads recent chunk arrivals, in case a notification was lost."""


def watch_namespace(
    paths: WorkspacePaths, handler: Callable[[str, list[str], dict[str, Any]], None]
) -> Closeable | None:
    """On the team backend: listen to the namespace's changes made by other servers (graph.core.pg_events),
    started and listening; None on the embedded store (one process per workspace: nothing to follow)."""
    url = database_url()
    if not url:
        return None
    from graph.core.pg_events import NamespaceListener

    try:
        poll = float(os.environ.get(REFRESH_POLL_ENV) or REFRESH_POLL_SEC)
    except ValueError:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{REFRESH_POLL_ENV} is seconds") from None
    listener = NamespaceListener(url, namespace_for(paths), handler, max(0.05, poll))
    listener.start()
    return listener


class Closeable(Protocol):
    def close(self) -> None: ...
