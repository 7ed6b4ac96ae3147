"""Warm-up (model, vectors, catalog, graph lane off the request path), the embedding loop, and the close
that parks or hands on unfinished work."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import threading
import time
from collections.abc import Iterator

from graph.backends.vectors import MemoryVectors
from graph.code.branches import Ancestry
from graph.core.contract import DATABASE_FAULTS, FlowbabyError
from graph.core.lexical import LexicalIndex
from graph.core.service_protocol import OperationListener
from graph.engine.state import WARM_RETRY_FIRST_SEC, WARM_RETRY_MAX_SEC, EngineState, log
from graph.search import snapshot
from graph.search.catalog import Catalog
from graph.search.retrieval import Retriever


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """The cyclic collector off while warm-up builds its long-lived objects (every memory, the catalog,
    the graph lane): none is garbage, yet each few hundred allocations started a collection that walked
    them (100k memories: ~1 s of reading the memories, ~0.5 s of the catalog). They are frozen as the
    pause ends: the first allocation after it otherwise collected everything allocated in it at once
    (0.4-0.6 s at 100k, finding ~100 garbage objects of 1.2M); warm-up freezes what follows at its end too."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


WARM_SWITCH_INTERVAL_SEC = 0.0005


class _QuickHandovers:
    """The GIL handed between threads every 0.5 ms instead of 5 while warm-up's steps run in parallel:
    reading the memories releases it for each SQLite row (100k at 100k memories) and then waited for a
    step that held it; its read took 2.2-3 s there instead of ~1.2 s alone. The interval is restored by
    the last warm-up to leave (one process may warm up several services at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved = sys.getswitchinterval()

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if not self._users:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(WARM_SWITCH_INTERVAL_SEC)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if not self._users:
                    sys.setswitchinterval(self._saved)


_quick_handovers = _QuickHandovers()

INIT_TIMEOUT_SEC = 45.0
"""How long a retrieval may wait for the model and indexes to load after a cold start."""

EMBED_BATCH = 64
"""Memories embedded per step of the background embedding."""


class Lifecycle(EngineState):
    """Warm-up, vectors and the embedding loop, settling and closing."""

    async def _warm_up(self) -> None:
        """Load MiniLM, LanceDB and the catalog off the request path, then embed anything
        the last process staged but did not get to embed. An unreadable vector folder is moved
        aside and every memory re-embedded from SQLite; an unreadable projection is served as
        empty and rebuilt by the worker."""
        # The vectors come from the LanceDB child (or Postgres) while this process loads MiniLM, reads
        # the memories and the graph projection: the child's start-up (1-4 s) no longer adds to theirs.
        forgets = self._snapshot_forgets
        with _collection_paused(), _quick_handovers():
            (index, aside), _, memories, _ = await asyncio.gather(
                asyncio.to_thread(self.backend.vectors, self.embedder, self.settings.worker_idle_sec),
                asyncio.to_thread(self.embedder.load),
                asyncio.to_thread(lambda: list(self.store.iter_memories())),
                asyncio.to_thread(self.graph_lane.refresh),
            )
        replaced, self._vectors = self._vectors, index
        if replaced is not None:  # repair loads the indexes again
            await asyncio.to_thread(replaced.close)
        await asyncio.to_thread(self._finish_vector_forgets, index)
        if aside is not None:
            log.warning("the vector index was unreadable: moved to %s; re-embedding every memory", aside.name)
        indexed = await asyncio.to_thread(index.indexed_memory_ids)
        # Search starts with what is indexed; the rest is embedded in the background, and
        # retrievals say how many memories they could not search yet.
        lexical = await asyncio.to_thread(self.backend.lexical)
        with _collection_paused():
            catalog = await asyncio.to_thread(
                Catalog, [m for m in memories if m.memory_id in indexed], lexical, self._snapshot
            )
        missing = [m for m in memories if m.memory_id not in indexed]
        if await asyncio.to_thread(self._check_projection):
            self.operations.notify()
        retriever = Retriever(catalog, self.embedder, self.graph_lane, lambda: index, self.reconciler.log.replaced_by)
        # A team server's namespace folder holds no code: its memories' references name the clients'.
        retriever.freshness = self._freshness_for(self.origin)
        retriever.ancestry = Ancestry()
        # Every ranking reads the implicit supersession pairs (~1 s at 100k memories): built here, not
        # by the first retrieval.
        await asyncio.to_thread(retriever.supersession_pairs, False)
        self._retriever = retriever
        # The loaded catalog, indexes and modules (~460k objects at 10k memories) leave the cyclic
        # GC's view: a full collection scanned them all (1.4 s once in 220 queries under load).
        gc.freeze()
        if self._snapshot is not None and (catalog.from_snapshot < len(catalog) or not len(catalog)):
            # After the first answers can be given: the next start reads it instead of every memory's text.
            saving = asyncio.get_running_loop().create_task(asyncio.to_thread(self._save_snapshot, catalog, forgets))
            self._rebuilds.add(saving)
            saving.add_done_callback(self._rebuilds.discard)
        if missing:
            log.info("embedding %d memories left without vectors", len(missing))
            for memory in missing:
                self._embed_queue.put_nowait(memory)

    def _save_snapshot(self, catalog: Catalog, forgets: int) -> None:
        """Write the catalog snapshot, unless a forget came after the catalog's memories were read. An empty
        catalog only deletes a snapshot left from other memories (no file to write and sync at every start
        of an empty workspace)."""
        assert self._snapshot is not None
        with self._snapshot_lock:
            if not len(catalog):
                snapshot.delete(self._snapshot)
            elif forgets == self._snapshot_forgets and isinstance(catalog.lexical, LexicalIndex):
                snapshot.save(self._snapshot, catalog.lexical, catalog.links, catalog.by_id)

    def _drop_snapshot(self) -> None:
        """Before a forget: the snapshot holds every catalogued memory's words; the next start writes it again."""
        with self._snapshot_lock:
            self._snapshot_forgets += 1
            if self._snapshot is not None:
                snapshot.delete(self._snapshot)

    async def _warm_up_through_outages(self) -> None:
        """Warm-up, tried again while the team database does not answer; retrievals meanwhile get its code."""
        while True:
            try:
                await self._warm_up()
            except FlowbabyError as error:
                if error.code not in DATABASE_FAULTS:
                    self._schedule_warm_retry(error)
                    raise
                self._warm_fault = error
                log.warning("warm-up waits for the team database: %s", error.message)
                if self._vectors is not None:
                    self._vectors.close()
                self._vectors = None
                await asyncio.sleep(float(error.details.get("retryAfterSec", 5)))
            except Exception as error:
                self._schedule_warm_retry(error)
                raise
            else:
                self._warm_fault = None
                self._warm_retry_at, self._warm_retry_wait = None, WARM_RETRY_FIRST_SEC
                return

    def _schedule_warm_retry(self, error: Exception) -> None:
        self._warm_retry_at = time.monotonic() + self._warm_retry_wait
        log.error(
            "warm-up failed (%s: %s); the first call after %g s tries again",
            type(error).__name__,
            error,
            self._warm_retry_wait,
        )
        self._warm_retry_wait = min(self._warm_retry_wait * 2, WARM_RETRY_MAX_SEC)

    def _retry_warm_up_if_due(self) -> None:
        """Start a failed warm-up again once its wait (_warm_retry_at, set by _schedule_warm_retry) is over."""
        task = self._warm_task
        if task is None or not task.done() or task.cancelled() or task.exception() is None:
            return
        if self._warm_retry_at is None or time.monotonic() < self._warm_retry_at:
            return
        log.warning("trying the failed warm-up again")
        self._warm_retry_at = None
        self._warm_task = asyncio.create_task(self._warm_up_through_outages(), name="flowbaby-warm")

    def _check_projection(self) -> bool:
        """Queue one rebuild of an unreadable projection (an operation with no memories: the
        worker rebuilds the file from cognee's graph). Searches meanwhile use no graph lane.
        Runs in a thread: True when it queued one, and the caller wakes the manager."""
        if not self.graph_lane.damaged:
            return False
        if self._projection_rebuild is not None:
            status = self.store.operation(self._projection_rebuild)
            if status is not None and status.status in ("pending", "running"):
                return False
        log.warning("the graph projection is unreadable; queueing its rebuild")
        self._projection_rebuild = self.store.queue_operation([])
        return True

    async def vectors(self) -> MemoryVectors:
        """The vector index, once warm-up has loaded it (and its backlog) for everyone."""
        self._retry_warm_up_if_due()
        if self._warm_task is not None:
            await asyncio.shield(self._warm_task)
        assert self._vectors is not None
        return self._vectors

    async def _embed_loop(self) -> None:
        while True:
            memory = await self._embed_queue.get()
            batch = [memory]
            # Bounded batches: a backlog becomes searchable a batch at a time.
            while not self._embed_queue.empty() and len(batch) < EMBED_BATCH:
                batch.append(self._embed_queue.get_nowait())
            try:
                index = await self.vectors()
                async with self._vector_lock:
                    catalog = self._retriever.catalog  # type: ignore[union-attr]
                    # Memories staged while warm-up ran were already embedded and catalogued by it.
                    # Warm-up queues its backlog, so a memory staged meanwhile may come twice.
                    fresh = list(
                        {
                            m.memory_id: m
                            for m in batch
                            if m.memory_id not in catalog.by_id and m.memory_id not in self._forgotten_ids
                        }.values()
                    )
                    await asyncio.to_thread(index.add_memories, fresh)
                    for memory in fresh:
                        catalog.add(memory)
            except Exception as exc:  # repair (or the next start) re-embeds whatever is missing
                if isinstance(exc, FlowbabyError) and exc.code in DATABASE_FAULTS:
                    # The memories are staged in the team database, which is away: embed them once it is back.
                    log.warning("embedding %d memories waits for the team database: %s", len(batch), exc.message)
                    await asyncio.sleep(float(exc.details.get("retryAfterSec", 5)))
                    for memory in batch:
                        self._embed_queue.put_nowait(memory)
                else:
                    self._embed_failures += 1
                    log.exception("embedding %d memories failed", len(batch))
            finally:
                for _ in batch:
                    self._embed_queue.task_done()

    def _finish_vector_forgets(self, index: MemoryVectors) -> None:
        """The journal's vector steps: at warm-up (a forget the last process did not finish) and
        after each forget."""
        for entry in self.store.forget_journal():
            if "vectors" in entry.pending:
                index.forget(entry.memory_ids)
                self.store.forget_step_done(entry.forget_id, "vectors")

    async def flush_vectors(self) -> None:
        """Wait until every staged memory has its vectors (read-your-writes for search)."""
        await self.vectors()
        await self._embed_queue.join()

    async def settle(self) -> None:
        """Until no operation is pending or running and every staged memory has its vectors
        (what the finisher waits for before it leaves). Graph building off: the operations stay
        pending, so only the vectors and the forgets' graph steps are waited for."""
        while True:
            await self.flush_vectors()
            await self.operations.wait_idle()
            if not self.settings.build_graph or not await asyncio.to_thread(self.store.count_operations):
                return
            await asyncio.sleep(0.2)

    async def close(self, grace_sec: float = 30.0, *, hand_on: bool = False) -> None:
        """Park what the grace period does not finish (same operation ids, no attempt counted).
        `hand_on` (a front leaving): if work is left, start the finisher (graph.owner.finisher),
        which owns the workspace after this process and finishes it within FLOWBABY_FINISH_SEC."""
        await self._endpoint.close()  # fronts working through us take the workspace over
        try:  # reconcile decisions still coming (after their write's reply, or an import's) are applied first
            await asyncio.wait_for(self.reconciler.settled(), grace_sec)
        except TimeoutError:
            log.warning("closing with reconcile decisions still pending; those memories stay as they were sent")
        await self.operations.stop(grace_sec)
        can_hand = hand_on and self.settings.finish_sec > 0 and not self.store.shared
        # Graph building off: pending operations wait for a process with it on, not for a finisher.
        count = can_hand and self.settings.build_graph
        unfinished = await asyncio.to_thread(self.store.count_operations) if count else 0
        if unfinished:
            # At once, not after the rest of the close: an MCP client kills its server about 2 s
            # after closing its stdin. The finisher waits for this process to release the lock,
            # and embeds what it leaves queued, so the close need not wait for the vectors.
            await self._hand_on(unfinished)
        else:
            # Only what this process queued: a close before the warm-up ended has nothing to wait
            # for when nothing was queued (a read-only command), and must not start a finisher for it.
            try:
                await asyncio.wait_for(self._embed_queue.join(), grace_sec)
            except Exception:  # a timeout or a failed warm-up: the finisher or the next start embeds the rest
                log.warning("closing with vectors still queued; the next owner embeds them")
                if can_hand:
                    await self._hand_on(0)
        for task in (self._embed_task, self._warm_task):
            if task is not None:
                task.cancel()
        if self._rebuilds:  # a forget's vector step left to the background; the journal keeps what is cut short
            await asyncio.wait(list(self._rebuilds), timeout=grace_sec)
        await self.session_memory.close()
        if self._namespace_listener is not None:
            self._namespace_listener.close()
        self.throttle.close()
        await asyncio.to_thread(self.audit.close)
        self.reconciler.log.close()
        self.store.close()
        if self._vectors is not None:  # the LanceDB child, or the team backend's pooled connections
            await asyncio.to_thread(self._vectors.close)
        self.projection.close()
        self._lock.release()
        log.info("workspace %s closed", self.paths.root)

    async def _hand_on(self, unfinished: int) -> None:
        from graph.owner.hand_on import hand_on

        log.info("handing %d unfinished operations (and any queued vectors) on to a finisher", unfinished)
        await asyncio.to_thread(hand_on, self.paths.root, self.settings.finish_sec)

    def add_operation_listener(self, listener: OperationListener) -> None:
        self.operations.add_listener(listener)

    def front_activity(self) -> tuple[int, float]:
        """(fronts connected through this owner, time.monotonic() of their last call): what keeps a
        started service from leaving when idle (api/server.py)."""
        return self._endpoint.fronts, self._endpoint.last_call

    async def wait_idle(self) -> None:
        """Until no operation is pending or running (tests, demo, bench)."""
        await self.operations.wait_idle()
