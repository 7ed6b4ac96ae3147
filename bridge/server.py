"""The JSON-RPC 2.0 stdio bridge: one UTF-8 JSON object per line on stdin and stdout.

stdout carries protocol messages only: at start the bridge keeps a private duplicate
of fd 1 for itself and points fd 1 at stderr, so a print() anywhere in a library
can never corrupt the protocol. Contract failures are results with success:false;
the JSON-RPC error member is kept for protocol faults.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO, Protocol

from pydantic import BaseModel

import graph.core.jsonwire as jsonwire
from graph.api import (
    EXIT_WORKSPACE_UNAVAILABLE,
    MemoryService,
    open_service,
    start_watching,
    take_stdout,
)
from graph.core.contract import (
    ContractFailure,
    ErrorCode,
    FlowbabyError,
    OperationStatus,
    RetrievalError,
    RetrievalErrorCode,
)
from graph.core.methods import BRIDGE_METHODS, RETRIEVAL_METHODS, Method, request_of


class HttpServer(Protocol):
    """What the bridge needs of the HTTP API's server (uvicorn.Server) when it serves both."""

    should_exit: bool

    async def serve(self) -> None: ...


HttpServerFactory = Callable[[MemoryService], HttpServer]
"""Builds the HTTP server for the open service; raises FlowbabyError if it cannot start safely."""

log = logging.getLogger("flowbaby.bridge")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR = -32603
MAX_LINE_BYTES = 4 * 1024 * 1024
"""A line longer than this is answered with INVALID_REQUEST without being parsed."""
SIGNAL_WAIT_SEC = 1.0
"""After SIGTERM/SIGINT: what requests in flight get before the workspace is closed."""
SIGNAL_GRACE_SEC = 0.5
"""After SIGTERM/SIGINT: what a running graph batch gets before it is parked (the next owner re-runs it)."""
MAX_BATCH = 100
"""A batch with more calls is answered with one INVALID_REQUEST, none of them run (85,000 calls
once held the event loop for 9.8 s)."""


class ProtocolWriter:
    """Serialises whole lines onto the private stdout duplicate."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        # A lone surrogate echoed back (e.g. in an unknown method name) becomes its JSON
        # escape \\udXXX, so the line stays valid UTF-8 and valid JSON.
        try:
            text = jsonwire.dumps(message)
        except ValueError:  # a NaN or Infinity in a result: answer an error, never write non-JSON
            log.exception("a reply was not representable as JSON")
            request_id = message.get("id") if isinstance(message, dict) else None
            text = jsonwire.dumps(_error(request_id, INTERNAL_ERROR, "Internal error: the reply was not valid JSON"))
        data = text.encode("utf-8", "backslashreplace") + b"\n"
        with self._lock:
            self._stream.write(data)
            self._stream.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class Bridge:
    def __init__(self, service: MemoryService, writer: ProtocolWriter, request_timeout_sec: float) -> None:
        self.service = service
        self.writer = writer
        self.request_timeout = request_timeout_sec
        self.stopping = asyncio.Event()
        self.methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            name: _bridge_call(service, method) for name, method in BRIDGE_METHODS.items()
        }
        self.methods["shutdown"] = self._shutdown
        service.add_operation_listener(self._on_operation_end)

    async def _on_operation_end(self, status: OperationStatus) -> None:
        params: dict[str, Any] = {"operationId": status.operationId, "status": status.status}
        if status.errorCode:
            params["errorCode"] = status.errorCode
        self.writer.notify("backgroundOperationCompleted", params)

    async def _shutdown(self, params: dict[str, Any]) -> dict[str, Any]:
        self.stopping.set()
        return {"success": True, "message": "Shutting down: running work finishes or is parked for re-run"}

    async def handle_line(self, raw: bytes) -> None:
        if len(raw) > MAX_LINE_BYTES:
            self.writer.send(_error(None, INVALID_REQUEST, f"Request line exceeds {MAX_LINE_BYTES} bytes"))
            return
        text = raw.strip()
        if not text:
            return
        try:
            message = jsonwire.loads(text)
        except jsonwire.JSONInputError as exc:
            self.writer.send(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
            return
        if isinstance(message, list):
            if not message:
                self.writer.send(_error(None, INVALID_REQUEST, "Invalid Request: empty batch"))
                return
            if len(message) > MAX_BATCH:
                self.writer.send(_error(None, INVALID_REQUEST, f"Invalid Request: a batch holds at most {MAX_BATCH}"))
                return
            replies = await asyncio.gather(*(self.dispatch(item) for item in message))
            batch = [reply for reply in replies if reply is not None]
            if batch:
                self.writer.send(batch)  # type: ignore[arg-type]
            return
        reply = await self.dispatch(message)
        if reply is not None:
            self.writer.send(reply)

    async def dispatch(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "Invalid Request: expected a JSON object")
        request_id = message.get("id")
        is_notification = "id" not in message
        if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return _error(
                request_id if _valid_id(request_id) else None,
                INVALID_REQUEST,
                'Invalid Request: needs "jsonrpc": "2.0" and a string "method"',
            )
        if not _valid_id(request_id):
            return _error(None, INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
        method = self.methods.get(message["method"])
        if method is None:
            return (
                None
                if is_notification
                else _error(request_id, METHOD_NOT_FOUND, f"Method not found: {message['method']}")
            )
        params = message.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return (
                None
                if is_notification
                else _error(request_id, INVALID_PARAMS, "Invalid params: params must be an object")
            )
        result = await self._call(message["method"], method, params)
        return None if is_notification else {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _call(self, name: str, method: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            outcome = method(params)
            if asyncio.iscoroutine(outcome):
                outcome = await asyncio.wait_for(outcome, self.request_timeout)
            if isinstance(outcome, BaseModel):  # a typed operation's reply
                outcome = outcome.model_dump(mode="json")
            result: dict[str, Any] = outcome
            return result
        except ContractFailure as error:
            return error.to_response()
        except TimeoutError:
            return self._failure(
                name, ErrorCode.BRIDGE_TIMEOUT, f"{name} exceeded its {self.request_timeout:.0f}s deadline"
            )
        except Exception as exc:  # never let one request take the bridge down
            log.exception("%s failed after %.1f ms", name, (time.perf_counter() - started) * 1000)
            return self._failure(name, ErrorCode.FLOWBABY_ERROR, f"{name} failed: {type(exc).__name__}: {exc}")

    @staticmethod
    def _failure(method: str, code: ErrorCode, message: str) -> dict[str, Any]:
        """A bridge-level failure in the shape the method's callers already parse."""
        if method in RETRIEVAL_METHODS:
            return RetrievalError(RetrievalErrorCode(code.value), message).to_response()
        return FlowbabyError(code, message).to_response()


def _bridge_call(service: MemoryService, method: Method) -> Callable[[dict[str, Any]], Any]:
    """The bridge's call of one row of the method table (graph.core.methods)."""
    answer = getattr(service, method.service)
    if method.parse is not None:

        async def typed(params: dict[str, Any]) -> Any:
            return await answer(*method.args, await request_of(service, method, params), **method.kwargs)

        return typed
    if method.params:
        return lambda params: answer(*method.args, params, **method.kwargs)
    return lambda params: answer(*method.args, **method.kwargs)


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def _read_lines(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None]) -> None:
    """stdin reader thread: whole lines, with an over-long line cut down to a marker."""
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline(MAX_LINE_BYTES + 1)
        if not line:
            break
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drop the rest of the over-long line
                rest = stdin.readline(1024 * 1024)
                if not rest or rest.endswith(b"\n"):
                    break
        loop.call_soon_threadsafe(queue.put_nowait, line)
    loop.call_soon_threadsafe(queue.put_nowait, None)


async def serve(
    workspace: str,
    request_timeout_sec: float,
    shutdown_grace_sec: float,
    rate_limit_per_minute: int | None = None,
    http: HttpServerFactory | None = None,
) -> int:
    """Serve JSON-RPC on stdio until shutdown; with `http` (the command line's factory of the HTTP
    API's server) also the HTTP API, from this same process, so the two never contend for the workspace."""
    writer = ProtocolWriter(take_stdout())
    service = await open_service("bridge", workspace, rate_limit_per_minute)
    if isinstance(service, FlowbabyError):
        writer.notify("bridgeUnavailable", service.to_response())
        return EXIT_WORKSPACE_UNAVAILABLE
    bridge = Bridge(service, writer, request_timeout_sec)
    await start_watching(service, "bridge")
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()

    def on_signal() -> None:
        signalled.set()
        bridge.stopping.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()
    threading.Thread(target=_read_lines, args=(loop, lines), daemon=True, name="stdin").start()
    in_flight: set[asyncio.Task[None]] = set()

    async def pump() -> None:
        while (line := await lines.get()) is not None:
            task = asyncio.create_task(bridge.handle_line(line))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        bridge.stopping.set()

    pump_task = asyncio.create_task(pump())
    http_server = http_task = None
    if http is not None:
        try:
            http_server = http(service)
        except FlowbabyError as error:  # a refused token file: the HTTP side cannot start safely
            writer.notify("bridgeUnavailable", error.to_response())
            await service.close(shutdown_grace_sec)
            return EXIT_WORKSPACE_UNAVAILABLE
        http_task = asyncio.create_task(http_server.serve())
        http_task.add_done_callback(lambda _: bridge.stopping.set())  # a port clash stops the bridge too
    await bridge.stopping.wait()
    pump_task.cancel()
    # A signal (systemd, Docker, an editor's kill) gets the exit within 5 s: requests in flight get
    # SIGNAL_WAIT_SEC, a running graph batch SIGNAL_GRACE_SEC, then it is parked for the next owner.
    wait = min(request_timeout_sec, SIGNAL_WAIT_SEC) if signalled.is_set() else request_timeout_sec
    grace = min(shutdown_grace_sec, SIGNAL_GRACE_SEC) if signalled.is_set() else shutdown_grace_sec
    if http_server is not None and http_task is not None:
        http_server.should_exit = True
        await asyncio.wait([http_task], timeout=wait)
    if in_flight:
        await asyncio.wait(in_flight, timeout=wait)
    await service.close(grace, hand_on=True)
    return 0
