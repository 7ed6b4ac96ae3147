"""Reconcile on write, in the owner (issue 50): decide before a write is staged, apply after it.

The service asks `decide` (in a thread, with its warm retriever) for a write without an explicit
topicId, or for a capture; stages the memory with `staged_meta` (an update joins the candidate's topic,
a skip is stored `Superseded`, so nothing is ever lost); then `apply` supersedes what a replacement
replaces and logs the decision with its evidence (graph.backends.decision_log). `restore` undoes one.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from graph.backends.decision_log import DecisionLog
from graph.core.contract import AGENT, IMPORT, PERSON, ErrorCode, FlowbabyError, MemoryStatus, SummaryFields, Writer
from graph.core.environment import Environment
from graph.core.memories import Memory
from graph.core.provenance import person_wrote
from graph.core.settings import LLMSettings
from graph.search.catalog import Catalog
from graph.search.reconcile import Decision, decide, live_neighbours, measure, subject_text
from graph.search.reconcile_llm import ask, llm_enabled, timeout_sec, worth_asking
from graph.search.retrieval import ChunkIndex, Retriever
from graph.search.supersession import LIVE

log = logging.getLogger("flowbaby.reconcile")

RECONCILE_WAIT_SEC = 1.0
"""How long a write waits for search to be loaded (a cold start's first writes)."""
BUDGET_ENV = "FLOWBABY_RECONCILE_BUDGET_MS"
BUDGET_MS = 150.0
"""What reconciling may add to a write's reply; a slower decision is applied after the reply."""
RECENT = 64
"""Memories staged here lately, compared too while they wait for their vectors (read-your-writes
without waiting for the embedding)."""
CACHED = 4096
EARLIER = 3
"""Earlier versions of a candidate's topic compared too (the newest ones)."""
COST_WEIGHT = 0.3
"""The newest turn's weight in the moving average of a turn's cost (what a write behind a line of them
expects to wait: one that cannot start within its budget replies at once, graph.engine.ingest)."""
LOOKS = 8
"""How often within its budget a waiting write looks at the line again when no turn finishes (a slow
decision: the turns ahead then cost at least as long as it has run)."""


class CachedEncoder:
    """Subject texts' vectors, kept for the last CACHED texts: the same live memories are the candidates
    of write after write, and a version's text never changes."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str], encode: Callable[[list[str]], list[list[float]]]) -> list[list[float]]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        fresh = dict(zip(missing, encode(missing), strict=True)) if missing else {}
        with self._lock:
            for text, vector in fresh.items():
                self._vectors[text] = vector
            out = [fresh.get(t) or self._vectors[t] for t in texts]
            for text in texts:
                self._vectors.move_to_end(text)
            while len(self._vectors) > CACHED:
                self._vectors.popitem(last=False)
        return out


@dataclass
class Turn:
    """One write's place in the line of decisions: `deciding` gives its decision; `done` lets the next
    write's decision start (call it once this one is applied, or given up). `number`: its place in the
    line (the turns begun before it, and it)."""

    deciding: asyncio.Task[Decision]
    applied: asyncio.Future[None]
    number: int = 0
    on_done: Callable[[], None] | None = None

    def done(self) -> None:
        if not self.applied.done():
            self.applied.set_result(None)
            if self.on_done is not None:
                self.on_done()


class StatusStore(Protocol):
    """What apply and restore need of the memory store (graph.backends.memory_store.MemoryStore)."""

    def get_memories(self, memory_ids: list[str]) -> list[Memory]: ...
    def set_status(self, memory_id: str, status: MemoryStatus) -> None: ...


def draft(fields: SummaryFields, topic_id: str, created_at: str) -> Memory:
    """The memory about to be staged, as far as reconcile reads it."""
    return Memory(
        memory_id="",
        topic_id=topic_id,
        version=0,
        status=MemoryStatus.ACTIVE,
        topic=fields.topic,
        context=fields.context,
        decisions=list(fields.decisions),
        rationale=list(fields.rationale),
        open_questions=list(fields.openQuestions),
        next_steps=list(fields.nextSteps),
        references=list(fields.references),
        time_scope=fields.timeScope,
        agent_name=fields.agentName,
        session_id=None,
        plan_id=None,
        created_at=created_at,
        updated_at=created_at,
    )


def spare_person(decision: Decision, writer: Writer) -> Decision:
    """A write that is not the person's never updates nor replaces a memory the person wrote (issue 58
    item 4): such a decision becomes an add, the person's memory a suggestion they may act on
    (`flowbaby memories supersede`); other memories it would also supersede are left out."""
    if writer == PERSON:
        return decision
    decision.also = [c for c in decision.also if not person_wrote(c.memory)]
    target = decision.target
    if decision.action not in ("update", "replace") or target is None or not person_wrote(target.memory):
        return decision
    kept = Decision(
        "add", None, f"{decision.reason}, but the person wrote it: left as a suggestion", decision.decided_by
    )
    kept.suggestions = [target, *(c for c in decision.suggestions if c is not target)][:3]
    kept.candidates = decision.candidates
    return kept


def _ref(memory: Memory) -> dict[str, str]:
    return {"topicId": memory.topic_id, "memoryId": memory.memory_id, "status": memory.status.value}


class Reconciler:
    def __init__(self, log: DecisionLog, llm: LLMSettings, versions: Callable[[str], list[Memory]]) -> None:
        """`versions`: a topic's versions, oldest first (the store's topic_versions)."""
        self.log = log
        self.llm = llm
        self.versions = versions
        self._encoder = CachedEncoder()
        self._last: asyncio.Future[None] | None = None
        """Done when the latest write's decision is applied (or given up): the next one waits for it."""
        self.pending: set[asyncio.Task[None]] = set()
        """Decisions being applied after their write's reply (kept until done)."""
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowbaby-reconcile")
        """One decision at a time, off the default pool: slow decisions queue here, never in front of
        the staging commits (which run in the default pool)."""
        self.recent: deque[Memory] = deque(maxlen=RECENT)
        """Filled by `staged`."""
        self._seq = 0
        self._order: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._begun = self._finished = 0
        """Turns begun, and turns done: the line a write's decision waits behind is what lies between."""
        self._running_since: float | None = None
        """When the decision being made now started (event loop time)."""
        self._progress: asyncio.Future[None] | None = None
        """Done when a turn is (then replaced): a write waiting for its decision looks at the line again."""
        self._cost: float | None = None
        """What one turn takes from its decision's start to applied, seconds (a moving average; until one
        is measured, a turn is taken to cost the whole budget)."""

    def decide(
        self,
        fields: SummaryFields,
        meta: dict[str, Any],
        retriever: Retriever,
        index: ChunkIndex,
        since: int | None = None,
        *,
        capture: bool,
        writer: Writer = AGENT,
    ) -> Decision:
        """The decision for a write whose turn began at `since` (only memories staged before it are
        compared; None: all): offline, or the LLM's when it is on (offline on any failure). A capture
        keeps its session's topic: what would join another topic is left as a suggestion. A write that is
        not the person's leaves what the person wrote as it is (spare_person)."""
        decision = self.decide_memory(draft(fields, meta["topicId"], meta["createdAt"]), retriever, index, since)
        if capture and decision.action == "update" and decision.target is not None:
            kept = Decision("add", None, "a capture keeps its session's topic", decision.decided_by)
            kept.suggestions, kept.candidates = [decision.target], decision.candidates
            return kept
        return spare_person(decision, writer)

    def decide_memory(self, new: Memory, retriever: Retriever, index: ChunkIndex, since: int | None) -> Decision:
        encode = functools.partial(self._encoder.encode, encode=retriever.embedder.encode)
        catalog = retriever.catalog
        vector = encode([subject_text(new)])[0]
        neighbours = live_neighbours(new, vector, index.search, catalog.lexical.search, catalog.by_id)
        seen = {m.memory_id for m in neighbours}
        by_id = retriever.catalog.by_id
        pending = [m for m in list(self.recent) if m.memory_id not in by_id and m.memory_id not in seen]
        neighbours += [m for m in pending if m.status in LIVE and m.topic_id != new.topic_id]
        if since is not None:
            neighbours = [m for m in neighbours if self.before(since)(m)]
        decision = decide(new, measure(new, neighbours, encode, self._earlier))
        if llm_enabled(self.llm) and worth_asking(decision):
            decision = ask(new, decision, self.llm)
        return decision

    def decide_import(
        self, new: Memory, retriever: Retriever, index: ChunkIndex, since: int, *, retire_person: bool = False
    ) -> Decision:
        """An imported memory's decision (a topic the store did not hold): it keeps its ids, so an update
        is applied as a replacement that continues the topic; it never replaces a memory made after it
        (that one is left as a suggestion), nor one the person wrote unless the person said so
        (`retire_person`: `flowbaby import --retire-mine`)."""
        decision = self.decide_memory(new, retriever, index, since)
        if not retire_person:
            decision = spare_person(decision, IMPORT)
        target = decision.target
        if (
            decision.action in ("update", "replace")
            and target is not None
            and target.memory.created_at > new.created_at
        ):
            kept = Decision("add", None, "an imported memory older than the one it would replace", decision.decided_by)
            kept.suggestions, kept.candidates = [target], decision.candidates
            return kept
        decision.also = [c for c in decision.also if c.memory.created_at <= new.created_at]
        return decision

    def budget_sec(self) -> float:
        """FLOWBABY_RECONCILE_BUDGET_MS (default 150); with the LLM on, its timeout and half a second more."""
        try:
            budget = max(0.0, Environment.read().seconds(BUDGET_ENV, BUDGET_MS)) / 1000
        except ValueError:
            budget = BUDGET_MS / 1000
        return max(budget, timeout_sec() + 0.5) if llm_enabled(self.llm) else budget

    def staged(self, memories: list[Memory]) -> None:
        """Memories just staged (every write, reconciled or not): compared while they wait for their
        vectors, and numbered, so that a decision made late never weighs a memory staged after its write."""
        with self._lock:
            for memory in memories:
                self._seq += 1
                self._order[memory.memory_id] = self._seq
                self.recent.append(memory)
            while len(self._order) > CACHED:
                self._order.popitem(last=False)

    @property
    def last_staged(self) -> int:
        """The number of the last memory staged here (a write's or import's `since`)."""
        return self._seq

    def before(self, since: int) -> Callable[[Memory], bool]:
        """Whether a memory was staged before a write whose turn began at `since` (older ones, and those
        staged by another process, count as before)."""
        return lambda memory: self._order.get(memory.memory_id, 0) <= since

    def begin(self, decide: Callable[[int], Decision], since: int | None = None) -> Turn:
        """Queue a write's decision behind the previous write's: it is made once every earlier decision
        is applied (in time or late), so it never weighs a memory an earlier one superseded, and the
        outcome does not depend on which came first, the decision or the reply's budget. `since`: the
        last memory staged before the write (default: the last staged now)."""
        loop = asyncio.get_running_loop()
        previous, applied = self._last, loop.create_future()
        since = self._seq if since is None else since
        self._last = applied
        self._begun += 1
        started: list[float] = []

        async def deciding() -> Decision:
            if previous is not None:
                await asyncio.shield(previous)
            started.append(loop.time())
            self._running_since = started[0]
            return await loop.run_in_executor(self.executor, decide, since)

        def finished() -> None:
            self._finished += 1
            if started:
                took = loop.time() - started[0]
                self._cost = took if self._cost is None else COST_WEIGHT * took + (1 - COST_WEIGHT) * self._cost
                if self._running_since == started[0]:
                    self._running_since = None
            if self._progress is not None and not self._progress.done():
                self._progress.set_result(None)

        return Turn(loop.create_task(deciding()), applied, self._begun, finished)

    async def wait(self, turn: Turn) -> tuple[Decision | None, int]:
        """A write's decision within its budget (budget_sec), and 0; or None and the turns still ahead of
        it once they would take the rest of the budget (their count times a turn's average cost: the whole
        budget until one is measured, or what the decision being made has taken, when longer). Under a
        burst the reply need not wait for a decision that cannot start in time. None and 0 when the budget
        runs out. A failed decision raises its error."""
        loop = asyncio.get_running_loop()
        budget = self.budget_sec()
        deadline = loop.time() + budget
        while not turn.deciding.done():
            now = loop.time()
            left, ahead = deadline - now, max(0, turn.number - 1 - self._finished)
            if left <= 0:
                return None, 0
            cost = budget if self._cost is None else self._cost
            if self._running_since is not None:  # the turn being decided costs at least what it has taken so far
                cost = max(cost, now - self._running_since)
            if ahead and ahead * cost >= left:
                return None, ahead
            if self._progress is None or self._progress.done() or self._progress.get_loop() is not loop:
                self._progress = loop.create_future()
            either: set[asyncio.Future[Any]] = {turn.deciding, self._progress}
            await asyncio.wait(either, timeout=min(left, budget / LOOKS), return_when=asyncio.FIRST_COMPLETED)
        return turn.deciding.result(), 0

    def apply_later(
        self,
        turn: Turn,
        memory: Memory,
        store: StatusStore,
        catalog: Catalog | None,
        on_applied: Callable[[dict[str, Any]], None],
    ) -> None:
        """Apply a decision that came after the write was staged as sent: an update then becomes a
        replacement (the memory keeps its own topic), a skip supersedes the memory just staged.
        `on_applied`: its reply object (the write's own audit line is already written)."""

        async def later() -> None:
            try:
                decision = await turn.deciding
                if decision.action == "update" and decision.target is not None:
                    decision.action, decision.continues = "replace", decision.target.memory.topic_id
                    decision.reason += "; decided after the reply, so the new memory keeps its topic"
                reply = await asyncio.to_thread(self.apply, decision, memory, store, catalog, late=True)
                on_applied(reply)
            except Exception:  # the write is stored as sent; nothing else to undo
                log.exception("reconcile after the reply failed; the memory stays as sent")
            finally:
                turn.done()

        task = asyncio.get_running_loop().create_task(later())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def settled(self) -> None:
        """Until every decision applied after its reply is done (tests, bench)."""
        while self.pending or (self._last is not None and not self._last.done()):
            if self.pending:
                await asyncio.gather(*list(self.pending), return_exceptions=True)
            else:
                await asyncio.sleep(0.01)

    def _earlier(self, memory: Memory) -> list[Memory]:
        """A live memory's earlier versions, and those of the topic it continues (a late update,
        graph.backends.decision_log.Entry.continues): the newest EARLIER of them."""
        older = [m for m in self.versions(memory.topic_id) if m.version < memory.version] if memory.version > 1 else []
        seen, topics = {memory.topic_id}, self.log.continued(memory.topic_id)
        while topics and len(older) < EARLIER:  # a chain of late updates, newest first
            topic_id = topics.pop()
            if topic_id not in seen:
                seen.add(topic_id)
                older = self.versions(topic_id) + older
                topics += self.log.continued(topic_id)
        return older[-EARLIER:]

    @staticmethod
    def staged_meta(meta: dict[str, Any], decision: Decision | None) -> dict[str, Any]:
        """The metadata the write is staged with: an update joins the candidate's topic; a skip is
        stored, but Superseded (restore makes it current)."""
        if decision is None or decision.target is None:
            return meta
        if decision.action == "update":
            return {**meta, "topicId": decision.target.memory.topic_id}
        if decision.action == "skip":
            return {**meta, "status": MemoryStatus.SUPERSEDED.value}
        return meta

    def apply(
        self, decision: Decision, memory: Memory, store: StatusStore, catalog: Catalog | None, *, late: bool = False
    ) -> dict[str, Any]:
        """After staging: supersede what a replacement replaces; log the decision (unless a plain add);
        the reply's `reconcile` object. `late`: the memory was staged as sent, so a skip supersedes it now."""
        superseded: list[dict[str, str]] = []
        if decision.action == "replace":
            for candidate in [c for c in [decision.target, *decision.also] if c is not None]:
                superseded.append(_ref(candidate.memory))
                store.set_status(candidate.memory.memory_id, MemoryStatus.SUPERSEDED)
                candidate.memory.status = MemoryStatus.SUPERSEDED  # also a recent one, not catalogued yet
                if catalog is not None and candidate.memory.memory_id in catalog.by_id:
                    catalog.set_status(candidate.memory.memory_id, MemoryStatus.SUPERSEDED)
        elif decision.action == "update" and decision.target is not None:
            superseded.append(_ref(decision.target.memory))  # the store superseded it, as a new version does
            decision.target.memory.status = MemoryStatus.SUPERSEDED
        elif decision.action == "skip":
            superseded.append({**_ref(memory), "status": MemoryStatus.ACTIVE.value})
            if late:
                store.set_status(memory.memory_id, MemoryStatus.SUPERSEDED)
                memory.status = MemoryStatus.SUPERSEDED
                if catalog is not None and memory.memory_id in catalog.by_id:
                    catalog.set_status(memory.memory_id, MemoryStatus.SUPERSEDED)
        reply = decision.reply()
        if decision.action == "add" and not decision.suggestions:
            return reply
        entry = self.log.add(
            {
                "decision": decision.action,
                "decidedBy": decision.decided_by,
                "reason": decision.reason,
                "newer": {"topicId": memory.topic_id, "memoryId": memory.memory_id},
                "superseded": superseded,
                "evidence": reply.get("evidence"),
                "suggestions": reply.get("suggestions", []),
                **({"continues": decision.continues} if decision.continues else {}),
            }
        )
        return {**reply, "id": entry.id}

    def manual(self, older: Memory, newer: Memory, reason: str, evidence: dict[str, Any] | None = None) -> str:
        """Log a person's supersession (confirmSupersession, `flowbaby memories supersede`) as reconcile logs
        a replace: `older` as it was before (its status is what restore gives back), superseded by `newer`,
        decided by "manual". Its id."""
        entry = {
            "decision": "replace",
            "decidedBy": "manual",
            "reason": reason,
            "newer": {"topicId": newer.topic_id, "memoryId": newer.memory_id},
            "superseded": [_ref(older)],
            "evidence": evidence,
        }
        return self.log.add(entry).id

    def restore(self, topic_id: str, store: StatusStore, catalog: Catalog | None) -> dict[str, Any]:
        """Undo the newest decision (automatic or manual) that made a memory of this topic Superseded: each memory
        it superseded gets its status back. NOT_FOUND when there is none left to undo."""
        entries = [
            e
            for e in self.log.for_topic(topic_id)
            if e.restoredAt is None and e.superseded and any(ref.topicId == topic_id for ref in e.superseded)
        ]
        if not entries:
            left = f'No decision left to undo made a memory of "{topic_id}" Superseded'
            raise FlowbabyError(ErrorCode.NOT_FOUND, left)
        entry = entries[-1]
        held = {m.memory_id: m for m in store.get_memories([ref.memoryId for ref in entry.superseded])}
        restored = []
        for ref in entry.superseded:
            memory = held.get(ref.memoryId)
            known = ref.status in (MemoryStatus.ACTIVE.value, MemoryStatus.DECISION_RECORD.value)
            if memory is None or memory.status is not MemoryStatus.SUPERSEDED or not known:
                continue  # not this store's memory, changed since, or a status no decision takes away
            status = MemoryStatus(ref.status)
            store.set_status(ref.memoryId, status)
            if catalog is not None and ref.memoryId in catalog.by_id:
                catalog.set_status(ref.memoryId, status)
            restored.append({"topicId": ref.topicId, "memoryId": ref.memoryId, "status": status.value})
        at = self.log.restored(entry.id)
        return {"id": entry.id, "decision": entry.decision, "restored": restored, "restoredAt": at}


def audit_decision(reply: dict[str, Any] | None) -> dict[str, Any] | None:
    """The audit line's `reconcile`: the decision, who made it, and the topic it concerns (no text)."""
    if not reply:
        return None
    shown: dict[str, Any] = {key: reply[key] for key in ("decision", "decidedBy", "topicId", "id") if key in reply}
    superseded = reply.get("alsoSuperseded")
    if superseded:
        shown["alsoSuperseded"] = [item["topicId"] for item in superseded]
    return shown
