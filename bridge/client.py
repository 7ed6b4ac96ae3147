"""A small JSON-RPC client that spawns the bridge as a subprocess.

Used by the demo, the tests and the benchmarks, which all talk to the real bridge
exactly as an editor would: lines on the child's stdin and stdout.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from graph.core.environment import child_base

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BRIDGE_COMMAND = [sys.executable, "-P", "-m", "bridge"]
"""-P: the working folder is not put on sys.path (INGEST_CONTRACT.md 9.1)."""


class BridgeClosed(Exception):
    pass


class BridgeClient:
    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
        stderr: Any = None,
        wrapper: list[str] | None = None,
        command: list[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        """`wrapper`: a command prefix that execs the bridge (tests: a private mount namespace);
        `command`: the bridge's command line before its arguments (default BRIDGE_COMMAND)."""
        child_env = dict(child_base() if env is None else env)
        child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), child_env.get("PYTHONPATH")]))
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [*(wrapper or []), *(command or BRIDGE_COMMAND), "--workspace", str(workspace), *(extra_args or [])],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            env=child_env,
        )
        self._ids = itertools.count(1)
        self._pending: dict[Any, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.notifications: queue.Queue[dict[str, Any]] = queue.Queue()
        self.raw_lines: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw_lines.append(line)
            message = json.loads(line)
            if isinstance(message, dict) and "method" in message and "id" not in message:
                self.notifications.put(message)
                continue
            key = message.get("id") if isinstance(message, dict) else "batch"
            with self._lock:
                waiter = self._pending.pop(key, None) or self._pending.pop("raw", None)
            if waiter is not None:
                waiter.put(message)
        with self._lock:
            for waiter in self._pending.values():
                waiter.put({"closed": True})
            self._pending.clear()

    def send_raw(self, data: bytes, timeout: float = 30.0) -> dict[str, Any]:
        """Write bytes as they are and wait for the next response without a known id."""
        waiter: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._pending["raw"] = waiter
        self._write(data)
        return self._wait(waiter, timeout)

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise BridgeClosed("the bridge has exited") from exc

    def _wait(self, waiter: queue.Queue[dict[str, Any]], timeout: float) -> dict[str, Any]:
        try:
            message = waiter.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no reply within {timeout}s") from None
        if isinstance(message, dict) and message.get("closed"):
            raise BridgeClosed("the bridge closed its stdout")
        return message

    def call(self, method: str, params: Any = None, timeout: float = 60.0) -> dict[str, Any]:
        """Send one request and return the whole JSON-RPC response."""
        request_id = next(self._ids)
        waiter: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._pending[request_id] = waiter
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._write(json.dumps(message).encode() + b"\n")
        return self._wait(waiter, timeout)

    def result(self, method: str, params: Any = None, timeout: float = 60.0) -> dict[str, Any]:
        """Send one request and return its result member."""
        response = self.call(method, params, timeout)
        if "result" not in response:
            raise RuntimeError(f"{method}: protocol error {response.get('error')}")
        result: dict[str, Any] = response["result"]
        return result

    def wait_notification(self, timeout: float) -> dict[str, Any]:
        return self.notifications.get(timeout=timeout)

    def wait_idle(self, timeout: float = 600.0, poll: float = 0.2) -> dict[str, Any]:
        """Poll backgroundStatus until no operation is pending or running."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.result("backgroundStatus", {})
            if not status["counts"].get("pending") and not status["counts"].get("running"):
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"background work still running after {timeout}s: {status['counts']}")
            time.sleep(poll)

    def close(self, timeout: float = 60.0) -> int:
        """Ask for a graceful shutdown and wait for the process to exit."""
        if self.proc.poll() is None:
            with contextlib.suppress(BridgeClosed, TimeoutError):
                self.call("shutdown", {}, timeout=timeout)
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def __enter__(self) -> BridgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
