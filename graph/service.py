"""FlowbabyService: the one engine API that the bridge and the HTTP API both call.

It owns the workspace (lock, store, vectors, background operations) and turns
contract requests into contract responses. Fronts only parse, call and frame.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import gc
import logging
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from graph import __version__
from graph.backends.backend import DATABASE_URL_ENV as DATABASE_URL_ENV  # for the fronts' --database-url
from graph.backends.backend import (
    NAMESPACES_DIR,
    Backend,
    adopt_stores,
    namespace_for,
    namespace_problem,
    open_backend,
    team_database_url,
)
from graph.backends.memory_store import Closeable, MemoryStoreBackend
from graph.backends.migrate import migrate_workspace
from graph.backends.projection import load_graph
from graph.backends.team.change_feed import RemoteChanges
from graph.backends.vectors import MemoryVectors
from graph.capture.distil import Distilled, normal
from graph.capture.llm_distil import distil_session
from graph.capture.session_capture import CaptureLog, capture_enabled, plan_capture, read_session, topic_id_for
from graph.code.branches import Ancestry, checkout
from graph.code.freshness import FreshnessChecker
from graph.code.importer import import_adrs, import_docs, within_repository
from graph.cognify.operations import OperationManager
from graph.cognify.worker_client import WorkerClient
from graph.core.api_tokens import GrantCache, TokenStore, digest, issue, token_id_of, verify
from graph.core.audit import AUDIT_USER, forgotten_key
from graph.core.contract import (
    DATABASE_FAULTS,
    EXPORT_FORMAT,
    EXPORT_FORMAT_VERSION,
    FILTER_CONDITIONS,
    MAX_FORGET_LISTED,
    AuditTailEntry,
    AuditTailRequest,
    AuditTailResponse,
    BackgroundStatusRequest,
    BriefingRequest,
    CaptureRequest,
    ChunkSearchRequest,
    ConfirmSupersessionRequest,
    ConfirmSupersessionResponse,
    ContractFailure,
    ErrorCode,
    ExportedMemory,
    ExportMemoriesRequest,
    ExportMemoriesResponse,
    FlowbabyContextRequest,
    FlowbabyContextResponse,
    FlowbabyError,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
    Freshness,
    GetMemoryRequest,
    GetMemoryResponse,
    GraphSnapshotRequest,
    GraphSnapshotResponse,
    GraphStatsResponse,
    HealthResponse,
    HookProblems,
    ImpliedSupersessionsResponse,
    ImportMemoriesRequest,
    ImportMemoriesResponse,
    IndexStatusResponse,
    ListMemoriesRequest,
    ListMemoriesResponse,
    MemoryContextResponse,
    MemoryFilter,
    MemoryStatus,
    MemoryVersionsResponse,
    OperationStatus,
    RecallRequest,
    RepairResponse,
    ResponseMetadata,
    RetrievalError,
    RetrievalErrorCode,
    RetrieveMemoryRequest,
    RetrieveMemoryResponse,
    StoreMemoryResponse,
    SummaryFields,
    utc_now,
    validate_request,
    validate_retrieval,
)
from graph.core.files import atomic_writer, write_atomic
from graph.core.hook_problems import hook_problems
from graph.core.ingest_redaction import Redactor, load_user_patterns
from graph.core.lexical import LexicalIndex
from graph.core.logs import configure_logging
from graph.core.memories import BacklogFull, Memory, StoreDamaged, memory_uuid, new_operation_id
from graph.core.memory_chunks import memory_chunks
from graph.core.memory_query import Page, decode_cursor, encode_cursor
from graph.core.net import is_loopback
from graph.core.seal import read_private_file, read_sealed_file, write_seal
from graph.core.settings import Settings, load_settings
from graph.core.stdio import take_stdout
from graph.core.trust import configured_token
from graph.core.workspace import (
    API_TOKEN_PURPOSE,
    DATA_DIR,
    LINK_FILE,
    LINK_PURPOSE,
    WorkspaceLock,
    WorkspacePaths,
    check_data_folder,
    link_workspace,
    resolve_workspace,
)
from graph.inspection.names import EXPORT_FORMATS, TopicNotFound
from graph.owner import service_record
from graph.owner.client import OwnerClient, OwnerGone
from graph.owner.endpoint import OwnerEndpoint
from graph.remote import REMOTE_FRONTS, connect_workspace, open_remote_service
from graph.search import snapshot
from graph.search.briefing import RecallCounts, build_briefing, compact_recall, current_memories
from graph.search.catalog import Catalog
from graph.search.embedder import Embedder
from graph.search.graph_lane import GraphLane
from graph.search.markdown import render_markdown
from graph.search.retrieval import WEAK_CANDIDATES, Retrieved, Retriever
from graph.sessions.agent_api import THROTTLED_SESSION_OPS, SessionMemory, SessionOp
from graph.sessions.encoder import SessionEncoder
from graph.sessions.entries import merge

if TYPE_CHECKING:  # networkx's (~20 MB resident) only when a graph is inspected: see __getattr__
    from graph.inspection.workspace_graph import WorkspaceGraph

__all__ = [
    "AUDIT_USER",
    "EXIT_WORKSPACE_UNAVAILABLE",
    "EXPORT_FORMATS",
    "FlowbabyService",
    "MemoryService",
    "SessionOp",
    "TopicNotFound",
    "WorkspaceGraph",
    "WorkspacePaths",
    "check_data_folder",
    "configured_token",
    "read_private_file",
    "API_TOKEN_PURPOSE",
    "adopt_workspace",
    "read_sealed_file",
    "write_seal",
    "resolve_workspace",
    "service_record",
    "connect_workspace",
    "is_loopback",
    "migrate_workspace",
    "open_service",
    "agent_forget_enabled",
    "take_stdout",
    # every file written whole (graph.core.files)
    "atomic_writer",
    "write_atomic",
    # flowbaby import adr|docs (flowbaby/import_command.py), flowbaby link (flowbaby/link_command.py)
    "import_adrs",
    "import_docs",
    "within_repository",
    "link_workspace",
    # the team server (api/tenancy.py, flowbaby/tokens_command.py)
    "NAMESPACES_DIR",
    "GrantCache",
    "TokenStore",
    "Backend",
    "open_backend",
    "team_database_url",
    "digest",
    "issue",
    "namespace_for",
    "namespace_problem",
    "open_token_store",
    "token_id_of",
    "verify",
]
"""What the fronts (bridge/, api/) may use besides graph.core.contract; a test holds them to it."""


def __getattr__(name: str) -> Any:
    """WorkspaceGraph for the fronts' graph commands, imported on first use (it brings networkx)."""
    if name == "WorkspaceGraph":
        from graph.inspection.workspace_graph import WorkspaceGraph

        return WorkspaceGraph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


log = logging.getLogger("flowbaby.service")


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

EXIT_WORKSPACE_UNAVAILABLE = 3
"""Exit code of a front that could not own its workspace (busy, missing, not writable)."""

OperationListener = Callable[[OperationStatus], Awaitable[None]]
INIT_TIMEOUT_SEC = 45.0
"""How long a retrieval may wait for the model and indexes to load after a cold start."""
EMBED_BATCH = 64
"""Memories embedded per step of the background embedding."""
FORGET_WAIT_SEC = 45.0
"""How long forgetMemory's reply waits for the graph step (a build in progress ends first)."""
FORGET_QUICK_SEC = 1.0
"""The same with waitForStores false: enough for a running worker's delete, never for a cold start."""
WARM_RETRY_FIRST_SEC = 5.0
WARM_RETRY_MAX_SEC = 300.0
"""A warm-up that failed (not a database outage, which it waits out) is started again by the first call
that needs the indexes WARM_RETRY_FIRST_SEC after the failure, then twice as long after each further
failure, up to WARM_RETRY_MAX_SEC: a passing fault heals without a restart or repair."""
FRESHNESS_WAIT_SEC = 10.0
"""How long a retrieval waits for memories staged just before it to be embedded; past that it
answers from what is indexed and says how many memories it could not search yet."""
STORED_COUNT_SEC = 1.0
"""A retrieval's count of stored memories (for its note on memories not searchable yet) is read again
after this long, and at once after this process stages, imports or forgets: counting every row cost
32 ms a retrieval at 1M memories on Postgres (another server's memory shows in the note a second late)."""


MAX_CHECKED_FOLDERS = 32
"""Freshness checkers kept (one per folder retrievals come from: the main checkout and its worktrees)."""
BRIEFING_FRESHNESS_SEC = 0.5
"""How long a briefing waits for its decisions' reference freshness (the hook waits 1.5 s in all)."""


class FlowbabyService:
    """Open with `await FlowbabyService.open(path)`; close with `await service.close()`."""

    def __init__(
        self,
        paths: WorkspacePaths,
        settings: Settings,
        lock: WorkspaceLock,
        rate_limit_per_minute: int | None,
        embedder: Embedder | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.paths = paths
        self.settings = settings
        self._lock = lock
        self.backend = backend or open_backend(paths)
        self.redactor = Redactor(settings.redact, load_user_patterns() if settings.redact else [])
        self.store: MemoryStoreBackend = self.backend.memory_store(check=True)
        self.audit = self.backend.audit()
        # A team server's namespaces share one model (its encode is serialised anyway) when they name the same.
        same = embedder is not None and embedder.model_path == settings.embedding_model
        self.embedder = embedder if embedder is not None and same else Embedder(settings.embedding_model)
        self._vectors: MemoryVectors | None = None
        self._retriever: Retriever | None = None
        self.projection = self.backend.projection()
        self.graph_lane = GraphLane(self.projection)
        self.throttle = self.backend.throttle(rate_limit_per_minute)
        self._embed_queue: asyncio.Queue[Memory] = asyncio.Queue()
        self._embed_task: asyncio.Task[None] | None = None
        self._warm_task: asyncio.Task[None] | None = None
        self._stage_lock = threading.Lock()
        self._projection_rebuild: str | None = None
        """The pending operation that rebuilds an unreadable projection, so it is queued once."""
        self.worker = WorkerClient(paths.root, paths.logs / "worker.log", settings.worker_idle_sec)
        self.operations = OperationManager(
            self.store,
            self.worker,
            max_running=settings.max_running,
            max_queued=settings.max_queued,
            timeout_sec=settings.operation_timeout_sec,
            build=settings.build_graph,
            graph_empty=self._cognee_empty,
        )
        self.started_at = time.monotonic()
        self._endpoint = OwnerEndpoint(self, paths, self.start_graph_work)
        self._embed_failures = 0
        self._warm_fault: FlowbabyError | None = None
        """The team database's fault that holds warm-up back, answered to retrievals meanwhile."""
        self._warm_retry_at: float | None = None
        """When a failed warm-up may be started again (time.monotonic); None while none failed."""
        self._warm_retry_wait = WARM_RETRY_FIRST_SEC
        self.session_memory = SessionMemory(
            paths.root,
            paths.data / "sessions",
            SessionEncoder(self.embedder),
            vectors_idle_sec=settings.worker_idle_sec,
            backend=self.backend,
        )
        self._vector_lock = asyncio.Lock()
        """Held by the embedding loop while it adds a batch, and by a forget while it removes vectors,
        so a memory being embedded when it is forgotten cannot come back."""
        self._forget_lock = asyncio.Lock()
        self._forgotten_ids: set[str] = set()
        self._stored: tuple[float, int] | None = None
        """(when, how many): the stored memories a retrieval last counted (STORED_COUNT_SEC)."""
        """Versions forgotten here or by another server on the namespace: still queued for embedding,
        they are skipped, and a catalog rebuild leaves them out."""
        self._rebuilds: set[asyncio.Task[None]] = set()
        """Background catalog work kept until it finishes: rebuilds after another server's forget, and
        the catalog snapshot's write after warm-up."""
        self._snapshot = None if self.store.shared else paths.catalog_snapshot
        """The catalog snapshot (graph.search.snapshot); None on the team backend, whose lexical index
        is the database's."""
        self._snapshot_lock = threading.Lock()
        self._snapshot_forgets = 0
        """Forgets so far: a snapshot of a catalog loaded before one is never written (under the lock)."""
        self._namespace_listener: Closeable | None = None
        """Team backend: other servers' changes to the namespace (graph.backends.team.change_feed)."""
        self._recalls = RecallCounts(paths.data / "recall_counts.json")
        self._captures = CaptureLog(paths.data / "captures.json")
        self._capture_lock = asyncio.Lock()
        self.origin = paths.root
        self._checkers: dict[Path, FreshnessChecker] = {}
        """The folder this process was opened for (a worktree may share the main checkout's store):
        whose git checkout a memory staged here records, and retrievals are read against."""

    # -- lifecycle -----------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        workspace: str | os.PathLike[str] | None,
        *,
        log_to_stderr: bool = True,
        rate_limit_per_minute: int | None = None,
        own_logging: bool = True,
        embedder: Embedder | None = None,
        backend: Backend | None = None,
        build_graph: bool = True,
    ) -> FlowbabyService:
        """rate_limit_per_minute: None keeps the workspace setting; 0 (operator only) switches it off.
        own_logging=False leaves the process's logging as it is, and `embedder` is another service's
        model to share if it is the same one (a team server's namespace services). `backend`: the
        workspace's backend (default: as the process environment chooses, graph.backends.backend).
        build_graph=False (a command that owns the workspace for one call): no batch starts here
        until a front works through this process (start_graph_work); the pending graph work is
        handed on at close. Starting the cognee worker (~7 CPU-s) only to park its batch at the
        command's exit would be pure waste."""
        paths = resolve_workspace(workspace)
        lock = WorkspaceLock(paths)
        lock.acquire()
        try:
            try:
                settings = load_settings(paths)
            except (OSError, UnicodeDecodeError) as exc:  # an unreadable .env: say which file, never a traceback
                reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
                raise FlowbabyError(
                    ErrorCode.FLOWBABY_ERROR, f"Cannot read the workspace settings {paths.env_file}: {reason}"
                ) from None
            if own_logging:
                configure_logging(paths.logs, settings.log_level, to_stderr=log_to_stderr)
            rate = settings.retrieval_rate_per_minute if rate_limit_per_minute is None else rate_limit_per_minute
            service = cls(paths, settings, lock, rate or None, embedder, backend)
            service.origin = Path(os.fspath(workspace)).expanduser().resolve() if workspace else paths.root
        except StoreDamaged as exc:
            lock.release()
            # The source of truth is left exactly as found, for `sqlite3 .recover` or a backup.
            raise FlowbabyError(
                ErrorCode.FLOWBABY_ERROR,
                f"The memory store {paths.store_db} is damaged and was left untouched: {exc}. "
                "Restore it from a backup or recover it with sqlite3's .recover, then start again",
            ) from None
        except BaseException:
            lock.release()
            raise
        requeued = service.store.recover_interrupted()
        if requeued:
            log.warning("re-queued %d operations interrupted by the previous process", len(requeued))
        pruned = service.store.prune_operations()
        if pruned:
            log.info("pruned %d old finished operations from the ledger", pruned)
        service._embed_task = asyncio.create_task(service._embed_loop(), name="flowbaby-embed")
        service._warm_task = asyncio.create_task(service._warm_up_through_outages(), name="flowbaby-warm")
        if build_graph:
            service.start_graph_work()
        changes = RemoteChanges(
            asyncio.get_running_loop(),
            service.store,
            lambda: service._retriever,
            lambda: service._vectors,
            service.operations.notify,
            service._forgotten_elsewhere,
        )
        service._namespace_listener = await asyncio.to_thread(service.backend.watch, changes.handle)
        try:
            await service._endpoint.start()
        except OSError as exc:  # fronts that come later then get WORKSPACE_BUSY, as before
            log.warning("no owner endpoint for other fronts: %s", exc)
        log.info("workspace %s opened by pid %d", paths.root, os.getpid())
        return service

    def _cognee_empty(self) -> bool:
        """cognee never built here: it creates its databases (and then its data files) at the first
        build. A team namespace's cognee data lives in Postgres, shared by its servers: never assumed empty."""
        if self.backend.shared or (self.paths.cognee_system / "databases").exists():
            return False
        return not self.paths.cognee_data.is_dir() or not any(self.paths.cognee_data.iterdir())

    def start_graph_work(self) -> None:
        """Run pending graph work from now on (once; the owner endpoint calls it when a front
        works through a service opened with build_graph=False)."""
        if not self.operations.started:
            self.operations.start()
            self.operations.notify()

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
        retriever = Retriever(catalog, self.embedder, self.graph_lane, lambda: index)
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

    # -- commands --------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        counts, pending = await asyncio.to_thread(lambda: (self.store.counts(), self.store.count_operations()))
        return HealthResponse(
            version=__version__,
            workspace=str(self.paths.root),
            pid=os.getpid(),
            embedderLoaded=self._vectors is not None
            and self._warm_task is not None
            and self._warm_task.done()
            and self._warm_task.exception() is None,
            workerPid=self.worker.pid,
            llm="offline-extractor" if self.settings.llm.offline else self.settings.llm.provider,
            memories=counts["memories"],
            pendingOperations=pending,
            uptimeSec=round(time.monotonic() - self.started_at, 3),
            llmSource=self.settings.llm_source,
            graphBuilding=self.settings.build_graph,
            hookProblems=HookProblems.model_validate(await asyncio.to_thread(hook_problems, self.paths.data)),
        ).model_dump(mode="json")

    def _audited(
        self,
        command: str,
        params: Any,
        started: float,
        error: FlowbabyError | None,
        redacted: int | None = None,
        stored_topic: str | None = None,
    ) -> None:
        """`stored_topic`: the topic as stored (redacted), digested instead of the sent one, so that a
        forget finds the line again (graph.core.audit.forgotten_key)."""
        params = params if isinstance(params, dict) else {}
        topic = stored_topic or (params.get("topic") if isinstance(params.get("topic"), str) else None)
        agent = params.get("agentName") if isinstance(params.get("agentName"), str) else None
        self._record(command, agent, topic, started, error.code.value if error else None, redacted)

    async def _stage(
        self, fields: SummaryFields, meta: dict[str, Any], *, bulk: bool = False, origin: str | None = None
    ) -> tuple[Memory, float]:
        """Commit in a thread (an fsync must not stall the event loop, nor stdio under
        `bridge --http`), then queue the memory's vectors and wake the operation manager.
        `origin`: the folder of the front that sent it (its git checkout is recorded)."""
        memory, store_sec = await asyncio.to_thread(self._commit, fields, meta, bulk, self._origin(origin))
        self._embed_queue.put_nowait(memory)
        self.operations.notify()
        return memory, store_sec

    def _freshness_for(self, folder: Path) -> FreshnessChecker:
        """The checker of the folder a retrieval comes from (a worktree checks its own files), kept
        per folder; a team server's namespace folder holds no code (its references are the clients')."""
        checker = self._checkers.get(folder)
        if checker is None:
            root = self.paths.root
            in_namespace = root.parent.name == NAMESPACES_DIR and root.parent.parent.name == DATA_DIR
            if len(self._checkers) >= MAX_CHECKED_FOLDERS:
                self._checkers.clear()
            checker = self._checkers[folder] = FreshnessChecker(folder, enabled=not in_namespace)
        return checker

    def _origin(self, origin: str | None) -> Path:
        return Path(origin) if origin and os.path.isabs(origin) else self.origin

    def _commit(
        self, fields: SummaryFields, meta: dict[str, Any], bulk: bool = False, origin: Path | None = None
    ) -> tuple[Memory, float]:
        """Check the LLM key and backlog, then commit the memory and its operation, under one
        lock so that the backlog check and the insert cannot interleave. `bulk` (a user's
        `flowbaby import`) is not held to the backlog: the limit is for agents' bursts."""
        # Graph building off: nothing drains the queue, so its limit (for bursts of graph work) does not apply.
        bulk = bulk or not self.settings.build_graph
        with self._stage_lock:
            self.settings.llm.require_key()
            if not bulk:
                self.operations.check_backlog()
            return self._insert(fields, meta, bulk, origin)

    def _insert(
        self, fields: SummaryFields, meta: dict[str, Any], bulk: bool = False, origin: Path | None = None
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

    async def ingest(self, params: Any, *, bulk: bool = False, origin: str | None = None) -> dict[str, Any]:
        """ingestForAgent: validate, stage durably, queue graph building; milliseconds.
        `bulk`: an import's record, not held to the backlog limit (section 6); `origin`: the
        calling front's folder (an owner client's), whose git checkout the memory records."""
        started = time.perf_counter()
        try:
            request: FlowbabyIngestRequest = validate_request(FlowbabyIngestRequest, params)
            request, redacted = self.redactor.summary(request)
            memory, store_sec = await self._stage(
                request, request.metadata.model_dump(mode="json"), bulk=bulk, origin=origin
            )
        except FlowbabyError as error:
            self._audited("ingestForAgent", params, started, error)
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
        self._audited("ingestForAgent", params, started, None, redacted, request.topic)
        return response.model_dump(mode="json")

    async def store_memory(self, params: Any, *, origin: str | None = None) -> dict[str, Any]:
        """storeMemory, the LM-tool surface: ingestForAgent's validation and defaults, a shorter reply."""
        started = time.perf_counter()
        try:
            full: FlowbabyIngestRequest = validate_request(FlowbabyIngestRequest, params)
            full, redacted = self.redactor.summary(full)
            memory, _ = await self._stage(full, full.metadata.model_dump(mode="json"), origin=origin)
        except FlowbabyError as error:
            self._audited("storeMemory", params, started, error)
            raise
        self._audited("storeMemory", params, started, None, redacted, full.topic)
        return StoreMemoryResponse(
            summary_id=memory.topic_id,
            operationId=memory.operation_id or "",
            ingested_chars=memory.char_count,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            redacted=redacted,
        ).model_dump(mode="json")

    async def background_status(
        self, params: Any, *, audited: bool = False, agent_name: str | None = None
    ) -> dict[str, Any]:
        """`audited`: record the call in agent_audit.log (MCP tool calls are; bridge calls are not)."""
        started = time.perf_counter()
        try:
            request: BackgroundStatusRequest = validate_request(BackgroundStatusRequest, params or {})
        except FlowbabyError as error:
            if audited:
                self._record("backgroundStatus", agent_name, None, started, error.code.value)
            raise
        return await asyncio.to_thread(self._background_status, request, audited, agent_name, started)

    def _background_status(
        self, request: BackgroundStatusRequest, audited: bool, agent_name: str | None, started: float
    ) -> dict[str, Any]:
        if request.operationId:
            status = self.store.operation(request.operationId)
            reply = (
                {"success": True, "operationId": request.operationId, "status": "unknown"}
                if status is None
                else {"success": True, **status.model_dump(mode="json")}
            )
        else:
            operations = [op.model_dump(mode="json") for op in self.store.operations()]
            counts: dict[str, int] = {}
            for op in operations:
                counts[op["status"]] = counts.get(op["status"], 0) + 1
            reply = {
                "success": True,
                "operations": operations,
                "counts": counts,
                "llmUsage": self.store.llm_usage(),
                "graphBuilding": self.settings.build_graph,
            }
        if audited:
            self._record("backgroundStatus", agent_name, None, started, None)
        return reply

    def _record(
        self,
        command: str,
        agent_name: str | None,
        topic: str | None,
        started: float,
        error_code: str | None,
        redacted: int | None = None,
    ) -> None:
        self.audit.record(
            command,
            agent_name=agent_name,
            topic=topic,
            result="error" if error_code else "success",
            error_code=error_code,
            duration_ms=(time.perf_counter() - started) * 1000,
            redacted=redacted,
        )

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
        params: Any,
        *,
        markdown: bool = False,
        lanes: frozenset[str] | None = None,
        agent_name: str | None = None,
        origin: str | None = None,
    ) -> dict[str, Any]:
        """retrieveForAgent (JSON entries) or retrieveMemory (entries plus markdown).
        `lanes` narrows the workspace's lanes, for ablations; `agent_name` is the caller
        a front knows (the MCP client), for the audit log."""
        lanes = self.settings.retrieval_lanes if lanes is None else lanes
        started = time.perf_counter()
        command = "retrieveMemory" if markdown else "retrieveForAgent"
        query = params.get("query") if isinstance(params, dict) and isinstance(params.get("query"), str) else None
        try:
            request = validate_retrieval(RetrieveMemoryRequest if markdown else FlowbabyContextRequest, params)
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
                    try:  # the memories' answer stands when the sessions cannot be searched in time
                        turns, weak_turns, _ = await asyncio.wait_for(
                            self.session_memory.turns(
                                request.query, request.maxResults, request.abstain, request.maxTokens
                            ),
                            self.settings.retrieval_timeout_sec,
                        )
                    except TimeoutError:
                        sessions_note = (
                            f"Sessions were not searched: their index did not answer within "
                            f"{self.settings.retrieval_timeout_sec:g}s (it may still be loading); retry shortly."
                        )
                    else:
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
        )
        if markdown:
            text = render_markdown(entries, abstained)
            if note:
                text = f"> {note['message']}\n\n{text}"
            if sessions_note:
                text = f"> {sessions_note}\n\n{text}"
            reply = RetrieveMemoryResponse(**dict(answer), markdown=text).model_dump(mode="json")
        else:
            reply = answer.model_dump(mode="json")
        if note:
            reply["indexing"] = note
        if sessions_note:
            reply["sessionsNotSearched"] = sessions_note
        return reply

    async def index_status(self, *, audited: bool = False, agent_name: str | None = None) -> dict[str, Any]:
        """Vapor-style index health: what is searchable now, and what needs an update or a repair.
        `audited` as in background_status."""
        started = time.perf_counter()
        reply = await asyncio.to_thread(self._index_status)
        if audited:
            self._record("indexStatus", agent_name, None, started, None)
        return reply

    def _index_status(self) -> dict[str, Any]:
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
        ).model_dump(mode="json")

    async def repair(self, params: Any = None) -> dict[str, Any]:
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
        ).model_dump(mode="json")

    async def memory_context(
        self, topic_id: str, query: str | None = None, hops: int = 1, version: int | None = None
    ) -> dict[str, Any]:
        """Expand a hit: the memory (newest version unless `version`), its graph neighbourhood
        with the related memories and what links them, and the versions before and after it.
        `query` orders related memories by how well they match it; `hops` is 1 (shared
        entities) or 2 (also through related entities)."""
        if hops not in (1, 2):
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, 'Parameter "hops" must be 1 or 2', fields=["hops"])
        versions = (await asyncio.to_thread(self._memory_versions, topic_id))["versions"]
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
        ).model_dump(mode="json")

    async def memory_versions(self, topic_id: str) -> dict[str, Any]:
        """Every stored version of a topic, oldest first."""
        return await asyncio.to_thread(self._memory_versions, topic_id)

    def _memory_versions(self, topic_id: str) -> dict[str, Any]:
        versions = self.store.topic_versions(topic_id)
        if not versions:
            raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{topic_id}"')
        return MemoryVersionsResponse.model_validate(
            {"topicId": topic_id, "versions": [version_fields(m) for m in versions]}
        ).model_dump(mode="json")

    # -- memory control: list, show (INGEST_CONTRACT.md 20.1, 20.2) -------------------------
    async def list_memories(self, params: Any = None) -> dict[str, Any]:
        """listMemories: one keyset page of versions (each topic's newest unless allVersions), newest
        first unless order=oldest; nextCursor continues it, stable while memories are added."""
        request: ListMemoriesRequest = validate_request(ListMemoriesRequest, params or {})
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
                    }
                    for m in rows
                ],
                "count": len(rows),
                "nextCursor": encode_cursor(rows[-1].staged_at, rows[-1].memory_id) if more else None,
            }
        ).model_dump(mode="json")

    async def get_memory(self, params: Any) -> dict[str, Any]:
        """getMemory: every version (oldest first), the newest one, supersession links both ways
        (versions of the topic, and implied ones by other topics), the newest version's graph
        entities and its provenance. Unknown topicId: NOT_FOUND."""
        request: GetMemoryRequest = validate_request(GetMemoryRequest, params)
        return await asyncio.to_thread(self._get_memory, request.topicId)

    def _get_memory(self, topic_id: str) -> dict[str, Any]:
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
                },
            }
        ).model_dump(mode="json")

    # -- memory control: forget (INGEST_CONTRACT.md 20.3, 20.4) ------------------------------
    async def forget_memory(self, params: Any, *, agent_name: str | None = None) -> dict[str, Any]:
        """forgetMemory: one version, a topic with every version, or every topic a filter lists,
        from every store: the store's rows (one transaction with the journal entry), the chunk
        vectors, the lexical index, then the graph (the worker, between builds). The reply waits
        up to FORGET_WAIT_SEC for the graph; with waitForStores false the vector files' step runs in
        the background and the graph gets FORGET_QUICK_SEC (a cold cognee worker's and LanceDB child's
        start were most of a forget's 10-25 s); what is still running is listed in `pending` and the
        journal finishes it, also after a restart. An audit tombstone per topic: its digest only; the
        audit lines that staged the forgotten versions lose their agent name and topic digest."""
        started = time.perf_counter()
        try:
            request: ForgetMemoryRequest = validate_request(ForgetMemoryRequest, params)
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
            return ForgetMemoryResponse.model_validate(reply).model_dump(mode="json")
        forget_id = f"fg_{uuid.uuid4().hex[:16]}"
        async with self._forget_lock:
            self._forgotten_ids.update(memory_ids)
            await asyncio.to_thread(self._drop_snapshot)
            # Before the store's transaction: once the memory is gone, nothing could say which lines were its.
            await asyncio.to_thread(self.audit.forget, {forgotten_key(m.topic, m.agent_name) for m in versions})
            await asyncio.to_thread(self.store.forget, forget_id, memory_ids)
            self._stored = None
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
        return ForgetMemoryResponse.model_validate(reply).model_dump(mode="json")

    # -- export and import (INGEST_CONTRACT.md 20.5) ------------------------------------------
    async def export_memories(self, params: Any = None) -> dict[str, Any]:
        """exportMemories: one page of every stored version, oldest first, as the export file's
        lines; the CLI pages through it with nextCursor."""
        request: ExportMemoriesRequest = validate_request(ExportMemoriesRequest, params or {})
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
        ).model_dump(mode="json")

    async def import_memories(self, params: Any) -> dict[str, Any]:
        """importMemories: up to 500 exported versions, all or none. Each is checked (the ingest
        validation, its memoryId against topicId and version, no stored version with other content),
        redacted as at ingest, then inserted as it was (ids, versions, statuses, timestamps); a version
        already stored is skipped, so importing a file twice adds nothing. New ones are embedded and
        their graph queued."""
        request: ImportMemoriesRequest = validate_request(ImportMemoriesRequest, params)
        memories = [imported(self.redactor.summary(record)[0]) for record in request.memories]
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
        reply, added = await asyncio.to_thread(self._import, memories, request.dryRun)
        for memory in added:
            self._embed_queue.put_nowait(memory)
        if added:
            self.operations.notify()
        return reply

    def _import(self, memories: list[Memory], dry_run: bool) -> tuple[dict[str, Any], list[Memory]]:
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
        reply = {"dryRun": dry_run, "imported": len(fresh), "skipped": len(memories) - len(fresh)}
        if dry_run or not fresh:
            return ImportMemoriesResponse.model_validate({**reply, "queuedOperations": 0}).model_dump(mode="json"), []
        with self._stage_lock:
            inserted, _ = self.store.import_memories(fresh)
            self._stored = None
            self.store.supersede_older(sorted({m.topic_id for m in fresh}))
            operations = self.store.queue_operations(
                [inserted[i : i + IMPORT_OPERATION_SIZE] for i in range(0, len(inserted), IMPORT_OPERATION_SIZE)]
            )
        reply["imported"] = len(inserted)
        reply["skipped"] = len(memories) - len(inserted)
        answer = ImportMemoriesResponse.model_validate({**reply, "queuedOperations": len(operations)})
        return answer.model_dump(mode="json"), self.store.get_memories(inserted)

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

    def _finish_vector_forgets(self, index: MemoryVectors) -> None:
        """The journal's vector steps: at warm-up (a forget the last process did not finish) and
        after each forget."""
        for entry in self.store.forget_journal():
            if "vectors" in entry.pending:
                index.forget(entry.memory_ids)
                self.store.forget_step_done(entry.forget_id, "vectors")

    def _forgotten_elsewhere(self, memory_ids: list[str]) -> None:
        """Another server on the namespace forgot these versions: they leave this server's search
        catalog too (its rows are gone from the store, which the catalog is rebuilt from)."""
        self._forgotten_ids.update(memory_ids)
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
        self._retriever = Retriever(catalog, self.embedder, self.graph_lane, lambda: index)

    async def search_chunks(self, params: Any) -> dict[str, Any]:
        """Raw nearest chunks with cosine distance (lower is better), throttled like retrieval."""
        request: ChunkSearchRequest = validate_retrieval(ChunkSearchRequest, params)
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
        return {"success": True, "results": results, "count": len(results)}

    async def graph_snapshot(self, params: Any) -> dict[str, Any]:
        """Node-link JSON of the graph, or of one topic's neighbourhood (every version of the
        topic and what lies within `hops` edges of it). Memories still waiting for their
        graph are included as nodes without edges."""
        request: GraphSnapshotRequest = validate_retrieval(GraphSnapshotRequest, params)

        def build() -> dict[str, Any]:
            try:
                return self._graph_view().snapshot(request.topicId, request.hops)
            except TopicNotFound:
                raise FlowbabyError(ErrorCode.NOT_FOUND, f'No memory with topicId "{request.topicId}"') from None

        snapshot = await asyncio.to_thread(build)
        return GraphSnapshotResponse.model_validate(
            {"topicId": request.topicId, "hops": request.hops, **snapshot}
        ).model_dump(mode="json")

    def _graph_view(self) -> WorkspaceGraph:
        from graph.inspection.workspace_graph import WorkspaceGraph

        return WorkspaceGraph(
            load_graph(self.projection), self.store.iter_memories(), self.store.operations(("failed",))
        )

    async def graph_summary(self, top: int = 10) -> dict[str, Any]:
        """Counts, top entities by degree, the largest components and the memories whose
        graph is missing or failed."""
        stats = await asyncio.to_thread(lambda: self._graph_view().stats(top))
        return GraphStatsResponse.model_validate(stats).model_dump(mode="json")

    async def audit_tail(self, params: Any = None) -> dict[str, Any]:
        """The newest audit entries (who did what, when; never memory text), for the memory browser."""
        request: AuditTailRequest = validate_request(AuditTailRequest, params or {})
        entries = [shown for e in await asyncio.to_thread(self.audit.tail, request.limit) if (shown := audit_shown(e))]
        return AuditTailResponse.model_validate({"entries": entries, "count": len(entries)}).model_dump(mode="json")

    async def implied_supersessions(self, params: Any = None) -> dict[str, Any]:
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
        return ImpliedSupersessionsResponse.model_validate({"pairs": listed, "count": len(listed)}).model_dump(
            mode="json"
        )

    async def confirm_supersession(self, params: Any) -> dict[str, Any]:
        """A person confirms a listed pair: the older memory's version becomes Superseded."""
        request = validate_request(ConfirmSupersessionRequest, params)
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
        if pair is None:
            raise FlowbabyError(
                ErrorCode.NOT_FOUND,
                f'"{request.olderTopicId}" is not listed as possibly superseded by "{request.newerTopicId}"',
            )
        await asyncio.to_thread(self.store.set_status, pair.older, MemoryStatus.SUPERSEDED)
        retriever.catalog.set_status(pair.older, MemoryStatus.SUPERSEDED)
        return ConfirmSupersessionResponse.model_validate(
            {
                "topicId": request.olderTopicId,
                "memoryId": pair.older,
                "status": MemoryStatus.SUPERSEDED.value,
                "supersededBy": request.newerTopicId,
            }
        ).model_dump(mode="json")

    async def wait_idle(self) -> None:
        """Until no operation is pending or running (tests, demo, bench)."""
        await self.operations.wait_idle()

    # -- session memory (graph/sessions) ----------------------------------------------
    async def sessions(self, op: SessionOp, params: Any = None) -> dict[str, Any]:
        """The agents' own sessions: list, current, status, search, search_all, context,
        import, update, repair (graph.sessions.agent_api). The searches (search, search_all,
        context) pass the retrieval throttle as memory searches do (INGEST_CONTRACT.md 14.5)."""
        arguments = params if isinstance(params, dict) else {}
        if op in THROTTLED_SESSION_OPS:
            SessionMemory.query(arguments)  # validation first: a call without `q` spends no admission
            async with self.throttle.admit():
                return await self.session_memory.call(op, arguments)
        return await self.session_memory.call(op, arguments)

    async def watch_sessions(self) -> dict[str, Any]:
        """Keep the workspace's sessions fresh while this process owns it (serve, bridge)."""
        self.session_memory.watch()
        return {"watching": self.session_memory.settings.watch}

    # -- client hooks: what comes to the agent unasked (graph/search/briefing.py, graph/capture) --
    async def briefing(self, params: Any = None) -> dict[str, Any]:
        """The session-start briefing: current decisions, open questions and next steps, other
        agents' new memories; one line per memory, within maxTokens."""
        request: BriefingRequest = validate_request(BriefingRequest, params if params is not None else {})
        checker = self._freshness_for(self.origin)

        def freshness(memories: list[Memory]) -> list[Freshness] | None:
            """The references' freshness, or None past BRIEFING_FRESHNESS_SEC (a cold git log of a
            big repository): the briefing goes out unmarked and the check warms the cache."""
            pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="briefing-freshness")
            pending = pool.submit(checker.check_many, [(m.references, m.updated_at) for m in memories])
            pool.shutdown(wait=False)
            try:
                return pending.result(timeout=BRIEFING_FRESHNESS_SEC)
            except concurrent.futures.TimeoutError:
                log.info(
                    "briefing: reference freshness took over %.1fs; decisions left unmarked", BRIEFING_FRESHNESS_SEC
                )
                return None

        def build() -> dict[str, Any]:
            return build_briefing(
                self.store.iter_memories(),
                agent_name=request.agentName,
                since=request.since,
                recalls=self._recalls.load(),
                max_tokens=request.maxTokens,
                freshness=freshness,
            )

        return await asyncio.to_thread(build)

    async def recall(self, params: Any) -> dict[str, Any]:
        """Per-prompt recall: a retrieval that may abstain, as compact lines, none of `exclude`."""
        request: RecallRequest = validate_request(RecallRequest, params)
        found = await self.retrieve(
            {"query": request.query, "maxResults": request.maxResults + min(len(request.exclude), 5)},
            agent_name=request.agentName,
        )
        if found["abstained"]:
            return {"text": "", "topicIds": [], "tokens": 0, "abstained": True, "abstainReason": found["abstainReason"]}
        reply = compact_recall(found["entries"], set(request.exclude), request.maxTokens, request.maxResults)
        await asyncio.to_thread(self._recalls.add, reply["topicIds"])
        return {**reply, "abstained": False, "abstainReason": None}

    async def capture(self, params: Any) -> dict[str, Any]:
        """Distil an agent session's turns since its last capture into a new version of the
        session's topic (graph/capture); says why when it stores nothing."""
        request: CaptureRequest = validate_request(CaptureRequest, params)
        topic_id = topic_id_for(request.source, request.sessionId)
        if not capture_enabled():
            return {"captured": False, "reason": "capture is off (FLOWBABY_CAPTURE=0)", "topicId": topic_id}
        async with self._capture_lock:
            plan, reason, turns, got = await asyncio.to_thread(self._plan_capture, request, topic_id)
            reply: dict[str, Any] = {"captured": False, "reason": reason, "topicId": topic_id, "turns": turns}
            if got is not None:
                reply["distiller"] = got.distiller
                if got.fallback:
                    reply["llmFallback"] = got.fallback
            if plan is not None:
                staged = await self.ingest(plan)
                metrics = staged["ingestion_metrics"]
                reply |= {
                    "captured": True,
                    "operationId": staged["operationId"],
                    "memoryId": metrics["memoryId"],
                    "version": metrics["version"],
                    "decisions": len(plan["decisions"]),
                    "references": len(plan["references"]),
                }
            if turns and reason != "no new turns":
                record = {"turns": turns, "at": utc_now(), "reason": request.reason, "captured": reply["captured"]}
                await asyncio.to_thread(self._captures.save, f"{request.source}:{request.sessionId}", record)
        return reply

    def _plan_capture(
        self, request: CaptureRequest, topic_id: str
    ) -> tuple[dict[str, Any] | None, str, int, Distilled | None]:
        read = read_session(request, self.paths.root)
        if read is None:
            return None, "not a session of this workspace", 0, None
        session, messages = read
        done = int(self._captures.load().get(f"{request.source}:{request.sessionId}", {}).get("turns", 0))
        start = done if done <= len(messages) else 0
        versions = self.store.topic_versions(topic_id)
        known = {d for m in current_memories(self.store.iter_memories()) for d in map(normal, m.decisions)}
        distiller = functools.partial(
            distil_session, llm=self.settings.llm, timeout_sec=self.settings.llm_timeout_sec
        )  # the workspace's LLM when one is configured, else (or on any failure) offline
        plan, reason, got = plan_capture(
            request, session, messages, start, versions[-1] if versions else None, known, self.paths.root, distiller
        )
        return plan, reason, len(messages), got


IMPORT_OPERATION_SIZE = 20
"""Imported versions per queued graph-build operation (as `flowbaby migrate`)."""
SAME_VERSION = ("topic_id", "version", "topic", "context", "decisions", "created_at", "updated_at", "staged_at")
"""What must match for a stored version to count as an imported one (status may differ: a person may
have confirmed a supersession since)."""


def same_version(stored: Memory, other: Memory) -> bool:
    return all(getattr(stored, name) == getattr(other, name) for name in SAME_VERSION)


def summary_fields(m: Memory) -> dict[str, Any]:
    """A version's summary text under the contract's names (its sections, in reading order)."""
    return {
        "topic": m.topic,
        "context": m.context,
        "decisions": m.decisions,
        "rationale": m.rationale,
        "openQuestions": m.open_questions,
        "nextSteps": m.next_steps,
        "references": m.references,
    }


PROVENANCE = {
    "agentName": "agent_name",
    "sessionId": "session_id",
    "planId": "plan_id",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
    "stagedAt": "staged_at",
}
"""Who stored a version and when: the wire name of each Memory attribute the memory list and the
export file both show."""


def provenance_fields(m: Memory) -> dict[str, Any]:
    return {name: getattr(m, attribute) for name, attribute in PROVENANCE.items()}


def exported(m: Memory) -> dict[str, Any]:
    """One stored version as a line of the export file."""
    return {
        "topicId": m.topic_id,
        "version": m.version,
        "memoryId": m.memory_id,
        "status": m.status.value,
        **summary_fields(m),
        "timeScope": m.time_scope,
        **provenance_fields(m),
        "supersedes": memory_uuid(m.topic_id, m.version - 1) if m.version > 1 else None,
    }


def imported(record: ExportedMemory) -> Memory:
    """A line of an export file as the version to store (graph state pending, no operation)."""
    return Memory(
        memory_id=record.memoryId,
        topic_id=record.topicId,
        version=record.version,
        status=record.status,
        topic=record.topic,
        context=record.context,
        decisions=record.decisions,
        rationale=record.rationale,
        open_questions=record.openQuestions,
        next_steps=record.nextSteps,
        references=record.references,
        time_scope=record.timeScope,
        agent_name=record.agentName,
        session_id=record.sessionId,
        plan_id=record.planId,
        created_at=record.createdAt,
        updated_at=record.updatedAt,
        staged_at=record.stagedAt,
        char_count=record.char_count(),
    )


PREVIEW_CHARS = 200
"""Characters of a memory's context that listMemories shows."""


def version_fields(m: Memory) -> dict[str, Any]:
    """One stored version as the contract's MemoryVersion."""
    return {
        "memoryId": m.memory_id,
        "version": m.version,
        "status": m.status.value,
        **summary_fields(m),
        "planId": m.plan_id,
        "sessionId": m.session_id,
        "agentName": m.agent_name,
        "createdAt": m.created_at,
        "updatedAt": m.updated_at,
        "graphState": m.graph_state,
    }


class MemoryService(Protocol):
    """What every front calls: this process's own FlowbabyService when it owns the workspace,
    or an OwnerClient that forwards each call to the process that does."""

    paths: WorkspacePaths

    def add_operation_listener(self, listener: OperationListener) -> None: ...
    async def health(self) -> dict[str, Any]: ...
    async def ingest(self, params: Any, *, bulk: bool = ..., origin: str | None = ...) -> dict[str, Any]: ...
    async def store_memory(self, params: Any, *, origin: str | None = ...) -> dict[str, Any]: ...
    async def background_status(
        self, params: Any, *, audited: bool = ..., agent_name: str | None = ...
    ) -> dict[str, Any]: ...
    async def retrieve(
        self, params: Any, *, markdown: bool = ..., agent_name: str | None = ..., origin: str | None = ...
    ) -> dict[str, Any]: ...
    async def index_status(self, *, audited: bool = ..., agent_name: str | None = ...) -> dict[str, Any]: ...
    async def repair(self, params: Any = ...) -> dict[str, Any]: ...
    async def memory_context(
        self, topic_id: str, query: str | None = ..., hops: int = ..., version: int | None = ...
    ) -> dict[str, Any]: ...
    async def memory_versions(self, topic_id: str) -> dict[str, Any]: ...
    async def list_memories(self, params: Any = ...) -> dict[str, Any]: ...
    async def get_memory(self, params: Any) -> dict[str, Any]: ...
    async def forget_memory(self, params: Any, *, agent_name: str | None = ...) -> dict[str, Any]: ...
    async def export_memories(self, params: Any = ...) -> dict[str, Any]: ...
    async def import_memories(self, params: Any) -> dict[str, Any]: ...
    async def search_chunks(self, params: Any) -> dict[str, Any]: ...
    async def graph_snapshot(self, params: Any) -> dict[str, Any]: ...
    async def graph_summary(self, top: int = ...) -> dict[str, Any]: ...
    async def audit_tail(self, params: Any = ...) -> dict[str, Any]: ...
    async def sessions(self, op: SessionOp, params: Any = ...) -> dict[str, Any]: ...
    async def watch_sessions(self) -> dict[str, Any]: ...
    async def implied_supersessions(self, params: Any = ...) -> dict[str, Any]: ...
    async def confirm_supersession(self, params: Any) -> dict[str, Any]: ...
    async def briefing(self, params: Any = ...) -> dict[str, Any]: ...
    async def recall(self, params: Any) -> dict[str, Any]: ...
    async def capture(self, params: Any) -> dict[str, Any]: ...
    async def close(self, grace_sec: float = ..., *, hand_on: bool = ...) -> None: ...


async def open_service(
    front: str,
    workspace: str | os.PathLike[str] | None,
    rate_limit_per_minute: int | None = None,
    *,
    build_graph: bool = True,
) -> MemoryService | FlowbabyError:
    """The workspace for a front: owned here if no process owns it, else through its owner
    (this front takes it over when the owner leaves). Otherwise say on stderr why not and
    return the error; the front then exits with EXIT_WORKSPACE_UNAVAILABLE. build_graph=False:
    a one-call command that owns the workspace leaves the graph work to the finisher or the
    next start (FlowbabyService.open)."""

    async def own() -> FlowbabyService:
        return await FlowbabyService.open(
            workspace, rate_limit_per_minute=rate_limit_per_minute, build_graph=build_graph
        )

    if front in REMOTE_FRONTS:  # a workspace pointed at a team server (graph.remote) is served there
        try:
            remote = await open_remote_service(workspace)
        except FlowbabyError as error:
            print(f"flowbaby {front}: {error.code.value}: {error.message}", file=sys.stderr)
            return error
        if remote is not None:
            server = remote.server
            print(f"flowbaby {front}: served by {server.url} (namespace {server.namespace})", file=sys.stderr)
            return remote
    try:
        try:
            return await own()
        except OSError as exc:  # a full disk or a read-only folder at start-up
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"Cannot open the workspace: {exc}") from None
    except FlowbabyError as error:
        if error.code is ErrorCode.WORKSPACE_BUSY:
            with contextlib.suppress(OwnerGone):
                client = await OwnerClient.connect(resolve_workspace(workspace), own)
                client.origin = str(Path(os.fspath(workspace)).expanduser().resolve()) if workspace else None
                print(
                    f"flowbaby {front}: pid {error.details.get('ownerPid')} owns the workspace; working through it",
                    file=sys.stderr,
                )
                return client
        print(f"flowbaby {front}: {error.code.value}: {error.message}", file=sys.stderr)
        return error


async def start_watching(service: MemoryService, front: str) -> None:
    """Ask for session watching. A failure (an owner that faults) is said on stderr, never
    fatal: the front still serves everything else."""
    try:
        await service.watch_sessions()
    except ContractFailure as error:
        print(f"flowbaby {front}: sessions are not watched: {error.code.value}: {error.message}", file=sys.stderr)


def audit_shown(entry: dict[str, Any]) -> dict[str, Any] | None:
    """An audit line in the reply's shape: fields the reply does not name (written by another
    version) are left out, and a line without the ones it needs is skipped."""
    fields = AuditTailEntry.model_fields
    try:
        return AuditTailEntry.model_validate({k: v for k, v in entry.items() if k in fields}).model_dump(mode="json")
    except ValueError:
        return None


def adopt_workspace(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """`flowbaby adopt`: seal, as they are, what flowbaby reads for `folder` (graph.core.seal): its
    link.json, then in the workspace it resolves to server.json, api_token, the session index and the
    memory store, each only if present. The user's word that they made them; never run for them."""
    from graph.core.seal import adopt_file
    from graph.remote.settings import SERVER_PURPOSE, server_file

    here = Path(folder).expanduser().resolve()
    sealed: list[str] = []
    link = here / DATA_DIR / LINK_FILE
    if os.path.lexists(link):
        adopt_file(link, LINK_PURPOSE, here, "link file")
        sealed.append(str(link))
    paths = resolve_workspace(here)
    for path, purpose, what in (
        (server_file(paths), SERVER_PURPOSE, "server settings"),
        (paths.api_token, API_TOKEN_PURPOSE, "API token file"),
    ):
        if os.path.lexists(path):
            adopt_file(path, purpose, paths.root, what)
            sealed.append(str(path))
    stores, memories = adopt_stores(paths)
    return {"workspace": str(paths.root), "sealed": [*sealed, *stores], "memories": memories}


def agent_forget_enabled(paths: object) -> bool:
    """FLOWBABY_AGENT_FORGET=1 in the workspace's settings: agents get the forget tool (MCP)."""
    if not isinstance(paths, WorkspacePaths):
        return False
    try:
        return load_settings(paths).agent_forget
    except (FlowbabyError, OSError, UnicodeDecodeError):
        return False


def open_token_store(url: str) -> TokenStore:
    """The team database's per-user tokens (schema flowbaby_admin, migrated on open)."""
    from graph.backends.team.admin import PostgresTokenStore

    return PostgresTokenStore(url)
