"""Staging a memory: ingestForAgent, storeMemory (validate, redact, commit with its operation) and backgroundStatus."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from pathlib import Path
from typing import Any

from graph.code.branches import checkout
from graph.core.contract import (
    AGENT,
    CAPTURE,
    PERSON,
    BackgroundOperations,
    BackgroundStatusRequest,
    BackgroundStatusResponse,
    ErrorCode,
    FlowbabyError,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    MemoryStatus,
    OperationReply,
    RefusedRequest,
    ResponseMetadata,
    StoreMemoryResponse,
    Succeeded,
    SummaryFields,
    UnknownOperation,
    Writer,
    utc_now,
)
from graph.core.memories import BacklogFull, Memory, new_operation_id
from graph.core.memory_chunks import memory_chunks
from graph.core.provenance import check_status, check_topic, proposal_note
from graph.engine.state import EngineState, log
from graph.search.reconcile import Decision
from graph.search.reconciler import RECONCILE_WAIT_SEC


class Ingest(EngineState):
    """ingestForAgent, storeMemory, backgroundStatus."""

    def _proposes(self, writer: Writer) -> bool:
        """Whether this store keeps the writer's memories as proposals (the user store: an agent's)."""
        return False

    async def _stage(
        self,
        fields: SummaryFields,
        meta: dict[str, Any],
        *,
        bulk: bool = False,
        origin: str | None = None,
        written: tuple[Writer, str | None] = (AGENT, None),
    ) -> tuple[Memory, float]:
        """Commit in a thread (an fsync must not stall the event loop, nor stdio under
        `bridge --http`), then queue the memory's vectors and wake the operation manager.
        `origin`: the folder of the front that sent it (its git checkout is recorded); `written`: who wrote
        it and the project it came from (graph.core.provenance)."""
        memory, store_sec = await asyncio.to_thread(self._commit, fields, meta, bulk, self._origin(origin), written)
        self.reconciler.staged([memory])
        self._embed_queue.put_nowait(memory)
        self.operations.notify()
        return memory, store_sec

    async def _reconciled_stage(
        self,
        fields: FlowbabyIngestRequest,
        sent: dict[str, Any],
        *,
        bulk: bool = False,
        origin: str | None = None,
        capture: bool = False,
        written: tuple[Writer, str | None] = (AGENT, None),
    ) -> tuple[Memory, float, dict[str, Any] | None]:
        """_stage, reconciled first (graph/search/reconciler.py) when the write names no topicId or is
        a capture; the reply's `reconcile` object (None: not reconciled, as a versioned ingest). An agent's
        write to the user store is a proposal: stored Proposed, never reconciled (it changes nothing)."""
        meta = fields.metadata.model_dump(mode="json")
        writer = written[0]
        check_status(writer, meta["status"])
        if self._proposes(writer):
            meta["status"] = MemoryStatus.PROPOSED.value
        stage = functools.partial(self._stage, bulk=bulk, origin=origin, written=written)
        if (fields.named_topic and not capture) or self._proposes(writer):
            memory, store_sec = await stage(fields, meta)
            return memory, store_sec, None
        decision: Decision | None = None
        why = "the search index is loading"
        warming = self._warm_task
        if self._retriever is None and warming is not None and not warming.done():
            with contextlib.suppress(Exception):  # a cold start: wait a little for search, then store anyway
                await asyncio.wait_for(asyncio.shield(warming), RECONCILE_WAIT_SEC)
        retriever, index = self._retriever, self._vectors
        if retriever is None or index is None:
            memory, store_sec = await stage(fields, meta)
            return memory, store_sec, {"decision": "add", "decidedBy": "none", "reason": why}
        decide = functools.partial(
            self.reconciler.decide, fields, meta, retriever, index, capture=capture, writer=writer
        )
        turn = self.reconciler.begin(decide)
        late = handed = False
        try:
            try:  # within its budget, or the write is staged now and the decision applied when it comes
                decision, ahead = await self.reconciler.wait(turn)
                if decision is None:
                    late, over = True, f"{ahead} decisions ahead of it" if ahead else "over its time budget"
                    why = f"decided after the reply ({over}): getMemory shows the decision"
            except Exception as exc:  # reconciling must never cost the write
                log.exception("reconcile failed; the memory is stored as sent")
                why = f"reconcile failed: {type(exc).__name__}"
            memory, store_sec = await stage(fields, self.reconciler.staged_meta(meta, decision))
            if late:
                audit = functools.partial(self._late_audit, sent, memory.topic)
                self.reconciler.apply_later(turn, memory, self.store, retriever.catalog, audit)
                handed = True  # apply_later lets the next decision start
                return memory, store_sec, {"decision": "pending", "decidedBy": "none", "reason": why}
            if decision is None:
                return memory, store_sec, {"decision": "add", "decidedBy": "none", "reason": why}
            reply = await asyncio.to_thread(self.reconciler.apply, decision, memory, self.store, retriever.catalog)
            return memory, store_sec, reply
        finally:
            if not handed:  # applied, failed, or the staging failed: the next write's decision may start
                turn.done()

    def _commit(
        self,
        fields: SummaryFields,
        meta: dict[str, Any],
        bulk: bool = False,
        origin: Path | None = None,
        written: tuple[Writer, str | None] = (AGENT, None),
    ) -> tuple[Memory, float]:
        """Check the LLM key and backlog, then commit the memory and its operation, under one
        lock so that the backlog check and the insert cannot interleave. `bulk` (a user's
        `flowbaby import`) is not held to the backlog: the limit is for agents' bursts. A write that
        is not the person's never makes a new version of a topic the person wrote (checked under the lock)."""
        # Graph building off: nothing drains the queue, so its limit (for bursts of graph work) does not apply.
        bulk = bulk or not self.settings.build_graph
        with self._stage_lock:
            self.settings.llm.require_key()
            if not bulk:
                self.operations.check_backlog()
            if written[0] != PERSON:
                newest = self.store.newest_version(meta["topicId"])
                check_topic(newest, written[0], self._proposes(written[0]))
            return self._insert(fields, meta, bulk, origin, written)

    def _insert(
        self,
        fields: SummaryFields,
        meta: dict[str, Any],
        bulk: bool = False,
        origin: Path | None = None,
        written: tuple[Writer, str | None] = (AGENT, None),
    ) -> tuple[Memory, float]:
        started = time.perf_counter()
        made_on = checkout(origin or self.origin)
        memory = Memory(
            memory_id="",
            topic_id=meta["topicId"],
            version=0,
            status=MemoryStatus(meta["status"]),
            topic=fields.topic,
            context=fields.context,
            decisions=fields.decisions,
            rationale=fields.rationale,
            open_questions=fields.openQuestions,
            next_steps=fields.nextSteps,
            references=fields.references,
            time_scope=fields.timeScope,
            agent_name=fields.agentName,
            session_id=meta.get("sessionId"),
            plan_id=meta.get("planId"),
            created_at=meta["createdAt"],
            updated_at=meta["updatedAt"],
            staged_at=utc_now(),
            char_count=fields.char_count(),
            branch=made_on.branch if made_on else None,
            commit=made_on.commit if made_on else None,
            written_by=written[0],
            written_in=written[1] or str(origin or self.origin),
        )
        try:  # the store checks the backlog again, in the insert's transaction (across servers on Postgres)
            capacity = None if bulk else self.operations.capacity
            memory = self.store.stage(memory, new_operation_id(), capacity=capacity)
            self._stored = None
        except BacklogFull:
            raise self.operations.backlog_error() from None
        except FlowbabyError:  # the team database's DATABASE_UNAVAILABLE / DATABASE_BUSY: nothing was staged
            raise
        except Exception as exc:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"Could not store the memory: {exc}") from exc
        return memory, time.perf_counter() - started

    async def ingest(
        self,
        request: FlowbabyIngestRequest,
        *,
        bulk: bool = False,
        origin: str | None = None,
        capture: bool = False,
        writer: Writer | None = None,
        project: str | None = None,
    ) -> FlowbabyIngestResponse:
        """ingestForAgent: validate, reconcile, stage durably, queue graph building; milliseconds.
        `bulk`: an import's record, not held to the backlog limit (section 6); `origin`: the
        calling front's folder (an owner client's), whose git checkout the memory records;
        `capture`: a session capture's version, reconciled although it names its topicId; `writer`: who
        wrote it, as the front knows it (None: an agent, or a capture's); `project`: the project a
        user-scope write came from."""
        started, sent = time.perf_counter(), _sent(request)
        written = (writer or (CAPTURE if capture else AGENT), project)
        try:
            request, redacted = self.redactor.summary(request)
            memory, store_sec, reconciled = await self._reconciled_stage(
                request, sent, bulk=bulk, origin=origin, capture=capture, written=written
            )
        except FlowbabyError as error:
            self._audited("ingestForAgent", sent, started, error)
            raise
        response = FlowbabyIngestResponse(
            staged=True,
            operationId=memory.operation_id or "",
            ingested_chars=memory.char_count,
            timestamp=memory.staged_at,
            metadata=ResponseMetadata(
                topic_id=memory.topic_id,
                session_id=memory.session_id,
                plan_id=memory.plan_id,
                status=memory.status,
                created_at=memory.created_at,
                updated_at=memory.updated_at,
            ),
            staging_duration_sec=round(time.perf_counter() - started, 6),
            redacted=redacted,
            reconcile=reconciled,
            proposed=proposal_note(memory.topic_id) if memory.status is MemoryStatus.PROPOSED else None,
            ingestion_metrics={
                "memoryId": memory.memory_id,
                "version": memory.version,
                "supersededMemoryId": memory.supersedes,
                "chunks": len(memory_chunks(memory)),
                "storeSec": round(store_sec, 6),
                "vectors": "queued",
                "graph": "pending",
            },
        )
        self._audited("ingestForAgent", sent, started, None, redacted, request.topic, reconciled)
        return response

    async def store_memory(
        self,
        request: FlowbabyIngestRequest,
        *,
        origin: str | None = None,
        writer: Writer | None = None,
        project: str | None = None,
    ) -> StoreMemoryResponse:
        """storeMemory, the LM-tool surface: ingestForAgent's validation and defaults, a shorter reply."""
        started, sent = time.perf_counter(), _sent(request)
        try:
            full, redacted = self.redactor.summary(request)
            written = (writer or AGENT, project)
            memory, _, reconciled = await self._reconciled_stage(full, sent, origin=origin, written=written)
        except FlowbabyError as error:
            self._audited("storeMemory", sent, started, error)
            raise
        self._audited("storeMemory", sent, started, None, redacted, full.topic, reconciled)
        return StoreMemoryResponse(
            summary_id=memory.topic_id,
            operationId=memory.operation_id or "",
            ingested_chars=memory.char_count,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            redacted=redacted,
            reconcile=reconciled,
            proposed=proposal_note(memory.topic_id) if memory.status is MemoryStatus.PROPOSED else None,
        )

    async def audit_refused(self, refusal: RefusedRequest) -> Succeeded:
        """A request a front refused before it reached the engine, audited as an invalid one that did."""
        self._record(refusal.command, refusal.agentName, refusal.topic, time.perf_counter(), refusal.errorCode)
        return Succeeded()

    async def background_status(
        self, request: BackgroundStatusRequest, *, audited: bool = False, agent_name: str | None = None
    ) -> BackgroundStatusResponse:
        """`audited`: record the call in agent_audit.log (MCP tool calls are, a refused one by the MCP front
        through audit_refused; bridge calls are not)."""
        started = time.perf_counter()
        return await asyncio.to_thread(self._background_status, request, audited, agent_name, started)

    def _background_status(
        self, request: BackgroundStatusRequest, audited: bool, agent_name: str | None, started: float
    ) -> BackgroundStatusResponse:
        reply: BackgroundStatusResponse
        if request.operationId:
            status = self.store.operation(request.operationId)
            reply = (
                UnknownOperation(operationId=request.operationId)
                if status is None
                else OperationReply.model_validate(status.model_dump())
            )
        else:
            operations = self.store.operations()
            counts: dict[str, int] = {}
            for op in operations:
                counts[op.status] = counts.get(op.status, 0) + 1
            reply = BackgroundOperations(
                operations=operations,
                counts=counts,
                llmUsage=self.store.llm_usage(),
                graphBuilding=self.settings.build_graph,
            )
        if audited:
            self._record("backgroundStatus", agent_name, None, started, None)
        return reply


def _sent(request: FlowbabyIngestRequest) -> dict[str, Any]:
    """What the audit line reads of the request as sent (before redaction): its topic and agent."""
    return {"topic": request.topic, "agentName": request.agentName}
