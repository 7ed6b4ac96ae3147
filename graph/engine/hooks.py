"""What the client hooks ask for: the session-start briefing, per-prompt recall and session capture."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from dataclasses import replace
from typing import Any

from graph.capture.distil import Distilled, normal
from graph.capture.llm_distil import distil_session
from graph.capture.preference import split_preferences, without_preferences
from graph.capture.session_capture import capture_enabled, plan_capture, read_session, stored_in, topic_id_for
from graph.core.contract import (
    CAPTURE,
    USER,
    BriefingRequest,
    BriefingResponse,
    CaptureRequest,
    CaptureResponse,
    FlowbabyContextRequest,
    FlowbabyError,
    Freshness,
    RecallRequest,
    RecallResponse,
    utc_now,
    validate_retrieval,
)
from graph.core.environment import Environment
from graph.core.memories import Memory
from graph.core.methods import INGEST, STORE, request_of
from graph.engine.ingest import Ingest
from graph.engine.retrieval import Retrieval
from graph.engine.state import log
from graph.search.briefing import build_briefing, compact_recall, current_memories

BRIEFING_FRESHNESS_SEC = 0.5
"""How long a briefing waits for its decisions' reference freshness (the hook waits 1.5 s in all)."""


class Hooks(Retrieval, Ingest):
    """briefing, recall, capture."""

    async def briefing(self, request: BriefingRequest) -> BriefingResponse:
        """The session-start briefing: current decisions, open questions and next steps, other
        agents' new memories; one line per memory, within maxTokens."""
        checker = self._freshness_for(self.origin)

        def freshness(memories: list[Memory]) -> list[Freshness] | None:
            """The references' freshness, or None past BRIEFING_FRESHNESS_SEC (a cold git log of a
            big repository): the briefing goes out unmarked and the check warms the cache."""
            pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="briefing-freshness")
            pending = pool.submit(checker.check_many, [(m.references, m.updated_at, m.commit) for m in memories])
            pool.shutdown(wait=False)
            try:
                return pending.result(timeout=BRIEFING_FRESHNESS_SEC)
            except concurrent.futures.TimeoutError:
                log.info(
                    "briefing: reference freshness took over %.1fs; decisions left unmarked", BRIEFING_FRESHNESS_SEC
                )
                return None

        def build() -> BriefingResponse:
            return BriefingResponse.model_validate(
                build_briefing(
                    self.store.iter_memories(),
                    agent_name=request.agentName,
                    since=request.since,
                    recalls=self._recalls.load(),
                    max_tokens=request.maxTokens,
                    freshness=freshness,
                    pairs=self._retriever.supersession_pairs(refresh=False) if self._retriever else (),
                )
            )

        return await asyncio.to_thread(build)

    async def recall(self, request: RecallRequest) -> RecallResponse:
        """Per-prompt recall: a retrieval that may abstain, as compact lines, none of `exclude`; `items` says
        each line's topicId and scope."""
        asked = {"query": request.query, "maxResults": request.maxResults + min(len(request.exclude), 5)}
        found = await self.retrieve(validate_retrieval(FlowbabyContextRequest, asked), agent_name=request.agentName)
        if found.abstained:
            abstained = {
                "text": "",
                "topicIds": [],
                "tokens": 0,
                "abstained": True,
                "abstainReason": found.abstainReason,
                "userNotSearched": found.userNotSearched,
            }
            return RecallResponse.model_validate(abstained)
        entries = [entry.model_dump(mode="json") for entry in found.entries]
        reply = compact_recall(entries, set(request.exclude), request.maxTokens, request.maxResults)
        await asyncio.to_thread(self._recalls.add, reply["topicIds"])
        done = {"abstained": False, "abstainReason": None, "userNotSearched": found.userNotSearched}
        return RecallResponse.model_validate({**reply, **done})

    async def capture(self, request: CaptureRequest) -> CaptureResponse:
        """Distil an agent session's turns since its last capture into a new version of the
        session's topic (graph/capture); says why when it stores nothing."""
        topic_id = topic_id_for(request.source, request.sessionId)
        if not capture_enabled():
            return CaptureResponse(captured=False, reason="capture is off (FLOWBABY_CAPTURE=0)", topicId=topic_id)
        async with self._capture_lock:
            plan, reason, turns, got, personal = await asyncio.to_thread(self._plan_capture, request, topic_id)
            reply: dict[str, Any] = {"captured": False, "reason": reason, "topicId": topic_id, "turns": turns}
            if personal:
                reply["preferences"] = await self._store_preferences(personal, request.agentName or request.source)
            if got is not None:
                reply["distiller"] = got.distiller
                if got.fallback:
                    reply["llmFallback"] = got.fallback
            if plan is not None:
                staged = await self.ingest(await request_of(self, INGEST, plan), capture=True)
                metrics = staged.ingestion_metrics
                reply |= {
                    "captured": True,
                    "operationId": staged.operationId,
                    "memoryId": metrics["memoryId"],
                    "version": metrics["version"],
                    "decisions": len(plan["decisions"]),
                    "references": len(plan["references"]),
                }
            if turns and reason != "no new turns":
                record = {"turns": turns, "at": utc_now(), "reason": request.reason, "captured": reply["captured"]}
                await asyncio.to_thread(self._captures.save, f"{request.source}:{request.sessionId}", record)
        return CaptureResponse.model_validate(reply)

    def _plan_capture(
        self, request: CaptureRequest, topic_id: str
    ) -> tuple[dict[str, Any] | None, str, int, Distilled | None, list[str]]:
        """(the project capture's ingestForAgent params or None, why not, turns read, the summary, the
        person's preferences stated in the new turns: [] unless FLOWBABY_CAPTURE_USER_PREFERENCES=1)."""
        read = read_session(request, self.paths.root)
        if read is None:
            return None, "not a session of this workspace", 0, None, []
        session, messages = read
        done = int(self._captures.load().get(f"{request.source}:{request.sessionId}", {}).get("turns", 0))
        start = done if done <= len(messages) else 0
        personal: list[str] = []
        if Environment.read().capture_user_preferences:
            personal, kept = split_preferences(messages[start:])
            messages = [*messages[:start], *kept]
            session = replace(session, title=without_preferences(session.title)[1])  # a client's title quotes it
        versions = self.store.topic_versions(topic_id)
        current = current_memories(self.store.iter_memories())
        known = {d for m in current for d in map(normal, m.decisions)}
        distiller = functools.partial(
            distil_session, llm=self.settings.llm, timeout_sec=self.settings.llm_timeout_sec
        )  # the workspace's LLM when one is configured, else (or on any failure) offline
        plan, reason, got = plan_capture(
            request,
            session,
            messages,
            start,
            versions[-1] if versions else None,
            known,
            self.paths.root,
            distiller,
            stored_in(current),
        )
        return plan, reason, len(messages), got, personal

    async def _store_preferences(self, said: list[str], agent: str) -> dict[str, Any]:
        """Each preference as a memory of the person's user store (`scope: user`, routed by
        graph.engine.user_scope), without a topicId: reconcile on write there skips one it already holds
        and updates one it revises. A store without a user scope (a team server's) keeps none."""
        stored: list[dict[str, Any]] = []
        for sentence in said:
            summary = {
                "topic": sentence if len(sentence) <= 80 else sentence[:79].rsplit(" ", 1)[0] + "…",
                "context": f"The person's own way of working, said in a {agent} session in {self.paths.root.name}.",
                "decisions": [sentence],
                "agentName": agent,
                "scope": USER,
            }
            try:
                reply = await self.store_memory(await request_of(self, STORE, summary), writer=CAPTURE)
            except FlowbabyError as error:
                return {"stored": stored, "reason": error.message}
            stored.append({"topicId": reply.summary_id, "decision": (reply.reconcile or {}).get("decision", "add")})
        return {"stored": stored, "reason": ""}
