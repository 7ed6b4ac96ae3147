"""Retrieval: retrieveForAgent / retrieveMemory, raw chunk search, index status and repair."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from typing import Any

from graph.code.branches import checkout
from graph.core.contract import (
    DATABASE_FAULTS,
    ChunkSearchRequest,
    ChunkSearchResponse,
    FlowbabyContextRequest,
    FlowbabyContextResponse,
    FlowbabyError,
    IndexStatusResponse,
    RepairResponse,
    RetrievalEntry,
    RetrievalError,
    RetrievalErrorCode,
    RetrievalReply,
    RetrieveMemoryResponse,
)
from graph.engine.lifecycle import INIT_TIMEOUT_SEC, Lifecycle
from graph.engine.state import WARM_RETRY_FIRST_SEC, log
from graph.search.markdown import render_markdown
from graph.search.retrieval import WEAK_CANDIDATES, Retrieved, Retriever
from graph.sessions.entries import merge

FRESHNESS_WAIT_SEC = 10.0
"""How long a retrieval waits for memories staged just before it to be embedded; past that it
answers from what is indexed and says how many memories it could not search yet."""

STORED_COUNT_SEC = 1.0
"""A retrieval's count of stored memories (for its note on memories not searchable yet) is read again
after this long, and at once after this process stages, imports or forgets: counting every row cost
32 ms a retrieval at 1M memories on Postgres (another server's memory shows in the note a second late)."""


class Retrieval(Lifecycle):
    """retrieveForAgent, retrieveMemory, searchChunks, indexStatus, repair."""

    async def _ready_retriever(self) -> Retriever:
        """The retriever once warm-up is done, after a short wait for memories staged just
        before (read-your-writes). Loading the model on a cold start is not the search: it
        gets its own allowance. A longer backlog does not block search (see _unsearched)."""
        fault = self._warm_fault
        if fault is not None:
            raise RetrievalError(RetrievalErrorCode(fault.code.value), fault.message, **fault.details)
        try:
            await asyncio.wait_for(self.vectors(), INIT_TIMEOUT_SEC)
        except TimeoutError:
            raise RetrievalError(
                RetrievalErrorCode.NOT_INITIALIZED, f"The search index is still loading after {INIT_TIMEOUT_SEC:g}s"
            ) from None
        except Exception as exc:
            retry = self._warm_retry_at
            wait = max(1, math.ceil(retry - time.monotonic())) if retry is not None else None
            raise RetrievalError(
                RetrievalErrorCode.NOT_INITIALIZED,
                f"The search index could not be loaded: {type(exc).__name__}: {exc}"
                + (f". The first retrieval after {wait}s loads it again (or run repair)" if wait else ""),
                **({"retryAfterSec": wait} if wait else {}),
            ) from None
        assert self._retriever is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._embed_queue.join(), FRESHNESS_WAIT_SEC)
        return self._retriever

    def _stored_count(self) -> int:
        counted = self._stored
        if counted is not None and time.monotonic() - counted[0] < STORED_COUNT_SEC:
            return counted[1]
        now = time.monotonic()
        stored = self.store.counts()["memories"]
        self._stored = (now, stored)
        return stored

    @staticmethod
    def _unsearched(stored: int, searched: int) -> dict[str, Any] | None:
        """The note a retrieval carries when stored memories were not searchable yet."""
        pending = max(0, stored - searched)
        if not pending:
            return None
        return {
            "complete": False,
            "unsearchedMemories": pending,
            "message": f"Answered from the memories indexed so far; {pending} recently stored memories are still "
            "being embedded and were not searched. Retry shortly to include them",
        }

    async def retrieve(
        self,
        request: FlowbabyContextRequest,
        *,
        markdown: bool = False,
        lanes: frozenset[str] | None = None,
        agent_name: str | None = None,
        origin: str | None = None,
    ) -> RetrievalReply:
        """retrieveForAgent (JSON entries) or retrieveMemory (entries plus markdown; its request a
        RetrieveMemoryRequest, as its fronts parse it). `lanes` narrows the workspace's lanes, for
        ablations; `agent_name` is the caller a front knows (the MCP client), for the audit log."""
        lanes = self.settings.retrieval_lanes if lanes is None else lanes
        started = time.perf_counter()
        command, query = "retrieveMemory" if markdown else "retrieveForAgent", request.query
        try:
            async with self.throttle.admit():
                retriever = await self._ready_retriever()
                folder = self._origin(origin)
                checker = self._freshness_for(folder)

                def search() -> tuple[Retrieved, int, bool]:
                    """Everything the answer reads, in one thread hop: the stored count (for the
                    indexing note), the reader's checkout, the ranking (with the references'
                    freshness), and whether the projection needs a rebuild."""
                    stored = self._stored_count()
                    found = retriever.retrieve(request, lanes, checkout(folder), checker)
                    return found, stored, self._check_projection()

                try:
                    (entries, used, abstained, weak), stored, rebuild = await asyncio.wait_for(
                        asyncio.to_thread(search), self.settings.retrieval_timeout_sec
                    )
                except TimeoutError:
                    raise RetrievalError(
                        RetrievalErrorCode.BRIDGE_TIMEOUT,
                        f"Search exceeded its {self.settings.retrieval_timeout_sec:g}s deadline",
                    ) from None
                sessions_note: str | None = None
                if request.includeSessions:
                    turns, weak_turns, sessions_note = await self._session_turns(request)
                    if sessions_note is None:
                        entries, used = merge(entries, turns, request.maxResults, request.maxTokens)
                        if abstained and turns:
                            abstained = None  # the sessions have what the memories lack
                        elif abstained:
                            weak = sorted([*weak, *weak_turns], key=lambda e: -e.score)[:WEAK_CANDIDATES]
        except RetrievalError as error:
            self._record(command, agent_name, query, started, error.code.value)
            raise
        except FlowbabyError as error:  # the team database's faults, in the retrieval shape
            if error.code not in DATABASE_FAULTS:
                raise
            self._record(command, agent_name, query, started, error.code.value)
            raise RetrievalError(RetrievalErrorCode(error.code.value), error.message, **error.details) from None
        self._record(command, agent_name, query, started, None)
        note = self._unsearched(stored, len(retriever.catalog))
        if rebuild:
            self.operations.notify()
        answer = FlowbabyContextResponse(
            entries=entries,
            totalResults=len(entries),
            tokensUsed=used,
            abstained=abstained is not None,
            abstainReason=abstained,
            weakCandidates=weak if abstained else [],
            indexing=note,
            sessionsNotSearched=sessions_note,
        )
        if not markdown:
            return answer
        text = render_markdown(entries, abstained)
        if note:
            text = f"> {note['message']}\n\n{text}"
        if sessions_note:
            text = f"> {sessions_note}\n\n{text}"
        return RetrieveMemoryResponse(**dict(answer), markdown=text)

    async def _session_turns(
        self, request: FlowbabyContextRequest
    ) -> tuple[list[RetrievalEntry], list[RetrievalEntry], str | None]:
        """The session turns for a retrieval with includeSessions, or the note saying why none were
        searched: the memories' answer stands when the session index is slow or refused (section 9.1)."""
        try:
            turns, weak_turns, _ = await asyncio.wait_for(
                self.session_memory.turns(request.query, request.maxResults, request.abstain, request.maxTokens),
                self.settings.retrieval_timeout_sec,
            )
        except TimeoutError:
            return (
                [],
                [],
                (
                    f"Sessions were not searched: their index did not answer within "
                    f"{self.settings.retrieval_timeout_sec:g}s (it may still be loading); retry shortly."
                ),
            )
        except FlowbabyError as error:  # a refused or unreadable session index
            if error.code in DATABASE_FAULTS:
                raise
            return [], [], f"Sessions were not searched: {error.message}"
        return turns, weak_turns, None

    async def search_chunks(self, request: ChunkSearchRequest) -> ChunkSearchResponse:
        """Raw nearest chunks with cosine distance (lower is better), throttled like retrieval."""
        async with self.throttle.admit():
            await self._ready_retriever()
            index = await self.vectors()
            vector = (await asyncio.to_thread(self.embedder.encode, [request.q]))[0]
            hits = await asyncio.to_thread(index.nearest_chunks, vector, request.limit)
        results = [
            {
                "embedding_id": f"{chunk.memory_id}:{chunk.chunk_index}",
                "distance": round(1.0 - similarity, 6),
                "chunk_text": chunk.text,
                "topicId": chunk.topic_id,
                "chunk_index": chunk.chunk_index,
                "field": chunk.field,
            }
            for chunk, similarity in hits
        ]
        return ChunkSearchResponse.model_validate({"results": results, "count": len(results)})

    async def index_status(self, *, audited: bool = False, agent_name: str | None = None) -> IndexStatusResponse:
        """Vapor-style index health: what is searchable now, and what needs an update or a repair.
        `audited` as in background_status."""
        started = time.perf_counter()
        reply = await asyncio.to_thread(self._index_status)
        if audited:
            self._record("indexStatus", agent_name, None, started, None)
        return reply

    def _index_status(self) -> IndexStatusResponse:
        counts = self.store.counts()
        memories = counts["memories"]
        graph_indexed = counts.get("graph_indexed", 0)
        active = self.store.count_operations()
        failed_ops = self.store.count_operations(("failed",))
        without_graph = len(self.store.memories_without_graph())
        warm = self._warm_task is not None and self._warm_task.done()
        broken = warm and self._warm_task.exception() is not None  # type: ignore[union-attr]
        vectors = len(self._retriever.catalog) if self._retriever is not None else 0
        queued_vectors = self._embed_queue.qsize()
        if not memories:
            status, message = (
                "missing",
                "Nothing stored yet: store the first memory with storeMemory (MCP, LM tools), ingestForAgent "
                "(bridge) or POST /api/agent/ingest; it is searchable at once",
            )
        elif broken or (warm and not vectors):
            status, message = (
                "missing",
                "The search index is missing or could not be loaded; run repair or check the logs",
            )
        elif without_graph or (warm and vectors + queued_vectors < memories):
            status, message = "repair_needed", f"{without_graph} memories have no graph; run repair to rebuild them"
        elif active and self.settings.build_graph:
            status, message = "indexing", f"Building the graph for {active} operations; search works meanwhile"
        elif queued_vectors or not warm:
            status, message = "dirty", "Recent memories are still being embedded; search waits for them"
        elif not self.settings.build_graph and graph_indexed < memories:
            status, message = (
                "partial",
                f"Graph building is off (FLOWBABY_BUILD_GRAPH=0): {memories - graph_indexed} memories are searchable "
                f"without their graph; {active} graph operations wait until it is on",
            )
        elif graph_indexed < memories:
            status, message = "partial", f"{memories - graph_indexed} memories are searchable without their graph"
        else:
            status, message = "ready", "Every memory is searchable with its graph"
        return IndexStatusResponse.model_validate(
            {
                "status": status,
                "can_search": not broken,
                "needs_update": status in {"dirty", "indexing"},
                "needs_repair": bool(memories) and status in {"repair_needed", "missing"},
                "counts": {
                    "memories": memories,
                    "vectors": vectors,
                    "graphIndexed": graph_indexed,
                    "pendingOperations": active,
                    "failedOperations": failed_ops,
                    "withoutGraph": without_graph,
                    "impliedSupersessions": len(self._retriever.supersession_pairs()) if self._retriever else 0,
                },
                "coverage": {
                    "vectors": round(vectors / memories, 4) if memories else 1.0,
                    "graph": round(graph_indexed / memories, 4) if memories else 1.0,
                },
                "model": {
                    "embedding": os.path.basename(self.settings.embedding_model.rstrip("/")),
                    "dimensions": self._vectors.dimensions if self._vectors is not None else 0,
                    "llm": "offline-extractor" if self.settings.llm.offline else self.settings.llm.provider,
                },
                "message": message,
                "graphBuilding": self.settings.build_graph,
            }
        )

    async def repair(self) -> RepairResponse:
        """Re-queue graph building for memories whose graph failed or is missing, embed
        memories that have no vectors, and, if the indexes could not be loaded (or writing
        vectors failed), load them again: an unreadable vector folder is moved aside and
        rebuilt, an unreadable projection rebuilt. Safe to call at any time; it never
        duplicates work."""
        memory_ids = await asyncio.to_thread(self.store.memories_without_graph)
        operation_id = await asyncio.to_thread(self.store.queue_operation, memory_ids) if memory_ids else None
        if operation_id:
            self.operations.notify()
        warm = self._warm_task
        lost_writes = self._vectors.write_failures if self._vectors is not None else 0
        if warm is not None and warm.done() and (warm.exception() is not None or self._embed_failures or lost_writes):
            log.warning("repair: loading the search indexes again")
            self._embed_failures = 0
            self._warm_retry_wait = WARM_RETRY_FIRST_SEC
            self._warm_task = asyncio.create_task(self._warm_up_through_outages(), name="flowbaby-warm")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._warm_task), INIT_TIMEOUT_SEC)
        await asyncio.to_thread(self.graph_lane.refresh)
        if await asyncio.to_thread(self._check_projection):
            self.operations.notify()
        reembedded = 0
        if self._retriever is not None:
            catalog = self._retriever.catalog
            stored = await asyncio.to_thread(lambda: list(self.store.iter_memories()))
            missing = [m for m in stored if m.memory_id not in catalog.by_id]
            for memory in missing:
                self._embed_queue.put_nowait(memory)
            reembedded = len(missing)
        return RepairResponse.model_validate(
            {
                "operationId": operation_id,
                "requeuedMemories": len(memory_ids),
                "reembeddedMemories": reembedded,
                "index": await asyncio.to_thread(self._index_status),
            }
        )
