"""The cognee worker: a child process that turns staged memories into the entity graph.

The owning process never imports cognee (7-8 s and ~1 GB); it starts this worker on
demand, sends it one batch at a time as a JSON line on stdin, and reads one JSON
reply line back. cognee prints to stdout, so the protocol gets its own duplicate of
fd 1 and fd 1 itself is pointed at stderr (the worker log). The worker exits when
stdin closes or after an idle period, so idle memory stays small.

Request:  {"batch": "<id>", "memoryIds": ["<uuid>", ...]}
Reply:    {"batch": "<id>", "ok": true, "metrics": {...}}
       or {"batch": "<id>", "ok": false, "errorCode": "...", "error": "...", "metrics": {...},
           "indexedMemoryIds": [the memories built when the batch was retried one by one]}
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from graph.core.contract import BackgroundErrorCode
from graph.core.stdio import die_with_parent, take_stdout

LLM_LAYER = (f"{os.sep}cognee{os.sep}infrastructure{os.sep}llm{os.sep}", f"{os.sep}litellm{os.sep}")
"""Where an exception raised inside cognee's LLM layer or litellm comes from."""


ISOLATED_CODES = {BackgroundErrorCode.LLM_ERROR, BackgroundErrorCode.COGNIFY_FAILED}
"""Failures that may belong to one memory's content, so its batch is retried one by one."""
PROJECTION_ATTEMPTS = 3
"""Saves of the projection tried while other servers' workers keep saving theirs."""
GIVE_UP_AFTER = 2
"""Memories tried alone before concluding, with none built, that every memory would fail."""


@dataclass
class BatchOutcome:
    """What a batch built: the memories whose graph now exists, and the failure, if any."""

    metrics: dict[str, Any] = field(default_factory=dict)
    indexed: list[str] = field(default_factory=list)
    error: BaseException | None = None


class CogneeWorker:
    def __init__(self, workspace: str) -> None:
        from graph.backends.backend import open_backend
        from graph.cognify.worker import cognee_runtime as runtime
        from graph.core.settings import load_settings
        from graph.core.workspace import resolve_workspace

        self.paths = resolve_workspace(workspace)
        self.backend = open_backend(self.paths)
        self.settings = load_settings(self.paths)
        schema = runtime.configure_environment(self.paths, self.settings, self.backend)
        # cognee's import leaves ~880k objects that live as long as the worker, and every full
        # collection walked them again (~0.5 s each): they are frozen out of the collector instead
        # (docs/measurements.md "Test time": a one-memory worker 6.3 -> 5.1 CPU-s).
        gc.disable()
        try:
            import cognee  # noqa: F401  (after the environment is set)
        finally:
            gc.freeze()
            gc.enable()

        if schema is not None:
            runtime.pin_schema(schema)
        if not self.settings.cognee_vectors:
            runtime.install_no_vectors()

        from graph.cognify.worker.llm_calls import install_retry_policy, install_usage_meter
        from graph.search.embedder import Embedder

        embedder = Embedder(self.settings.embedding_model)
        # Loaded before the first batch: cognee's embedding check before a pipeline gives the
        # first embedding 30 s, which a model load on a busy machine overran (LLM_ERROR).
        embedder.load()
        self.embedding = runtime.install_embedding_engine(embedder)
        if self.settings.llm.offline:
            runtime.install_offline_llm()
        install_retry_policy(self.settings.llm_retries)
        self.usage = install_usage_meter()
        self.dataset = runtime.DATASET
        self.projection = self.backend.projection()
        self._projection: Any = None
        self._saved_at: object | None = None

    def _project(self, nodes: list[Any], edges: list[Any], store: Any, memory_ids: list[str]) -> Any | None:
        """Fold the batch into the projection this worker saved last, and save it. The first batch
        of a worker rebuilds it whole (so a restart also repairs a damaged or stale one), as does
        a projection saved by anyone else since. Folding gives the same graph as a rebuild
        (unit-tested). None when another worker saved in between: nothing was saved."""
        from graph.core.graph_projection import batch_subgraph, build_projection, fold_projection, memory_node

        graph, self._projection = self._projection, None  # a fold that fails half-way is not reused
        stamp = self.projection.stamp()
        if graph is None or stamp is None or stamp != self._saved_at:
            graph = build_projection(nodes, edges, store.iter_memories())
        else:
            changed = [
                memory_id
                for memory_id, (status, state) in store.memory_states().items()
                if (node := graph.nodes.get(memory_node(memory_id))) is None
                or (node["status"], node["graph_state"]) != (status, state)
            ]
            memories = [
                m for start in range(0, len(changed), 500) for m in store.get_memories(changed[start : start + 500])
            ]
            fold_projection(graph, *batch_subgraph(nodes, edges, memory_ids), memories)
        saved = self.projection.save(graph, expected=stamp)
        if saved is None:
            return None
        self._projection, self._saved_at = graph, saved
        return graph

    async def _save_projection(self, store: Any, memory_ids: list[str]) -> Any:
        """Read cognee's graph and save the projection; again, whole, if another server's worker
        saved one meanwhile (cognee's graph then holds its batch too)."""
        from cognee.infrastructure.databases.graph import get_graph_engine

        for _ in range(PROJECTION_ATTEMPTS):
            nodes, edges = await (await get_graph_engine()).get_graph_data()
            projection = self._project(nodes, edges, store, memory_ids)
            if projection is not None:
                return projection
        raise RuntimeError(f"the graph projection changed under this worker {PROJECTION_ATTEMPTS} times")

    def _store(self) -> Any:
        return self.backend.memory_store(owner=False)

    async def rebuild_projection(self) -> dict[str, Any]:
        """An empty batch: no memory to build, only the projection to rebuild from cognee's graph
        (the owner asks when it found the projection unreadable)."""
        store = self._store()
        try:
            self._projection = None  # a full rebuild, whatever this worker saved last
            projection = await self._save_projection(store, [])
        finally:
            store.close()
        return {"memories": 0, "graphNodes": projection.number_of_nodes(), "graphEdges": projection.number_of_edges()}

    async def run_batch(self, memory_ids: list[str]) -> dict[str, Any]:
        import uuid

        import cognee
        from cognee.tasks.ingestion.data_item import DataItem

        from graph.cognify.worker.document import render_document

        store = self._store()
        try:
            memories = store.get_memories(memory_ids)

            class QuietItem(DataItem):
                """A DataItem whose repr names its id only: cognee keeps str(data) of each run in
                pipeline_runs.run_info, where the memory's text would outlive a forget."""

                def __repr__(self) -> str:
                    return f"DataItem(data_id={self.data_id})"

            items = [
                QuietItem(
                    data=render_document(m),
                    label=m.topic_id,
                    external_metadata={"memory_id": m.memory_id, "topic_id": m.topic_id, "version": m.version},
                    data_id=uuid.UUID(m.memory_id),
                    literal_text=True,
                )
                for m in memories
            ]
            embed_calls_before = self.embedding.calls
            started = time.perf_counter()
            # One cognee run per batch, however large: its per-run overhead dominates.
            per_batch = max(20, len(items))
            running_before = asyncio.all_tasks()
            try:
                await cognee.add(items, dataset_name=self.dataset, data_per_batch=per_batch)
                await self._check_unfinished(store)
                added = time.perf_counter()
                await cognee.cognify(datasets=[self.dataset], data_per_batch=per_batch, chunks_per_batch=per_batch)
            except Exception:
                await _cancel_leftovers(running_before)
                await self._forget([item.data_id for item in items])
                raise
            cognified = time.perf_counter()
            projection = await self._save_projection(store, memory_ids)
            finished = time.perf_counter()
        finally:
            store.close()
        return {
            "memories": len(memories),
            "addSec": round(added - started, 3),
            "cognifySec": round(cognified - added, 3),
            "projectionSec": round(finished - cognified, 3),
            "embeddingCalls": self.embedding.calls - embed_calls_before,
            "graphNodes": projection.number_of_nodes(),
            "graphEdges": projection.number_of_edges(),
        }

    async def _check_unfinished(self, store: Any) -> None:
        """Refuse to cognify a row flowbaby did not stage: cognify reads the file of every row of the
        dataset not yet built, so each must be a memory of this store whose text lies in cognee's own
        data folder. cognee_state keeps a shipped database out at start; this also holds for one put in
        place later (a `git pull` writes over ignored files)."""
        import cognee
        from cognee.modules.pipelines.models import is_data_item_completed

        from graph.cognify.worker.cognee_state import unstaged_row

        folders = {self.paths.cognee_data, self.paths.cognee_data.resolve()}
        problems: list[str] = []
        for dataset in [d for d in await cognee.datasets.list_datasets() if d.name == self.dataset]:
            for data in await cognee.datasets.list_data(dataset.id):
                status = ((data.pipeline_status or {}).get("cognify_pipeline") or {}).get(str(dataset.id))
                if is_data_item_completed(status):
                    continue
                reasons = [unstaged_row(data.raw_data_location, folder) for folder in folders]
                why = None if None in reasons else reasons[0]
                if why is None and not store.get_memories([str(data.id)]):
                    why = "it is no memory of this store"
                if why is not None:
                    problems.append(f"data row {data.id}: {why}")
        if problems:
            listed = "; ".join(problems[:5])
            raise RuntimeError(f"cognee holds data flowbaby did not stage; nothing was built: {listed}")

    async def build(self, memory_ids: list[str]) -> BatchOutcome:
        """Build under the namespace's build lock on the team backend (build_lock: one cognee
        build per namespace across servers)."""
        lock = self.backend.graph_build_lock()
        if lock is None:
            return await self._build(memory_ids)
        try:
            async with lock as waited:
                outcome = await self._build(memory_ids)
        except Exception as exc:  # the lock's own connection (_build reports its errors)
            traceback.print_exc(file=sys.stderr)
            return BatchOutcome(error=exc)
        if outcome.error is None:
            outcome.metrics["buildLockWaitSec"] = round(waited, 3)
        return outcome

    async def _build(self, memory_ids: list[str]) -> BatchOutcome:
        """Run the batch; if several memories fail together on content (an answer that never
        validates, a cognify error), run them one at a time, so that one memory the LLM
        cannot handle fails alone instead of taking its batch with it. A provider that is
        down (timeouts, 429s) or a model that fails every memory is not retried one by one:
        that would only multiply the wait and the bill."""
        try:
            if not memory_ids:
                return BatchOutcome(metrics=await self.rebuild_projection())
            return BatchOutcome(metrics=await self.run_batch(memory_ids), indexed=list(memory_ids))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            if len(memory_ids) < 2 or _error_code(exc) not in ISOLATED_CODES:
                return BatchOutcome(error=exc)
        outcome = BatchOutcome()
        failures = 0
        for memory_id in memory_ids:
            if failures >= GIVE_UP_AFTER and not outcome.indexed:
                break  # every memory fails: the model, not the memory, is the problem
            try:
                outcome.metrics = await self.run_batch([memory_id])
                outcome.indexed.append(memory_id)
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                failures += 1
                outcome.error = exc
        outcome.metrics["memories"] = len(outcome.indexed)
        return outcome

    async def forget(self, memory_ids: list[str]) -> BatchOutcome:
        """forgetMemory's graph step (INGEST_CONTRACT.md 20.4), under the namespace's build lock on the
        team backend: cognee's own delete of each memory's data item, which removes the nodes and
        edges no other data item holds (shared entities stay); then the projection rebuilt whole
        from what cognee has left. Idempotent. `localGraph` in the metrics: cognee's files are under
        .flowbaby/, and the owner has them rewritten once this worker exits (graph_scrub)."""
        try:
            lock = self.backend.graph_build_lock()
            if lock is None:
                return BatchOutcome(metrics=await self._forget_graph(memory_ids))
            async with lock:
                return BatchOutcome(metrics=await self._forget_graph(memory_ids))
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            return BatchOutcome(error=exc)

    async def _forget_graph(self, memory_ids: list[str]) -> dict[str, Any]:
        import uuid

        import cognee

        started = time.perf_counter()
        deleted = 0
        wanted = {uuid.UUID(m) for m in memory_ids}
        for dataset in [d for d in await cognee.datasets.list_datasets() if d.name == self.dataset]:
            for data in await cognee.datasets.list_data(dataset.id):
                if data.id in wanted:
                    await cognee.datasets.delete_data(dataset_id=dataset.id, data_id=data.id)
                    deleted += 1
        removed_files = await self._remove_data_files()
        scrubbed_runs = await self._scrub_run_records()
        store = self._store()
        try:
            self._projection = None  # rebuilt whole: the forgotten memories' nodes go with cognee's
            projection = await self._save_projection(store, [])
        finally:
            store.close()
        return {
            "forgotten": deleted,
            "removedDataFiles": removed_files,
            "scrubbedRunRecords": scrubbed_runs,
            "localGraph": not self.backend.shared,
            "graphNodes": projection.number_of_nodes(),
            "graphEdges": projection.number_of_edges(),
            "forgetSec": round(time.perf_counter() - started, 3),
        }

    async def _remove_data_files(self) -> int:
        """The text files no row names any more, which cognee's delete misses when its rows name
        another folder (a workspace moved or copied, a space in the path): by name (data_files)."""
        from cognee.infrastructure.databases.relational import get_relational_engine
        from cognee.modules.data.models import Data
        from sqlalchemy import select

        from graph.cognify.worker.data_files import remove_unnamed

        async with get_relational_engine().get_async_session() as session:
            rows = (await session.execute(select(Data.raw_data_location, Data.original_data_location))).all()
        kept = [location for row in rows for location in row]
        return remove_unnamed(self.paths.cognee_data, self.paths.data, kept)

    async def _scrub_run_records(self) -> int:
        """Pipeline runs recorded before QuietItem hold up to 512 characters of their items' text in
        run_info.data, and cognee's delete leaves them: that summary is replaced. Returns the count."""
        from cognee.infrastructure.databases.relational import get_relational_engine
        from cognee.modules.pipelines.models import PipelineRun
        from sqlalchemy import select

        scrubbed = 0
        async with get_relational_engine().get_async_session() as session:
            for run in (await session.execute(select(PipelineRun))).scalars().all():
                info = run.run_info
                if isinstance(info, dict) and isinstance(info.get("data"), str) and "DataItem(data=" in info["data"]:
                    run.run_info = {**info, "data": "[removed: a memory was forgotten]"}
                    scrubbed += 1
            await session.commit()
        return scrubbed

    async def _forget(self, data_ids: list[Any]) -> None:
        """Take a failed batch's items out of cognee's dataset. cognify works on every
        unfinished item of the dataset, so a left-over item would be re-run (and paid for)
        inside later batches while the ledger calls it failed, and an item that always
        fails would fail every later batch. `repair` adds them again."""
        import cognee

        try:
            datasets = [d for d in await cognee.datasets.list_datasets() if d.name == self.dataset]
            for dataset in datasets:
                for data_id in data_ids:
                    await cognee.datasets.delete_data(dataset_id=dataset.id, data_id=data_id)
        except Exception:  # the batch's own failure is what gets reported
            traceback.print_exc(file=sys.stderr)


def _exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes and contexts, and the members of exception groups."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        todo.extend(getattr(current, "exceptions", ()))


def _raised_in_llm_layer(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if any(part in tb.tb_frame.f_code.co_filename for part in LLM_LAYER):
            return True
        tb = tb.tb_next
    return False


def llm_error_code(exc: BaseException) -> BackgroundErrorCode | None:
    """LLM_TIMEOUT, LLM_RATE_LIMITED or LLM_ERROR when an LLM call caused the failure: a
    litellm/OpenAI error anywhere in the chain, or an exception (an unparseable or
    schema-invalid answer) raised inside cognee's LLM layer. None otherwise."""
    import litellm
    import openai

    chain = list(_exception_chain(exc))
    if any(isinstance(e, (litellm.Timeout, openai.APITimeoutError)) for e in chain):
        return BackgroundErrorCode.LLM_TIMEOUT
    if any(isinstance(e, (litellm.RateLimitError, openai.RateLimitError)) for e in chain):
        return BackgroundErrorCode.LLM_RATE_LIMITED
    if any(isinstance(e, openai.APIError) or _raised_in_llm_layer(e) for e in chain):
        return BackgroundErrorCode.LLM_ERROR
    return None


def _error_code(exc: BaseException) -> BackgroundErrorCode:
    code = llm_error_code(exc)
    if code is not None:
        return code
    if "Timeout" in type(exc).__name__:
        return BackgroundErrorCode.BRIDGE_TIMEOUT
    return BackgroundErrorCode.COGNIFY_FAILED


async def _cancel_leftovers(running_before: set[asyncio.Task[Any]]) -> None:
    """Cancel the tasks a failed cognee run left behind. cognee extracts a chunk's graph and its
    summary side by side, and gather() does not cancel the sibling of the one that failed: asleep
    in its retry back-off, it would call the provider again after the failure was reported (unseen
    in the operation's metrics, and paid for) and could write to the graph after the batch was
    forgotten. litellm's logging worker is flushed first and spared, so calls made are counted."""
    from litellm.litellm_core_utils import logging_worker

    await logging_worker.GLOBAL_LOGGING_WORKER.flush()
    leftovers = [
        task
        for task in asyncio.all_tasks() - running_before
        if task is not asyncio.current_task()
        and getattr(getattr(task.get_coro(), "cr_code", None), "co_filename", None) != logging_worker.__file__
    ]
    for task in leftovers:
        task.cancel()
    await asyncio.gather(*leftovers, return_exceptions=True)


def _stdin_lines(loop: asyncio.AbstractEventLoop) -> asyncio.Queue[str]:
    """stdin's lines ("" at its end), read by a daemon thread. A read waiting in the default
    executor kept the worker alive for ever once idle: asyncio.run joins that executor's threads
    before it returns, and the thread waited for a line that the owner never sends."""
    queue: asyncio.Queue[str] = asyncio.Queue()

    def pump() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the worker is exiting
            for line in iter(sys.stdin.readline, ""):
                loop.call_soon_threadsafe(queue.put_nowait, line)
            loop.call_soon_threadsafe(queue.put_nowait, "")

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return queue


async def serve(workspace: str, idle_sec: float) -> None:
    """Serve batches until stdin closes, or until `idle_sec` pass without one (0: never)."""
    die_with_parent()
    os.umask(0o077)  # cognee's databases and files under .flowbaby/ are the user's alone
    channel = take_stdout()
    worker = CogneeWorker(workspace)
    channel.write(json.dumps({"ready": True, "pid": os.getpid()}).encode() + b"\n")
    lines = _stdin_lines(asyncio.get_running_loop())
    while True:
        try:
            line = await asyncio.wait_for(lines.get(), timeout=idle_sec if idle_sec > 0 else None)
        except TimeoutError:
            return
        if not line:
            return
        request = json.loads(line)
        reply: dict[str, Any] = {"batch": request.get("batch")}
        usage_before = await worker.usage.snapshot()
        if "forget" in request:
            outcome = await worker.forget(request["forget"])
        else:
            outcome = await worker.build(request["memoryIds"])
        if outcome.error is None:
            reply.update(ok=True)
        else:  # reported to the owner, which records it in the ledger
            exc = outcome.error
            reply.update(
                ok=False,
                errorCode=_error_code(exc).value,
                error=f"{type(exc).__name__}: {exc}"[:2000],
                indexedMemoryIds=outcome.indexed,
            )
        reply["metrics"] = {**outcome.metrics, **(await worker.usage.snapshot()).minus(usage_before)}
        channel.write(json.dumps(reply).encode() + b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m graph.cognify.worker")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--idle-sec", type=float, default=60.0)
    args = parser.parse_args()
    asyncio.run(serve(args.workspace, args.idle_sec))
    # cognee leaves its database subprocesses and threads behind; do not wait for them.
    sys.stderr.flush()
    os._exit(0)
