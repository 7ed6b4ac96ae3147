"""FlowbabyService: the one engine API that the bridge and the HTTP API both call.

It owns the workspace (lock, store, vectors, background operations) and turns
contract requests into contract responses. Fronts only parse, call and frame.
Each group of operations is a mixin over the shared state (graph.engine.state)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from graph import __version__
from graph.backends.backend import Backend, ServerCaches
from graph.core.contract import ErrorCode, FlowbabyError, HealthResponse, HookProblems
from graph.core.hook_problems import hook_problems
from graph.core.logs import configure_logging
from graph.core.memories import StoreDamaged
from graph.core.settings import load_settings
from graph.core.workspace import WorkspaceLock, resolve_workspace
from graph.engine.inspection import Inspection
from graph.engine.sessions import Sessions
from graph.engine.state import log
from graph.engine.user_scope import UserScope
from graph.search.embedder import Embedder


class FlowbabyService(UserScope, Inspection, Sessions):
    """Open with `await FlowbabyService.open(path)`; close with `await service.close()`."""

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
        caches = ServerCaches(
            asyncio.get_running_loop(),
            service.store,
            lambda: service._retriever,
            lambda: service._vectors,
            service.operations.notify,
            service._forgotten_elsewhere,
        )
        service._namespace_listener = await asyncio.to_thread(service.backend.follow_changes, caches)
        try:
            await service._endpoint.start()
        except OSError as exc:  # fronts that come later then get WORKSPACE_BUSY, as before
            log.warning("no owner endpoint for other fronts: %s", exc)
        log.info("workspace %s opened by pid %d", paths.root, os.getpid())
        return service

    async def health(self) -> HealthResponse:
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
            hookProblems=HookProblems.model_validate(await asyncio.to_thread(hook_problems, self.paths.root)),
        )
