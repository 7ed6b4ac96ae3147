"""The engine's shared state: what FlowbabyService holds (set once, in __init__), and the helpers
every operation group uses (the audit record, the caller's folder and its freshness checker)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from graph.backends.backend import NAMESPACES_DIR, Backend, open_backend
from graph.backends.memory_store import Closeable, MemoryStoreBackend
from graph.backends.vectors import MemoryVectors
from graph.capture.session_capture import CaptureLog
from graph.code.freshness import FreshnessChecker
from graph.cognify.operations import OperationManager
from graph.cognify.worker_client import WorkerClient
from graph.core.contract import FlowbabyError, GraphSnapshotResponse
from graph.core.ingest_redaction import Redactor, load_user_patterns
from graph.core.memories import Memory
from graph.core.settings import Settings
from graph.core.workspace import DATA_DIR, WorkspaceLock, WorkspacePaths
from graph.owner.endpoint import OwnerEndpoint
from graph.search.briefing import RecallCounts
from graph.search.embedder import Embedder
from graph.search.graph_lane import GraphLane
from graph.search.reconciler import Reconciler, audit_decision
from graph.search.retrieval import Retriever
from graph.sessions.agent_api import SessionMemory
from graph.sessions.encoder import SessionEncoder

log = logging.getLogger("flowbaby.service")

WARM_RETRY_FIRST_SEC = 5.0

WARM_RETRY_MAX_SEC = 300.0
"""A warm-up that failed (not a database outage, which it waits out) is started again by the first call
that needs the indexes WARM_RETRY_FIRST_SEC after the failure, then twice as long after each further
failure, up to WARM_RETRY_MAX_SEC: a passing fault heals without a restart or repair."""

MAX_CHECKED_FOLDERS = 32
"""Freshness checkers kept (one per folder retrievals come from: the main checkout and its worktrees)."""


class EngineState:
    """The attributes every operation group reads; the groups are mixins over it (graph.engine.service)."""

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
        self._whole_graph: tuple[object, dict[str, tuple[str, str]], GraphSnapshotResponse] | None = None
        """(projection stamp, every version's status and graph state, the whole graph's snapshot): the last
        `graphSnapshot` without a topic, given again while neither has changed (graph.engine.inspection)."""
        self._namespace_listener: Closeable | None = None
        """Team backend: other servers' changes to the namespace (graph.backends.team.change_feed)."""
        self._recalls = RecallCounts(paths.data / "recall_counts.json")
        self._captures = CaptureLog(paths.data / "captures.json")
        self.reconciler = Reconciler(self.backend.decision_log(), settings.llm, self.store.topic_versions)
        self._capture_lock = asyncio.Lock()
        self.origin = paths.root
        self._checkers: dict[Path, FreshnessChecker] = {}
        """The folder this process was opened for (a worktree may share the main checkout's store):
        whose git checkout a memory staged here records, and retrievals are read against."""

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

    def _record(
        self,
        command: str,
        agent_name: str | None,
        topic: str | None,
        started: float,
        error_code: str | None,
        redacted: int | None = None,
        reconciled: dict[str, Any] | None = None,
    ) -> None:
        self.audit.record(
            command,
            agent_name=agent_name,
            topic=topic,
            result="error" if error_code else "success",
            error_code=error_code,
            duration_ms=(time.perf_counter() - started) * 1000,
            redacted=redacted,
            reconcile=audit_decision(reconciled),
        )

    def _audited(
        self,
        command: str,
        params: dict[str, Any],
        started: float,
        error: FlowbabyError | None,
        redacted: int | None = None,
        stored_topic: str | None = None,
        reconciled: dict[str, Any] | None = None,
    ) -> None:
        """`stored_topic`: the topic as stored (redacted), digested instead of the sent one, so that a
        forget finds the line again (graph.core.audit.forgotten_key); `reconciled`: the write's decision."""
        topic = stored_topic or (params.get("topic") if isinstance(params.get("topic"), str) else None)
        agent = params.get("agentName") if isinstance(params.get("agentName"), str) else None
        self._record(command, agent, topic, started, error.code.value if error else None, redacted, reconciled)

    def _late_audit(self, params: dict[str, Any], topic: str, reply: dict[str, Any]) -> None:
        """A decision applied after its write's reply gets an audit line of its own (`reconcile`): the
        write's line, already written, says `pending`."""
        agent = params.get("agentName") if isinstance(params, dict) else None
        self._record(
            "reconcile", agent if isinstance(agent, str) else None, topic, time.perf_counter(), None, None, reply
        )

    def _origin(self, origin: str | None) -> Path:
        return Path(origin) if origin and os.path.isabs(origin) else self.origin

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
