"""Other servers' changes to a team namespace, applied to this server's in-memory caches.

What a server caches in memory: the catalog (every memory row it searches, with the name links
built from them; the lexical index is in the database) and the chunk count that bounds the vector search. The
vectors themselves are searched in pgvector, so they are shared as soon as they are committed; a
memory enters the catalog (and so the results) once its vectors are. Listens through
graph.backends.backend.Backend.watch; on the embedded store nothing of this runs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from graph.backends.backend import ServerCaches
from graph.core.contract import MemoryStatus
from graph.core.memory_chunks import memory_chunks

log = logging.getLogger("flowbaby.remote_changes")


class RemoteChanges:
    def __init__(self, caches: ServerCaches) -> None:
        """A forgotten memory's rows, vectors and lexical rows are already gone from the namespace:
        only `caches.forget` is left to do."""
        self._caches = caches
        self._tasks: set[asyncio.Task[None]] = set()

    def handle(self, kind: str, ids: list[str], payload: dict[str, Any]) -> None:
        """From the listener's thread: hand the change to the event loop."""
        self._caches.loop.call_soon_threadsafe(self._apply, kind, ids, payload)

    def _apply(self, kind: str, ids: list[str], payload: dict[str, Any]) -> None:
        if kind == "queued":
            self._caches.wake_operations()
        elif kind == "status":
            retriever = self._caches.retriever()
            status = MemoryStatus(payload["status"])
            known = retriever.catalog.by_id if retriever is not None else {}
            for memory_id in ids:
                if memory_id in known and known[memory_id].status is not status and retriever is not None:
                    retriever.catalog.set_status(memory_id, status)
        elif kind == "forgotten":
            self._caches.forget(ids)
        elif kind == "searchable":
            task = self._caches.loop.create_task(self._adopt(ids))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _adopt(self, ids: list[str]) -> None:
        """Catalogue the memories this server does not have yet (warm-up, still running, reads them all)."""
        retriever = self._caches.retriever()
        if retriever is None:
            return
        new = [memory_id for memory_id in dict.fromkeys(ids) if memory_id not in retriever.catalog.by_id]
        if not new:
            return
        try:
            memories = await asyncio.to_thread(self._caches.store.get_memories, new)
        except Exception:  # the next poll reports them again
            log.warning("could not read %d memories another server staged", len(new), exc_info=True)
            return
        fresh = [m for m in memories if m.memory_id not in retriever.catalog.by_id]
        for memory in fresh:
            retriever.catalog.add(memory)
        from graph.backends.team.vectors import PgVectorIndex  # only the team backend gets here

        vectors = self._caches.vectors()
        if isinstance(vectors, PgVectorIndex):
            vectors.note_added(sum(len(memory_chunks(m)) for m in fresh))
        if fresh:
            log.info("catalogued %d memories from other servers", len(fresh))
