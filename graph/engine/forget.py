"""forgetMemory from every store (INGEST_CONTRACT.md 20.3, 20.4), and another server's forgets applied here."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

from graph.core.audit import forgotten_key
from graph.core.contract import (
    FILTER_CONDITIONS,
    MAX_FORGET_LISTED,
    ErrorCode,
    FlowbabyError,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
)
from graph.core.memories import Memory
from graph.engine.lifecycle import INIT_TIMEOUT_SEC, Lifecycle
from graph.engine.state import log
from graph.search.catalog import Catalog
from graph.search.retrieval import Retriever

FORGET_WAIT_SEC = 45.0
"""How long forgetMemory's reply waits for the graph step (a build in progress ends first)."""

FORGET_QUICK_SEC = 1.0
"""The same with waitForStores false: enough for a running worker's delete, never for a cold start."""


class Forget(Lifecycle):
    """forgetMemory, and the search catalog rebuilt without forgotten versions."""

    async def forget_memory(
        self, request: ForgetMemoryRequest, *, agent_name: str | None = None
    ) -> ForgetMemoryResponse:
        """forgetMemory: one version, a topic with every version, or every topic a filter lists,
        from every store: the store's rows (one transaction with the journal entry), the chunk
        vectors, the lexical index, then the graph (the worker, between builds). The reply waits
        up to FORGET_WAIT_SEC for the graph; with waitForStores false the vector files' step runs in
        the background and the graph gets FORGET_QUICK_SEC (a cold cognee worker's and LanceDB child's
        start were most of a forget's 10-25 s); what is still running is listed in `pending` and the
        journal finishes it, also after a restart. An audit tombstone per topic: its digest only; the
        audit lines that staged the forgotten versions lose their agent name and topic digest. The front
        validated the request's fields (ForgetMemoryRequest); the rules between them are checked here."""
        started = time.perf_counter()
        try:
            if (request.topicId is None) == (request.filter is None):
                raise FlowbabyError(
                    ErrorCode.INVALID_PAYLOAD,
                    'Give exactly one of "topicId" and "filter"',
                    fields=["topicId", "filter"],
                )
            if request.filter is not None and not any(getattr(request.filter, name) for name in FILTER_CONDITIONS):
                message = 'Field "filter" needs at least one condition (forgetting everything is not offered)'
                raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, message, fields=["filter"])
            if request.version is not None and request.topicId is None:
                raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, 'Field "version" needs "topicId"', fields=["version"])
            topics, versions = await asyncio.to_thread(self._forget_targets, request)
            memory_ids = [m.memory_id for m in versions]
        except FlowbabyError as error:
            self._record("forgetMemory", agent_name, None, started, error.code.value)
            raise
        reply: dict[str, Any] = {
            "dryRun": request.dryRun,
            "forgetId": None,
            "topics": len(topics),
            "versions": len(memory_ids),
            "topicIds": topics[:MAX_FORGET_LISTED],
            "pending": [],
        }
        if request.dryRun or not memory_ids:
            return ForgetMemoryResponse.model_validate(reply)
        forget_id = f"fg_{uuid.uuid4().hex[:16]}"
        async with self._forget_lock:
            self._forgotten_ids.update(memory_ids)
            await asyncio.to_thread(self._drop_snapshot)
            # Before the store's transaction: once the memory is gone, nothing could say which lines were its.
            await asyncio.to_thread(self.audit.forget, {forgotten_key(m.topic, m.agent_name) for m in versions})
            await asyncio.to_thread(self.reconciler.log.forget, set(topics), set(memory_ids))
            await asyncio.to_thread(self.store.forget, forget_id, memory_ids)
            self._stored = None
            self._whole_graph = None  # the kept graph snapshot names it: not held until the next request
            for topic in topics:  # the tombstone: who, when, the topic's digest; never its text
                self._record("forgetMemory", agent_name, topic, started, None)
            if request.waitForStores:
                with contextlib.suppress(Exception):  # not loaded: warm-up finishes the journal's vector step
                    await asyncio.wait_for(self.vectors(), INIT_TIMEOUT_SEC)
            if self._vectors is not None:
                async with self._vector_lock:
                    if request.waitForStores:
                        await asyncio.to_thread(self._finish_vector_forgets, self._vectors)
                    await self._rebuild_catalog()  # from the store, whose rows are gone: out of search now
                if not request.waitForStores:  # LanceDB's files: its child may have to start (seconds)
                    task = asyncio.get_running_loop().create_task(self._vector_forgets_later())
                    self._rebuilds.add(task)
                    task.add_done_callback(self._rebuilds.discard)
        if await self.operations.forgotten(forget_id, FORGET_WAIT_SEC if request.waitForStores else FORGET_QUICK_SEC):
            await asyncio.to_thread(self.graph_lane.refresh)
        left = {
            step
            for e in await asyncio.to_thread(self.store.forget_journal)
            if e.forget_id == forget_id
            for step in e.pending
        }
        reply.update(forgetId=forget_id, pending=sorted(left))
        return ForgetMemoryResponse.model_validate(reply)

    def _forget_targets(self, request: ForgetMemoryRequest) -> tuple[list[str], list[Memory]]:
        """(topic ids, versions) the request names; NOT_FOUND for an unknown topic or version."""
        if request.topicId is not None:
            versions = self.store.topic_versions(request.topicId)
            if not versions:
                raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{request.topicId}"')
            if request.version is not None:
                versions = [m for m in versions if m.version == request.version]
                if not versions:
                    raise FlowbabyError(
                        ErrorCode.NOT_FOUND, f'Memory "{request.topicId}" has no version {request.version}'
                    )
            return [request.topicId], versions
        assert request.filter is not None
        topics = self.store.matching_topics(request.filter)
        return topics, [m for topic in topics for m in self.store.topic_versions(topic)]

    async def _vector_forgets_later(self) -> None:
        """The vector step of a forget that did not wait for it (waitForStores false)."""
        try:
            async with self._vector_lock:
                if self._vectors is not None:
                    await asyncio.to_thread(self._finish_vector_forgets, self._vectors)
        except Exception:  # the journal keeps the step: the next start's warm-up finishes it
            log.exception("a forget's vector step failed; the next start finishes it")

    def _forgotten_elsewhere(self, memory_ids: list[str]) -> None:
        """Another server on the namespace forgot these versions: they leave this server's search
        catalog too (its rows are gone from the store, which the catalog is rebuilt from)."""
        self._forgotten_ids.update(memory_ids)
        self._whole_graph = None
        retriever = self._retriever
        if retriever is not None and any(memory_id in retriever.catalog.by_id for memory_id in memory_ids):
            task = asyncio.get_running_loop().create_task(self._rebuild_catalog())
            self._rebuilds.add(task)
            task.add_done_callback(self._rebuilds.discard)

    async def _rebuild_catalog(self) -> None:
        """The search catalog and lexical index again from the store, as if the forgotten memories
        had never been stored (BM25's statistics included). Memories catalogued meanwhile are kept."""
        old = self._retriever
        index = self._vectors
        if old is None or index is None:
            return
        memories = await asyncio.to_thread(lambda: list(self.store.iter_memories()))
        indexed = await asyncio.to_thread(index.indexed_memory_ids)
        # The team backend's lexical index is the database's (the rows went with the memories): kept.
        lexical = old.catalog.lexical if self.store.shared else await asyncio.to_thread(self.backend.lexical)
        catalog = await asyncio.to_thread(Catalog, [m for m in memories if m.memory_id in indexed], lexical)
        for memory_id, memory in list(old.catalog.by_id.items()):
            if memory_id not in catalog.by_id and memory_id not in self._forgotten_ids:
                catalog.add(memory)
        self._retriever = Retriever(
            catalog, self.embedder, self.graph_lane, lambda: index, self.reconciler.log.replaced_by
        )
