"""Memory control (INGEST_CONTRACT.md 20): list, show, versions and context of a memory, export and import,
and the implied supersessions a person confirms."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import Any

from graph.core.contract import (
    EXPORT_FORMAT,
    EXPORT_FORMAT_VERSION,
    IMPORT,
    PERSON,
    ConfirmSupersessionRequest,
    ConfirmSupersessionResponse,
    ErrorCode,
    ExportMemoriesRequest,
    ExportMemoriesResponse,
    FlowbabyError,
    GetMemoryRequest,
    GetMemoryResponse,
    ImpliedSupersessionsResponse,
    ImportMemoriesRequest,
    ImportMemoriesResponse,
    ListMemoriesRequest,
    ListMemoriesResponse,
    MemoryContextResponse,
    MemoryFilter,
    MemoryStatus,
    MemoryVersionsResponse,
    RestoreMemoryRequest,
    RestoreMemoryResponse,
    RetrievalError,
    RetrievalErrorCode,
    Writer,
    utc_now,
)
from graph.core.memories import Memory, memory_uuid
from graph.core.memory_query import Page, decode_cursor, encode_cursor
from graph.core.provenance import person_wrote
from graph.engine.import_guard import decision_retirements, refuse_future, version_retirements
from graph.engine.records import (
    IMPORT_OPERATION_SIZE,
    PREVIEW_CHARS,
    exported,
    imported,
    provenance_fields,
    same_version,
    version_fields,
    written_fields,
)
from graph.engine.retrieval import Retrieval
from graph.engine.state import log
from graph.search.corrections import named_pair
from graph.search.supersession import LIVE

IMPORT_DECISIONS_WAIT_SEC = 30.0
"""How long an import's reply waits for the reconcile decisions on what it imported (to list what they
retired); decisions still running are applied after it, and counted in the reply's `undecided`."""


class Memories(Retrieval):
    """listMemories, getMemory, memory versions and context, export/import, implied supersessions."""

    async def memory_context(
        self, topic_id: str, query: str | None = None, hops: int = 1, version: int | None = None
    ) -> MemoryContextResponse:
        """Expand a hit: the memory (newest version unless `version`), its graph neighbourhood
        with the related memories and what links them, and the versions before and after it.
        `query` orders related memories by how well they match it; `hops` is 1 (shared
        entities) or 2 (also through related entities)."""
        if hops not in (1, 2):
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, 'Parameter "hops" must be 1 or 2', fields=["hops"])
        versions = (await asyncio.to_thread(self._memory_versions, topic_id)).model_dump(mode="json")["versions"]
        index = (
            len(versions) - 1
            if version is None
            else next((i for i, v in enumerate(versions) if v["version"] == version), None)
        )
        if index is None:
            raise FlowbabyError(ErrorCode.NOT_FOUND, f'Memory "{topic_id}" has no version {version}')
        current = versions[index]
        around = await asyncio.to_thread(self.graph_lane.neighbourhood, current["memoryId"], hops)
        related = await asyncio.to_thread(self.store.get_memories, [item["memoryId"] for item in around["memories"]])
        by_id = {m.memory_id: m for m in related}
        relevance = (
            await asyncio.to_thread(self._retriever.catalog.lexical.search, query) if query and self._retriever else {}
        )
        memories = [
            {
                **item,
                "topicId": by_id[item["memoryId"]].topic_id,
                "topic": by_id[item["memoryId"]].topic,
                "status": by_id[item["memoryId"]].status.value,
                "createdAt": by_id[item["memoryId"]].created_at,
                "queryScore": round(relevance.get(item["memoryId"], 0.0), 4),
            }
            for item in around["memories"]
            if item["memoryId"] in by_id and by_id[item["memoryId"]].topic_id != topic_id  # versions are listed apart
        ]
        if query:
            memories.sort(key=lambda item: (-item["queryScore"], -item["weight"]))
        return MemoryContextResponse.model_validate(
            {
                "memory": current,
                "versionsBefore": versions[:index],
                "versionsAfter": versions[index + 1 :],
                "entities": around["entities"],
                "relations": around["relations"],
                "relatedMemories": memories,
            }
        )

    async def memory_versions(self, topic_id: str) -> MemoryVersionsResponse:
        """Every stored version of a topic, oldest first."""
        return await asyncio.to_thread(self._memory_versions, topic_id)

    def _memory_versions(self, topic_id: str) -> MemoryVersionsResponse:
        versions = self.store.topic_versions(topic_id)
        if not versions:
            raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{topic_id}"')
        return MemoryVersionsResponse.model_validate(
            {"topicId": topic_id, "versions": [version_fields(m) for m in versions]}
        )

    async def list_memories(self, request: ListMemoriesRequest) -> ListMemoriesResponse:
        """listMemories: one keyset page of versions (each topic's newest unless allVersions), newest
        first unless order=oldest; nextCursor continues it, stable while memories are added."""
        after = decode_cursor(request.cursor) if request.cursor else None
        page = Page(limit=request.limit, newest_first=request.order == "newest", after=after)
        rows = await asyncio.to_thread(self.store.list_page, request, page)
        more, rows = len(rows) > request.limit, rows[: request.limit]
        return ListMemoriesResponse.model_validate(
            {
                "memories": [
                    {
                        "topicId": m.topic_id,
                        "memoryId": m.memory_id,
                        "version": m.version,
                        "status": m.status.value,
                        "topic": m.topic,
                        "preview": m.context[:PREVIEW_CHARS],
                        **provenance_fields(m),
                        "graphState": m.graph_state,
                        "charCount": m.char_count,
                        **written_fields(m),
                        **({"context": m.context, "decisions": m.decisions} if request.withContent else {}),
                    }
                    for m in rows
                ],
                "count": len(rows),
                "nextCursor": encode_cursor(rows[-1].staged_at, rows[-1].memory_id) if more else None,
            }
        )

    async def get_memory(self, request: GetMemoryRequest) -> GetMemoryResponse:
        """getMemory: every version (oldest first), the newest one, supersession links both ways
        (versions of the topic, and implied ones by other topics), the newest version's graph
        entities and its provenance. Unknown topicId: NOT_FOUND."""
        return await asyncio.to_thread(self._get_memory, request.topicId)

    def _get_memory(self, topic_id: str) -> GetMemoryResponse:
        versions = self.store.topic_versions(topic_id)
        if not versions:
            raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{topic_id}"')
        latest = versions[-1]
        mine = {m.memory_id for m in versions}
        links: list[dict[str, Any]] = [
            {
                "kind": "version",
                "olderTopicId": topic_id,
                "olderMemoryId": older.memory_id,
                "newerTopicId": topic_id,
                "newerMemoryId": newer.memory_id,
            }
            for older, newer in zip(versions, versions[1:], strict=False)
        ]
        retriever = self._retriever  # implied links once search is warm; never waits for it
        if retriever is not None:
            by_id = retriever.catalog.by_id
            for pair in retriever.supersession_pairs():
                if (pair.older in mine) != (pair.newer in mine):
                    links.append(
                        {
                            "kind": "implied",
                            "olderTopicId": by_id[pair.older].topic_id,
                            "olderMemoryId": pair.older,
                            "newerTopicId": by_id[pair.newer].topic_id,
                            "newerMemoryId": pair.newer,
                        }
                    )
        entities = self.graph_lane.neighbourhood(latest.memory_id, 1)["entities"]
        return GetMemoryResponse.model_validate(
            {
                "topicId": topic_id,
                "versions": [version_fields(m) for m in versions],
                "latest": version_fields(latest),
                "supersedes": [link for link in links if link["newerMemoryId"] == latest.memory_id],
                "supersededBy": [link for link in links if link["olderMemoryId"] == latest.memory_id],
                "entities": entities,
                "provenance": {
                    "agentName": latest.agent_name,
                    "sessionId": latest.session_id,
                    "planId": latest.plan_id,
                    "stagedAt": latest.staged_at,
                    "operationId": latest.operation_id,
                    "graphState": latest.graph_state,
                    **written_fields(latest),
                },
                "reconcile": [entry.shown() for entry in self.reconciler.log.for_topic(topic_id)],
            }
        )

    async def export_memories(self, request: ExportMemoriesRequest) -> ExportMemoriesResponse:
        """exportMemories: one page of every stored version, oldest first, as the export file's
        lines; the CLI pages through it with nextCursor."""
        after = decode_cursor(request.cursor) if request.cursor else None
        page = Page(limit=request.limit, newest_first=False, after=after)
        rows = await asyncio.to_thread(self.store.list_page, MemoryFilter(allVersions=True), page)
        total = (await asyncio.to_thread(self.store.counts))["memories"] if after is None else None
        more, rows = len(rows) > request.limit, rows[: request.limit]
        header = None
        if total is not None:  # the first page
            header = {
                "format": EXPORT_FORMAT,
                "formatVersion": EXPORT_FORMAT_VERSION,
                "exportedAt": utc_now(),
                "memories": total,
            }
        return ExportMemoriesResponse.model_validate(
            {
                "header": header,
                "memories": [exported(m) for m in rows],
                "nextCursor": encode_cursor(rows[-1].staged_at, rows[-1].memory_id) if more else None,
            }
        )

    async def import_memories(
        self, request: ImportMemoriesRequest, *, retire_person: bool = False
    ) -> ImportMemoriesResponse:
        """importMemories: up to 500 exported versions, all or none. Each is checked (the ingest
        validation, its memoryId against topicId and version, no stored version with other content, no date
        after this run), redacted as at ingest, then inserted as it was (ids, versions, statuses,
        timestamps), written by `import`; a version already stored is skipped, so importing a file twice adds
        nothing. New ones are embedded and their graph queued. It never retires what the person wrote unless
        `retire_person` (the person's `flowbaby import --retire-mine`, never a request field); the reply lists
        what it retired, with the undo (graph.engine.import_guard)."""
        refuse_future(request.memories, utc_now())
        memories = [imported(self.redactor.summary(record)[0]) for record in request.memories]
        for memory in memories:
            memory.written_by, memory.written_in = IMPORT, str(self.origin)
        seen: set[str] = set()
        for index, (record, memory) in enumerate(zip(request.memories, memories, strict=True)):
            if record.memoryId != memory_uuid(record.topicId, record.version):
                field = f"memories.{index}.memoryId"
                raise FlowbabyError(
                    ErrorCode.INVALID_PAYLOAD,
                    f'Field "{field}" is not the id of version {record.version} of topicId "{record.topicId}"',
                    fields=[field],
                )
            if memory.memory_id in seen:
                field = f"memories.{index}.memoryId"
                raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, f'Field "{field}" repeats a version', fields=[field])
            seen.add(memory.memory_id)
        since = self.reconciler.last_staged
        reply, added, new_topics = await asyncio.to_thread(self._import, memories, request.dryRun, retire_person)
        self.reconciler.staged(added)
        for memory in added:
            self._embed_queue.put_nowait(memory)
        if added:
            self.operations.notify()
            retired, undecided = await self._reconcile_imported(added, new_topics, since, retire_person)
            both = [*reply.retired, *retired]
            reply = reply.model_copy(update={"retired": both, "undecided": undecided})
        return reply

    async def _reconcile_imported(
        self, added: list[Memory], new_topics: set[str], since: int, retire_person: bool
    ) -> tuple[list[dict[str, Any]], int]:
        """Reconcile (section 7.1) the newest live version of each imported topic the store did not hold,
        against the memories stored before the import only: an export imported into an empty store, or
        into the store it came from, changes nothing. Each decision logged; the memories they retired, as
        far as they are applied within IMPORT_DECISIONS_WAIT_SEC, and how many are not yet."""
        latest: dict[str, Memory] = {}
        for memory in added:
            if memory.topic_id in new_topics and memory.version > getattr(latest.get(memory.topic_id), "version", 0):
                latest[memory.topic_id] = memory
        chosen = [m for m in latest.values() if m.status in LIVE]
        if not chosen:
            return [], 0
        try:
            retriever = await self._ready_retriever()
            index = await self.vectors()
        except Exception:  # search is not loaded: the memories stay as imported
            log.warning("imported memories not reconciled: the search index is not loaded")
            return [], 0
        retired: list[dict[str, Any]] = []
        applied: list[asyncio.Future[None]] = []
        loop = asyncio.get_running_loop()
        for memory in chosen:
            decide = functools.partial(
                self.reconciler.decide_import, memory, retriever, index, retire_person=retire_person
            )
            turn = self.reconciler.begin(decide, since)
            done: asyncio.Future[None] = loop.create_future()
            audit = functools.partial(self._late_audit, {"agentName": memory.agent_name}, memory.topic)

            def on_applied(
                reply: dict[str, Any], audit: Any = audit, topic: str = memory.topic_id, done: Any = done
            ) -> None:
                audit(reply)
                retired.extend(decision_retirements(reply, topic))
                if not done.done():
                    done.set_result(None)

            applied.append(done)
            self.reconciler.apply_later(turn, memory, self.store, retriever.catalog, on_applied)
        await asyncio.wait(applied, timeout=IMPORT_DECISIONS_WAIT_SEC)
        return list(retired), sum(not f.done() for f in applied)

    def _import(
        self, memories: list[Memory], dry_run: bool, retire_person: bool = False
    ) -> tuple[ImportMemoriesResponse, list[Memory], set[str]]:
        """The reply, the versions inserted, and the topics the store held no version of before."""
        stored = {m.memory_id: m for m in self.store.get_memories([m.memory_id for m in memories])}
        for index, memory in enumerate(memories):
            there = stored.get(memory.memory_id)
            if there is not None and not same_version(there, memory):
                field = f"memories.{index}.memoryId"
                raise FlowbabyError(
                    ErrorCode.INVALID_PAYLOAD,
                    f'Field "{field}": this workspace stores that version of "{memory.topic_id}" with other content',
                    fields=[field],
                )
        fresh = [m for m in memories if m.memory_id not in stored]
        retired = version_retirements(fresh, self.store.topic_versions, retire_person)
        reply: dict[str, Any] = {"dryRun": dry_run, "imported": len(fresh), "skipped": len(memories) - len(fresh)}
        reply["retired"] = retired
        if dry_run or not fresh:
            return ImportMemoriesResponse.model_validate({**reply, "queuedOperations": 0}), [], set()
        with self._stage_lock:
            # An empty store has nothing to reconcile an import with (and need not wait for search to load).
            held = self.store.counts()["memories"] > 0
            new_topics = {t for t in {m.topic_id for m in fresh} if held and not self.store.topic_versions(t)}
            inserted, _ = self.store.import_memories(fresh)
            self._stored = None
            self.store.supersede_older(sorted({m.topic_id for m in fresh}))
            operations = self.store.queue_operations(
                [inserted[i : i + IMPORT_OPERATION_SIZE] for i in range(0, len(inserted), IMPORT_OPERATION_SIZE)]
            )
        reply["imported"] = len(inserted)
        reply["skipped"] = len(memories) - len(inserted)
        answer = ImportMemoriesResponse.model_validate({**reply, "queuedOperations": len(operations)})
        return answer, self.store.get_memories(inserted), new_topics

    async def implied_supersessions(self) -> ImpliedSupersessionsResponse:
        """Pairs where a newer memory (another topicId) seems to replace what an older one decided,
        for a person to confirm; nothing is hidden until they do."""
        retriever = await self._ready_retriever()
        pairs = await asyncio.to_thread(retriever.supersession_pairs)
        by_id = retriever.catalog.by_id

        def side(memory: Memory) -> dict[str, Any]:
            return {
                "topicId": memory.topic_id,
                "memoryId": memory.memory_id,
                "topic": memory.topic,
                "status": memory.status.value,
                "createdAt": memory.created_at,
            }

        listed = [
            {
                "older": side(by_id[p.older]),
                "newer": side(by_id[p.newer]),
                "replaced": p.replaced,
                "replacement": p.replacement,
                "evidence": p.evidence,
            }
            for p in pairs
        ]
        return ImpliedSupersessionsResponse.model_validate({"pairs": listed, "count": len(listed)})

    async def confirm_supersession(
        self, request: ConfirmSupersessionRequest, *, writer: Writer | None = None
    ) -> ConfirmSupersessionResponse:
        """A person confirms a listed pair (or, `listed: false`, names any): the older memory's version
        becomes Superseded, logged as a `manual` replace (getMemory shows it, restoreMemory undoes it).
        `writer`: who asks (None: an agent); only the person retires a memory the person wrote."""
        retriever = await self._ready_retriever()
        pairs = await asyncio.to_thread(retriever.supersession_pairs)
        by_id = retriever.catalog.by_id
        pair = next(
            (
                p
                for p in pairs
                if by_id[p.older].topic_id == request.olderTopicId and by_id[p.newer].topic_id == request.newerTopicId
            ),
            None,
        )
        if pair is None and request.listed:
            raise FlowbabyError(
                ErrorCode.NOT_FOUND,
                f'"{request.olderTopicId}" is not listed as possibly superseded by "{request.newerTopicId}"',
            )
        if pair is not None:
            older, newer = by_id[pair.older], by_id[pair.newer]
            reason, evidence = "confirmed by a person", {"replaced": pair.replaced, "replacement": pair.replacement}
        else:
            older, newer = await asyncio.to_thread(named_pair, self.store.topic_versions, request)
            reason, evidence = "marked superseded by a person", None
        if writer != PERSON and person_wrote(older):
            raise FlowbabyError(
                ErrorCode.PERSON_WRITTEN,
                f'"{older.topic_id}" was written by the person: only the person marks it superseded '
                f"(flowbaby memories supersede {older.topic_id} {newer.topic_id}).",
                topicId=older.topic_id,
            )
        was = dataclasses.replace(older)  # its status before, which restoreMemory gives back
        await asyncio.to_thread(self.store.set_status, older.memory_id, MemoryStatus.SUPERSEDED)
        if older.memory_id in retriever.catalog.by_id:
            retriever.catalog.set_status(older.memory_id, MemoryStatus.SUPERSEDED)
        await asyncio.to_thread(self.reconciler.manual, was, newer, reason, evidence)
        return ConfirmSupersessionResponse.model_validate(
            {
                "topicId": request.olderTopicId,
                "memoryId": older.memory_id,
                "status": MemoryStatus.SUPERSEDED.value,
                "supersededBy": request.newerTopicId,
            }
        )

    async def restore_memory(self, request: RestoreMemoryRequest) -> RestoreMemoryResponse:
        """restoreMemory: undo the newest automatic reconcile decision that superseded a memory of the
        topic (graph/search/reconciler.py); NOT_FOUND when none is left to undo."""
        catalog = self._retriever.catalog if self._retriever is not None else None
        undone = await asyncio.to_thread(self.reconciler.restore, request.topicId, self.store, catalog)
        return RestoreMemoryResponse.model_validate({"topicId": request.topicId, **undone})
