"""Background operation manager: throttles, batches and runs graph building.

Every staged memory gets one operation in the persisted ledger (graph.core.memories). The
manager admits at most `max_running + max_queued` unfinished operations (beyond
that, 429_FLOWBABY_BACKLOG and nothing is staged), starts up to `max_running`
pending operations together as one cognee batch (cognee's per-run overhead is
large, and the worker serialises runs anyway), and reports each end through a
callback so the bridge can notify the editor.

The manager claims its batches from the store (`claim`). On the embedded store it is the only
claimer. On a shared store (Postgres) any number of servers claim from one namespace: each claimed
operation is leased to its server and the lease is renewed while the batch runs, so an operation
whose server died is claimed again by another once the lease runs out; an idle manager polls
(every renewal period, and when NOTIFY says something was queued) for work other servers left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from graph.backends.memory_store import MemoryStoreBackend
from graph.cognify.worker_client import WorkerFailure
from graph.core.contract import DATABASE_FAULTS, BackgroundErrorCode, ErrorCode, FlowbabyError, OperationStatus
from graph.core.environment import Environment

log = logging.getLogger("flowbaby.operations")

BACKLOG_RETRY_SEC = 30
"""The retryAfterSec of 429_FLOWBABY_BACKLOG (a slot frees when a graph build finishes)."""

MAX_ATTEMPTS = 2
"""A batch whose worker crashed is retried once before its operations fail. An LLM failure
(LLM_ERROR, LLM_TIMEOUT, LLM_RATE_LIMITED) is not a crash: the worker already retried
the call within its bounded policy, so the operation fails and `repair` re-queues it."""

Listener = Callable[[OperationStatus], Awaitable[None]]

LEASE_SEC_ENV = "FLOWBABY_LEASE_SEC"
RENEW_SEC_ENV = "FLOWBABY_LEASE_RENEW_SEC"
LEASE_SEC = 30.0
"""How long a claimed operation stays its server's without renewal (shared store): the delay
before another server takes over the operation of a server that died."""


def lease_timing() -> tuple[float, float]:
    """(lease, renewal period) in seconds from FLOWBABY_LEASE_SEC (default 30) and
    FLOWBABY_LEASE_RENEW_SEC (default a third of the lease); the renewal must come well within the lease."""
    try:
        environment = Environment.read()
        lease = environment.seconds(LEASE_SEC_ENV, LEASE_SEC)
        renew = environment.seconds(RENEW_SEC_ENV, lease / 3)
    except ValueError:
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{LEASE_SEC_ENV} and {RENEW_SEC_ENV} are seconds") from None
    if not 0 < renew <= lease / 2:
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR, f"{RENEW_SEC_ENV} must be above 0 and at most half of {LEASE_SEC_ENV}"
        )
    return lease, renew


class GraphWorker(Protocol):
    """What the manager needs of graph.cognify.worker_client.WorkerClient (the unit tier fakes it)."""

    async def run_batch(self, memory_ids: list[str], timeout_sec: float) -> dict[str, Any]:
        """The batch's metrics, or WorkerFailure."""
        ...

    async def forget(self, memory_ids: list[str], timeout_sec: float) -> dict[str, Any]:
        """Delete these memories from the graph (cognee and the projection); idempotent."""
        ...

    async def stop(self, grace_sec: float = 5.0) -> None: ...


FORGET_RETRY_SEC = 30.0
"""After a failed graph forget, the journal entry is tried again this much later (or at the next start)."""


class OperationManager:
    def __init__(
        self,
        store: MemoryStoreBackend,
        worker: GraphWorker,
        *,
        max_running: int,
        max_queued: int,
        timeout_sec: float,
        build: bool = True,
        graph_empty: Callable[[], bool] | None = None,
    ) -> None:
        """build=False (FLOWBABY_BUILD_GRAPH=0): no batch is claimed, operations stay pending in the
        ledger; only forgets' graph steps run. `graph_empty`: True while cognee holds nothing (it never
        built here), so a forget's graph step is then done without starting the worker."""
        self._store = store
        self._build = build
        self._graph_empty = graph_empty
        self._worker = worker
        self._max_running = max_running
        self._max_queued = max_queued
        self._timeout = timeout_sec
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._listeners: list[Listener] = []
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._lease_sec, self._renew_sec = lease_timing()
        self._claimed: set[str] = set()
        """The operations of the batch this manager runs (the only ones it may park at shutdown)."""
        self._forget_retry_at = 0.0
        self._forgotten: dict[str, asyncio.Event] = {}
        """Journal entries a caller waits on (forgotten), set when their graph step is done."""

    @property
    def capacity(self) -> int:
        return self._max_running + self._max_queued

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def check_backlog(self) -> None:
        """Raise 429_FLOWBABY_BACKLOG when admitting one more operation would exceed the limits."""
        if self._store.count_operations() >= self.capacity:
            raise self.backlog_error()

    def backlog_error(self) -> FlowbabyError:
        """The 429 of a full queue (also when the store's own check, `stage(capacity=...)`, refuses)."""
        return FlowbabyError(
            ErrorCode.BACKLOG,
            f"Background queue full ({self.capacity} graph builds max); nothing was stored. "
            f"Retry in {BACKLOG_RETRY_SEC}s, when a build has finished.",
            retryAfterSec=BACKLOG_RETRY_SEC,
        )

    @property
    def started(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise(), name="flowbaby-operations")

    def notify(self) -> None:
        """A new operation is pending."""
        self._idle.clear()
        self._wake.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def _supervise(self) -> None:
        """The loop, kept alive through a team-database outage (DATABASE_UNAVAILABLE / BUSY): the
        batch it cut short goes back to pending once the database answers, and runs again."""
        while not self._stopping:
            try:
                await self._run()
            except FlowbabyError as error:
                if error.code not in DATABASE_FAULTS:
                    raise
                log.warning("background operations wait for the team database: %s", error.message)
                await self._requeue_after_outage(float(error.details.get("retryAfterSec", 5)))

    async def _requeue_after_outage(self, wait_sec: float) -> None:
        while True:
            await asyncio.sleep(wait_sec)
            try:
                running = [op.operationId for op in self._store.operations(("running",))]
                self._store.requeue(running, refund_attempt=True)
                return
            except FlowbabyError as error:
                if error.code not in DATABASE_FAULTS:
                    raise

    async def forgotten(self, forget_id: str, timeout_sec: float) -> bool:
        """Wait until a journal entry's graph step is done; False if it was not within the timeout."""
        if not any(e.forget_id == forget_id and "graph" in e.pending for e in self._store.forget_journal()):
            return True
        event = self._forgotten.setdefault(forget_id, asyncio.Event())
        self.notify()
        try:
            await asyncio.wait_for(event.wait(), timeout_sec)
        except TimeoutError:
            return False
        return True

    async def _forget_graph(self) -> None:
        """The graph step of journal entries, between batches: a build that was running when the
        memory was forgotten has ended, so what it built is deleted too and does not come back."""
        if time.monotonic() < self._forget_retry_at:
            return
        for entry in self._store.forget_journal():
            if "graph" not in entry.pending:
                continue
            if self._graph_empty is not None and self._graph_empty():
                # Nothing was ever built here (batches run one at a time, between these steps): cognee
                # holds no byte of these memories, and a worker would only fail on its missing databases.
                self._store.forget_step_done(entry.forget_id, "graph")
                log.info("forget %s: graph step done: the graph was never built here", entry.forget_id)
                event = self._forgotten.pop(entry.forget_id, None)
                if event is not None:
                    event.set()
                continue
            try:
                metrics = await self._worker.forget(entry.memory_ids, self._timeout)
            except WorkerFailure as failure:
                log.warning("forget %s: the graph step failed (%s): %s", entry.forget_id, failure.code, failure.message)
                self._forget_retry_at = time.monotonic() + FORGET_RETRY_SEC
                asyncio.get_running_loop().call_later(FORGET_RETRY_SEC, self.notify)
                return
            self._store.forget_step_done(entry.forget_id, "graph")
            log.info("forget %s: graph step done: %s", entry.forget_id, metrics)
            event = self._forgotten.pop(entry.forget_id, None)
            if event is not None:
                event.set()

    async def _run(self) -> None:
        while not self._stopping:
            self._wake.clear()  # a notify from here on (a forget while the last one's graph step ran) is not lost
            await self._forget_graph()
            try:
                batch = self._store.claim(self._max_running, self._lease_sec) if self._build else []
            except Exception:
                if not self._store.shared:
                    raise
                # The database away for a moment: this server's work waits in it, as does everyone's.
                log.warning("could not claim operations; trying again in %.1fs", self._renew_sec, exc_info=True)
                await asyncio.sleep(self._renew_sec)
                continue
            if not batch:
                if self._wake.is_set():
                    continue  # notified during this round: look again before idling
                self._idle.set()
                if self._store.shared:  # other servers queue work and die holding some: look again
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), self._renew_sec)
                else:
                    await self._wake.wait()
                continue
            self._idle.clear()
            try:
                await self._run_batch(batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep the manager alive; the ledger says what happened
                if isinstance(exc, FlowbabyError) and exc.code in DATABASE_FAULTS:
                    raise  # the ledger is away: _supervise waits for it and the batch runs again
                log.exception("batch failed unexpectedly")
                unfinished = {op.operationId for op in self._store.operations(("running",))}
                self._store.finish(  # never re-mark an operation that already ended
                    [op.operationId for op in batch if op.operationId in unfinished],
                    "failed",
                    error_code=BackgroundErrorCode.FLOWBABY_ERROR.value,
                    error=f"{type(exc).__name__}: {exc}",
                )

    async def _run_batch(self, batch: list[OperationStatus]) -> None:
        """Run claimed operations (already running, their attempt counted) as one worker batch."""
        op_ids = [op.operationId for op in batch]
        memory_ids = [m for op in batch for m in op.memoryIds]
        self._claimed = set(op_ids)
        # Every operation of a batch gets the batch's metrics; the id lets totals count it once.
        batch_info = {"batchId": f"batch_{uuid.uuid4().hex[:16]}", "batchOperations": len(op_ids)}
        renewal = asyncio.create_task(self._renew(op_ids)) if self._store.shared else None
        try:
            metrics = await self._worker.run_batch(memory_ids, self._timeout)
        except WorkerFailure as failure:
            log.warning("batch %s failed (%s): %s", op_ids, failure.code, failure.message)
            crashed = failure.code == BackgroundErrorCode.WORKER_CRASHED.value
            retry = [op.operationId for op in batch if crashed and op.attempts < MAX_ATTEMPTS]
            self._store.requeue(retry)
            op_ids = [op for op in op_ids if op not in retry]
            metrics = {**failure.metrics, **batch_info} if failure.metrics else {}
            # Memories the worker built one by one keep their graph; an operation all of
            # whose memories were built is completed, the others fail.
            indexed = set(failure.indexed)
            self._store.set_graph_state(sorted(indexed), "indexed")
            built = [
                op.operationId
                for op in batch
                if op.operationId in op_ids and op.memoryIds and set(op.memoryIds) <= indexed
            ]
            self._store.finish(built, "completed", metrics=metrics)
            self._store.finish(
                [op for op in op_ids if op not in built],
                "failed",
                error_code=failure.code,
                error=failure.message,
                metrics=metrics,
            )
        except asyncio.CancelledError:
            raise
        else:
            metrics = {**metrics, **batch_info}
            self._store.finish(op_ids, "completed", metrics=metrics)
            log.info("batch %s completed: %s", op_ids, metrics)
        finally:
            if renewal is not None:
                renewal.cancel()
        self._claimed = set()
        for op_id in op_ids:
            status = self._store.operation(op_id)
            if status is not None and status.status != "running":  # running: another server took it over
                await self._tell(status)

    async def _renew(self, op_ids: list[str]) -> None:
        """Keep the batch's leases while it runs. A lease lost (this server stalled past it, and another
        server claimed the operation) is only logged: the store ignores this server's finish of it."""
        while True:
            await asyncio.sleep(self._renew_sec)
            try:
                held = await asyncio.to_thread(self._store.renew, op_ids, self._lease_sec)
            except Exception:  # the database away for a moment: the lease outlives a few missed renewals
                log.warning("could not renew the leases of %s", op_ids, exc_info=True)
                continue
            lost = sorted(set(op_ids) - set(held))
            if lost:
                log.warning("leases lost to another server: %s", lost)

    async def _tell(self, status: OperationStatus) -> None:
        """Report an end to every listener. The ledger already holds the outcome: a listener
        that raises (an editor gone mid-shutdown: BrokenPipeError) changes nothing in it."""
        for listener in self._listeners:
            try:
                await listener(status)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("an operation listener failed for %s", status.operationId, exc_info=True)

    async def stop(self, grace_sec: float) -> None:
        """Start nothing new; let the running batch finish within the grace period, else
        park it: its operations go back to pending under the same ids and run at next start."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        parked = False
        try:
            await asyncio.wait_for(asyncio.shield(self._task), grace_sec)
        except TimeoutError:
            log.warning("shutdown: parking the running batch for re-run at next start")
            parked = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        # A worker still inside a parked batch would only finish work that runs again anyway.
        await self._worker.stop(grace_sec=0 if parked else 5.0)
        mine = [op.operationId for op in self._store.operations(("running",)) if op.operationId in self._claimed]
        self._store.requeue(mine, refund_attempt=True)
