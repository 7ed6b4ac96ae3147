"""The owner's local endpoint: later fronts on the same workspace work through it.

The process holding the workspace lock (a bridge, `serve` or `mcp`) serves its one
service on a unix socket of mode 0600 and records the socket in `.flowbaby/owner.json`.
Every other front sends its calls here, so there is one store writer, one cognee worker
and one set of throttles and background limits per workspace, whatever the number of
fronts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from graph.core.contract import ContractFailure, OperationStatus
from graph.core.files import write_atomic
from graph.core.methods import OWNER_METHODS, TYPED, request_of
from graph.core.service_protocol import operation_models
from graph.core.workspace import WorkspacePaths
from graph.owner.wire import (
    MAX_LINE_BYTES,
    encode,
    endpoint_file,
    failure_to_wire,
    peer_uid,
    socket_path,
)

log = logging.getLogger("flowbaby.owner")


async def _argument(service: Any, method: str, model: type[BaseModel], value: Any) -> BaseModel:
    """A typed operation's argument from its JSON, validated as the operation's fronts validate it (so a
    front that sends plain JSON, the command line, gets the contract's error, audited where the row says),
    else rebuilt as sent."""
    row = TYPED.get(method)
    if row is not None:
        request: BaseModel = await request_of(service, row, value)
        return request
    return model.model_validate(value, strict=False)


class OwnerEndpoint:
    def __init__(self, service: Any, paths: WorkspacePaths, on_front: Callable[[], None] | None = None) -> None:
        """on_front: called as each front connects (a one-call command's service then runs the
        graph work the fronts working through it expect)."""
        self._service = service
        self._on_front = on_front
        self._paths = paths
        self._socket = socket_path(paths)
        self._server: asyncio.Server | None = None
        self._peers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.last_call = 0.0
        """time.monotonic() of the last call a front made (a started service's idle clock)."""

    @property
    def fronts(self) -> int:
        """Fronts connected now (a bridge or MCP server working through this owner)."""
        return len(self._peers)

    async def start(self) -> None:
        """Listen, then publish the endpoint. The caller holds the workspace lock, so a
        socket left at the path belongs to a dead owner and is replaced."""
        with contextlib.suppress(FileNotFoundError):
            self._socket.unlink()
        previous = os.umask(0o177)  # the socket is born 0600: no window where others may connect
        try:
            self._server = await asyncio.start_unix_server(self._serve, path=str(self._socket), limit=MAX_LINE_BYTES)
        finally:
            os.umask(previous)
        record = endpoint_file(self._paths)
        write_atomic(record, json.dumps({"pid": os.getpid(), "socket": str(self._socket)}))
        self._service.add_operation_listener(self._broadcast)
        log.info("owner endpoint on %s", self._socket)

    async def close(self) -> None:
        """Stop answering: connected fronts see the connection end and take the workspace over."""
        if self._server is None:
            return
        self._server.close()
        for peer in list(self._peers):
            peer.close()
        for task in list(self._tasks):
            task.cancel()
        record = endpoint_file(self._paths)
        with contextlib.suppress(FileNotFoundError, ValueError, OSError):
            if json.loads(record.read_text(encoding="utf-8")).get("pid") == os.getpid():
                record.unlink()
                self._socket.unlink()
        self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        uid = peer_uid(writer.get_extra_info("socket"))
        if uid is not None and uid != os.getuid():  # only root could have reached a 0600 socket
            log.warning("refused a front of uid %s", uid)
            writer.close()
            return
        self._peers.add(writer)
        if self._on_front is not None:
            self._on_front()
        try:
            while line := await reader.readline():
                task = asyncio.create_task(self._answer(line, writer))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (ConnectionError, ValueError, asyncio.LimitOverrunError) as exc:
            log.warning("front connection dropped: %s", exc)
        finally:
            self._peers.discard(writer)
            writer.close()

    async def _answer(self, line: bytes, writer: asyncio.StreamWriter) -> None:
        self.last_call = time.monotonic()
        reply: dict[str, Any]
        try:
            request = json.loads(line)
            call_id, method, args = request["id"], request["method"], request.get("args") or {}
        except (ValueError, KeyError, TypeError) as exc:
            reply = {"id": None, "fault": f"bad request: {exc}"}
        else:
            reply = {"id": call_id}
            if method not in OWNER_METHODS:
                reply["fault"] = f"unknown method {method!r}"
            else:
                try:
                    models = operation_models(method)[0]
                    args = {
                        k: await _argument(self._service, method, models[k], v) if k in models else v
                        for k, v in args.items()
                    }
                    outcome = getattr(self._service, method)(**args)
                    result = await outcome if asyncio.iscoroutine(outcome) else outcome
                    reply["result"] = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
                except ContractFailure as error:
                    reply["failure"] = failure_to_wire(error)
                except Exception as exc:  # one front's bad call never takes the owner down
                    log.exception("%s for a front failed", method)
                    reply["fault"] = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(ConnectionError):
            writer.write(encode(reply))
            await writer.drain()

    async def _broadcast(self, status: OperationStatus) -> None:
        event = encode({"event": "operationEnded", "status": status.model_dump(mode="json")})
        for peer in list(self._peers):
            with contextlib.suppress(ConnectionError):
                peer.write(event)
