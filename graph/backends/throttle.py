"""The seam between the engine and retrieval throttling: one process's limits by default
(graph.search.throttle), the namespace's across servers when FLOWBABY_DATABASE_URL is set
(graph.backends.team.throttle)."""

from __future__ import annotations

from graph.backends.memory_store import database_url, namespace_for
from graph.core.workspace import WorkspacePaths
from graph.search.throttle import RetrievalThrottle


def open_retrieval_throttle(paths: WorkspacePaths, per_minute: int | None) -> RetrievalThrottle:
    """This process's throttle; on the team backend, one shared by every server on the namespace."""
    url = database_url()
    if not url:
        return RetrievalThrottle(per_minute)
    from graph.backends.team.throttle import SharedRetrievalThrottle

    return SharedRetrievalThrottle(url, namespace_for(paths), per_minute)
