"""A front's handle on a workspace that another process owns.

Every call goes to the owner's endpoint. When the owner goes away (it exits, or is
killed), the next call makes this process the owner if it can take the lock, or
follows whichever front did, and the call is made again there: no call is lost, and
the lock still guarantees one store writer and one cognee worker. A call that was
in flight when the owner died is re-sent; a staged ingest is durable, so re-sending
at worst stages the same summary again as a newer version of its topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from graph.core.contract import ErrorCode, FlowbabyError, OperationStatus
from graph.core.workspace import WorkspacePaths
from graph.owner.wire import MAX_REPLY_BYTES, encode, endpoint_file, failure_from_wire

log = logging.getLogger("flowbaby.owner")

OperationListener = Callable[[OperationStatus], Awaitable[None]]
Opener = Callable[[], Awaitable[Any]]
"""Opens the workspace in this process (FlowbabyService.open); raises WORKSPACE_BUSY if taken."""

TAKEOVER_DEADLINE_SEC = 60.0
"""How long a call waits for some front to become the new owner after the old one left."""


class OwnerGone(ConnectionError):
    """The owner's endpoint is not there (any more)."""


class _Connection:
    """One socket to the owner: calls matched to replies by id, events to listeners."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_event: OperationListener) -> None:
        self._reader, self._writer = reader, writer
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._on_event = on_event
        self._pump = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, paths: WorkspacePaths, on_event: OperationListener) -> _Connection:
        try:
            record = json.loads(endpoint_file(paths).read_text(encoding="utf-8"))
            reader, writer = await asyncio.open_unix_connection(record["socket"], limit=MAX_REPLY_BYTES)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OwnerGone(f"no owner endpoint: {exc}") from None
        return cls(reader, writer, on_event)

    @property
    def alive(self) -> bool:
        return not self._pump.done()

    async def call(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if not self.alive:
            raise OwnerGone("owner connection closed")
        call_id = next(self._ids)
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = reply
        try:
            self._writer.write(encode({"id": call_id, "method": method, "args": args}))
            await self._writer.drain()
            return await reply
        except ConnectionError as exc:
            raise OwnerGone(str(exc)) from None
        finally:
            self._pending.pop(call_id, None)

    async def _read(self) -> None:
        try:
            while line := await self._reader.readline():
                message = json.loads(line)
                if "event" in message:
                    await self._on_event(OperationStatus.model_validate(message["status"]))
                elif (waiting := self._pending.get(message.get("id"))) is not None and not waiting.done():
                    waiting.set_result(message)
        except (ConnectionError, ValueError, asyncio.LimitOverrunError) as exc:
            log.warning("owner connection broke: %s", exc)
        finally:
            for waiting in self._pending.values():
                if not waiting.done():
                    waiting.set_exception(OwnerGone("the owner went away"))

    async def close(self) -> None:
        self._pump.cancel()
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


class OwnerClient:
    """The service API of a workspace owned elsewhere, until this process owns it."""

    def __init__(self, paths: WorkspacePaths, opener: Opener) -> None:
        self.paths = paths
        self._opener = opener
        self._connection: _Connection | None = None
        self._local: Any = None
        self._listeners: list[OperationListener] = []
        self._switch = asyncio.Lock()
        self._watching = False
        """This front asked for session watching: a process that takes over keeps it going."""

    @classmethod
    async def connect(cls, paths: WorkspacePaths, opener: Opener, deadline_sec: float = 10.0) -> OwnerClient:
        """Reach the current owner; its endpoint may still be starting."""
        client = cls(paths, opener)
        until = time.monotonic() + deadline_sec
        while True:
            try:
                client._connection = await _Connection.open(paths, client._dispatch)
                return client
            except OwnerGone:
                if time.monotonic() > until:
                    raise
                await asyncio.sleep(0.1)

    @property
    def owns_workspace(self) -> bool:
        return self._local is not None

    def add_operation_listener(self, listener: OperationListener) -> None:
        self._listeners.append(listener)
        if self._local is not None:
            self._local.add_operation_listener(listener)

    async def _dispatch(self, status: OperationStatus) -> None:
        for listener in self._listeners:
            await listener(status)

    async def call(self, method: str, **args: Any) -> Any:
        until = time.monotonic() + TAKEOVER_DEADLINE_SEC
        while True:
            if self._local is not None:
                outcome = getattr(self._local, method)(**args)
                return await outcome if asyncio.iscoroutine(outcome) else outcome
            connection = self._connection
            try:
                if connection is None or not connection.alive:
                    raise OwnerGone("not connected")
                reply = await connection.call(method, args)
            except OwnerGone:
                if time.monotonic() > until:
                    raise FlowbabyError(
                        ErrorCode.WORKSPACE_BUSY, "The workspace's owner went away and no front could take over"
                    ) from None
                await self._follow_or_take_over(connection)
                continue
            if "failure" in reply:
                raise failure_from_wire(reply["failure"])
            if "fault" in reply:
                raise RuntimeError(f"owner: {reply['fault']}")
            return reply["result"]

    async def _follow_or_take_over(self, broken: _Connection | None) -> None:
        async with self._switch:
            if self._local is not None or (self._connection is not broken and self._connection is not None):
                return  # another call already switched
            if broken is not None:
                await broken.close()
            self._connection = None
            try:
                self._local = await self._opener()
            except FlowbabyError as error:
                if error.code is not ErrorCode.WORKSPACE_BUSY:
                    raise
                await asyncio.sleep(0.1)  # another front won the lock; follow it once it listens
                with contextlib.suppress(OwnerGone):
                    self._connection = await _Connection.open(self.paths, self._dispatch)
                return
            log.warning("the owner of %s went away: this process (pid %s) owns it now", self.paths.root, os.getpid())
            for listener in self._listeners:
                self._local.add_operation_listener(listener)
            if self._watching:
                await self._local.watch_sessions()

    # -- the service API, forwarded (typed as the fronts' MemoryService) --------------------
    async def health(self) -> dict[str, Any]:
        return await self._dict("health")

    async def ingest(self, params: Any) -> dict[str, Any]:
        return await self._dict("ingest", params=params)

    async def store_memory(self, params: Any) -> dict[str, Any]:
        return await self._dict("store_memory", params=params)

    async def background_status(
        self, params: Any, *, audited: bool = False, agent_name: str | None = None
    ) -> dict[str, Any]:
        return await self._dict("background_status", params=params, audited=audited, agent_name=agent_name)

    async def retrieve(self, params: Any, *, markdown: bool = False, agent_name: str | None = None) -> dict[str, Any]:
        return await self._dict("retrieve", params=params, markdown=markdown, agent_name=agent_name)

    async def index_status(self, *, audited: bool = False, agent_name: str | None = None) -> dict[str, Any]:
        return await self._dict("index_status", audited=audited, agent_name=agent_name)

    async def repair(self, params: Any = None) -> dict[str, Any]:
        return await self._dict("repair", params=params)

    async def memory_context(
        self, topic_id: str, query: str | None = None, hops: int = 1, version: int | None = None
    ) -> dict[str, Any]:
        return await self._dict("memory_context", topic_id=topic_id, query=query, hops=hops, version=version)

    async def memory_versions(self, topic_id: str) -> dict[str, Any]:
        return await self._dict("memory_versions", topic_id=topic_id)

    async def search_chunks(self, params: Any) -> dict[str, Any]:
        return await self._dict("search_chunks", params=params)

    async def graph_snapshot(self, params: Any) -> dict[str, Any]:
        return await self._dict("graph_snapshot", params=params)

    async def graph_summary(self, top: int = 10) -> dict[str, Any]:
        return await self._dict("graph_summary", top=top)

    async def audit_tail(self, params: Any = None) -> dict[str, Any]:
        return await self._dict("audit_tail", params=params)

    async def sessions(self, op: str, params: Any = None) -> dict[str, Any]:
        return await self._dict("sessions", op=op, params=params)

    async def watch_sessions(self) -> dict[str, Any]:
        self._watching = True
        return await self._dict("watch_sessions")

    async def implied_supersessions(self, params: Any = None) -> dict[str, Any]:
        return await self._dict("implied_supersessions", params=params)

    async def confirm_supersession(self, params: Any) -> dict[str, Any]:
        return await self._dict("confirm_supersession", params=params)

    async def _dict(self, method: str, **args: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.call(method, **args)
        return result

    async def close(self, grace_sec: float = 30.0) -> None:
        if self._local is not None:
            await self._local.close(grace_sec)
        if self._connection is not None:
            await self._connection.close()
