"""The owning process's handle on the cognee worker child (see graph.cognify.worker).

Starts the worker on first use and again after it exits idle or crashes, sends one
batch, and waits for its reply under a deadline. A deadline or a crash kills the
child, so a stuck cognee can never hang the owner.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

from graph.core.child_python import child_env, module_command
from graph.core.contract import BackgroundErrorCode
from graph.core.environment import child_base
from graph.core.workspace import open_no_follow

log = logging.getLogger("flowbaby.worker")


class WorkerFailure(Exception):
    def __init__(
        self,
        code: BackgroundErrorCode | str,
        message: str,
        metrics: dict[str, Any] | None = None,
        indexed: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code.value if isinstance(code, BackgroundErrorCode) else code
        self.message = message
        self.metrics = metrics or {}
        """What the failed batch still cost (the worker's LLM usage), when the worker replied."""
        self.indexed = indexed or []
        """Memories whose graph was built all the same (the worker retried them one by one)."""


class WorkerClient:
    def __init__(self, workspace: Path, log_file: Path, idle_sec: float, start_timeout_sec: float = 180.0) -> None:
        self._workspace = workspace
        self._log_file = log_file
        self._idle_sec = idle_sec
        self._start_timeout = start_timeout_sec
        self._proc: asyncio.subprocess.Process | None = None
        self._batches = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc and self._proc.returncode is None else None

    async def _ensure_started(self) -> asyncio.subprocess.Process:
        if self._proc is not None and self._proc.returncode is None:
            return self._proc
        if self._log_file.exists() and self._log_file.stat().st_size > 5 * 1024 * 1024:
            os.replace(self._log_file, self._log_file.with_suffix(".log.1"))  # rotate at each start
        log_handle = open(self._log_file, "ab", opener=open_no_follow)  # noqa: SIM115 (the child keeps it as stderr)
        env = child_env(dict(child_base(), PYTHONUNBUFFERED="1"))
        self._proc = await asyncio.create_subprocess_exec(
            *module_command(
                "graph.cognify.worker", "--workspace", str(self._workspace), "--idle-sec", str(self._idle_sec)
            ),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log_handle,
            env=env,
            limit=16 * 1024 * 1024,
            start_new_session=True,  # out of reach of signals to our group: graph.core.stdio.die_with_parent
        )
        log_handle.close()
        try:
            ready = await asyncio.wait_for(self._proc.stdout.readline(), self._start_timeout)  # type: ignore[union-attr]
        except TimeoutError:
            await self.kill()
            raise WorkerFailure(BackgroundErrorCode.BRIDGE_TIMEOUT, "The cognee worker did not start in time") from None
        if not ready:
            code = await self._proc.wait()
            self._proc = None
            raise WorkerFailure(
                BackgroundErrorCode.WORKER_CRASHED,
                f"The cognee worker exited at start-up (code {code}); see logs/worker.log",
            )
        log.info("cognee worker started (pid %s)", json.loads(ready).get("pid"))
        return self._proc

    async def run_batch(self, memory_ids: list[str], timeout_sec: float) -> dict[str, Any]:
        """Send one batch and return the worker's metrics, or raise WorkerFailure."""
        return await self._request({"memoryIds": memory_ids}, timeout_sec)

    async def forget(self, memory_ids: list[str], timeout_sec: float) -> dict[str, Any]:
        """The worker deletes these memories from cognee (its own delete: their data items, and the
        nodes and edges no other memory holds) and rebuilds the projection; idempotent. When cognee's
        databases are local files, the worker is then stopped (closing them) and graph_scrub rewrites
        them, so no freed page keeps the text; the next batch starts a new worker. Metrics, or
        WorkerFailure."""
        metrics = await self._request({"forget": memory_ids}, timeout_sec)
        if metrics.pop("localGraph", False):
            await self.stop()
            metrics.update(await self._scrub(timeout_sec))
        return metrics

    async def _scrub(self, timeout_sec: float) -> dict[str, Any]:
        env = child_env(dict(child_base(), PYTHONUNBUFFERED="1"))
        with open(self._log_file, "ab", opener=open_no_follow) as log_handle:
            proc = await asyncio.create_subprocess_exec(
                *module_command("graph.cognify.worker.graph_scrub", "--workspace", str(self._workspace)),
                stdout=asyncio.subprocess.PIPE,
                stderr=log_handle,
                env=env,
            )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout_sec)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise WorkerFailure(BackgroundErrorCode.BRIDGE_TIMEOUT, "Rewriting cognee's files timed out") from None
        if proc.returncode != 0:
            raise WorkerFailure(
                BackgroundErrorCode.FLOWBABY_ERROR,
                f"Rewriting cognee's files failed (exit code {proc.returncode}); see logs/worker.log",
            )
        result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
        return result

    async def _request(self, body: dict[str, Any], timeout_sec: float) -> dict[str, Any]:
        proc = await self._ensure_started()
        self._batches += 1
        batch = f"b{self._batches}"
        request = json.dumps({"batch": batch, **body}) + "\n"
        try:
            proc.stdin.write(request.encode())  # type: ignore[union-attr]
            await proc.stdin.drain()  # type: ignore[union-attr]
            line = await asyncio.wait_for(proc.stdout.readline(), timeout_sec)  # type: ignore[union-attr]
        except TimeoutError:
            await self.kill()
            raise WorkerFailure(
                BackgroundErrorCode.BRIDGE_TIMEOUT, f"Graph building exceeded its {timeout_sec:.0f}s deadline"
            ) from None
        except (BrokenPipeError, ConnectionResetError):
            line = b""
        if not line:
            code = await proc.wait()
            self._proc = None
            raise WorkerFailure(
                BackgroundErrorCode.WORKER_CRASHED, f"The cognee worker died during the batch (exit code {code})"
            )
        reply = json.loads(line)
        if not reply.get("ok"):
            raise WorkerFailure(
                reply.get("errorCode", BackgroundErrorCode.FLOWBABY_ERROR.value),
                reply.get("error", "unknown error"),
                reply.get("metrics"),
                reply.get("indexedMemoryIds"),
            )
        metrics: dict[str, Any] = reply["metrics"]
        return metrics

    async def stop(self, grace_sec: float = 5.0) -> None:
        """Close the worker's stdin (it exits cleanly), killing it after a grace period."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.stdin.close()  # type: ignore[union-attr]
            await asyncio.wait_for(proc.wait(), grace_sec)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            await self.kill()
        self._proc = None

    async def kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()
        self._proc = None
