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
from typing import Any, BinaryIO

from bridge import jsonwire
from graph.core.contract import (
    ContractFailure,
    ErrorCode,
    FlowbabyError,
    OperationStatus,
    RetrievalError,
    RetrievalErrorCode,
)
from graph.service import EXIT_WORKSPACE_UNAVAILABLE, MemoryService, SessionOp, open_service, take_stdout

log = logging.getLogger("flowbaby.bridge")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
INTERNAL_ERROR = -32603
MAX_LINE_BYTES = 4 * 1024 * 1024
"""A line longer than this is answered with INVALID_REQUEST without being parsed."""
MAX_BATCH = 100
"""A batch with more calls is answered with one INVALID_REQUEST, none of them run (85,000 calls
once held the event loop for 9.8 s)."""
RETRIEVAL_METHODS = {"retrieveForAgent", "retrieveMemory"}
"""Methods whose failures use the retrieval shape (error = code, message = text)."""


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
            "health": lambda params: service.health(),
            "ingestForAgent": service.ingest,
            "storeMemory": service.store_memory,
            "backgroundStatus": service.background_status,
            "retrieveForAgent": service.retrieve,
            "retrieveMemory": lambda params: service.retrieve(params, markdown=True),
            "graphStats": lambda params: service.graph_summary(),
            "graphSnapshot": service.graph_snapshot,
            "indexStatus": lambda params: service.index_status(),
            "repair": service.repair,
            **{
                f"sessions{op[0].upper()}{op[1:].replace('_all', 'All')}": _sessions_method(service, op)
                for op in SESSION_METHODS
            },
            "listMemories": service.list_memories,
            "getMemory": service.get_memory,
            "forgetMemory": service.forget_memory,
            "exportMemories": service.export_memories,
            "importMemories": service.import_memories,
            "listImpliedSupersessions": service.implied_supersessions,
            "confirmSupersession": service.confirm_supersession,
            "shutdown": self._shutdown,
        }
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


SESSION_METHODS: tuple[SessionOp, ...] = (
    "list",
    "current",
    "status",
    "search",
    "search_all",
    "context",
    "import",
    "update",
    "repair",
)
"""Bridge methods sessionsList, sessionsCurrent, ... sessionsSearchAll, ... over graph/sessions."""


def _sessions_method(service: MemoryService, op: SessionOp) -> Callable[[dict[str, Any]], Any]:
    return lambda params: service.sessions(op, params)


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
    http: tuple[str, int] | None = None,
    tls: tuple[str, str] | None = None,
) -> int:
    """Serve JSON-RPC on stdio until shutdown; with `http=(host, port)` also the HTTP API,
    from this same process, so the two never contend for the workspace."""
    writer = ProtocolWriter(take_stdout())
    service = await open_service("bridge", workspace, rate_limit_per_minute)
    if isinstance(service, FlowbabyError):
        writer.notify("bridgeUnavailable", service.to_response())
        return EXIT_WORKSPACE_UNAVAILABLE
    bridge = Bridge(service, writer, request_timeout_sec)
    await service.watch_sessions()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, bridge.stopping.set)
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
        from api.server import http_server as make_http_server

        try:
            http_server = make_http_server(service, *http, own_signals=False, tls=tls)
        except FlowbabyError as error:  # a refused token file: the HTTP side cannot start safely
            writer.notify("bridgeUnavailable", error.to_response())
            await service.close(shutdown_grace_sec)
            return EXIT_WORKSPACE_UNAVAILABLE
        http_task = asyncio.create_task(http_server.serve())
        http_task.add_done_callback(lambda _: bridge.stopping.set())  # a port clash stops the bridge too
    await bridge.stopping.wait()
    pump_task.cancel()
    if http_server is not None and http_task is not None:
        http_server.should_exit = True
        await asyncio.wait([http_task], timeout=request_timeout_sec)
    if in_flight:
        await asyncio.wait(in_flight, timeout=request_timeout_sec)
    await service.close(shutdown_grace_sec)
    return 0
