"""The MCP idioms besides tools (INGEST_CONTRACT.md 12.4): every memory a resource, the briefing a
prompt, and `logging/setLevel`, so a client can show and attach memory without a tool call.

Built on the `mcp` SDK: the resource template and the prompt are MCPServer's, `resources/list` (the
SDK's lists no dynamic resources and ignores the cursor) and `logging/setLevel` are lowlevel request
handlers, and a list change goes out the two ways the two protocol eras take it: to every handshake
session as `notifications/resources/list_changed`, and to `subscriptions/listen` streams (2026-07-28)
through the server's subscription bus. A change is seen by a fingerprint of the memory list (count
and newest stamp), polled while the server runs, so stores by other fronts and forgets count too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from typing import Any
from urllib.parse import quote

import anyio
from mcp.server import MCPServer, NotificationOptions
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.resources import ResourceSecurity
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    EmptyResult,
    ListResourcesResult,
    LoggingLevel,
    PaginatedRequestParams,
    Resource,
    SetLevelRequestParams,
)

from graph.api import MemoryService, memory_whole
from graph.core.contract import (
    BriefingRequest,
    ContractFailure,
    GetMemoryRequest,
    ListMemoriesRequest,
    validate_request,
)

log = logging.getLogger("flowbaby.mcp")

SCHEME = "memory://"
PAGE = 50
"""Resources per resources/list page (listMemories' default limit)."""
WATCH_SEC = 2.0
"""How often the memory list's fingerprint is read while the server runs."""
RESOURCE_NOT_FOUND = -32002
"""The MCP specification's error code for resources/read of an unknown URI."""
LEVELS: tuple[LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LEVEL: LoggingLevel = "warning"
MAX_LEVELS = 1000
"""HTTP sessions whose chosen level, and whose handshake, are kept (the oldest is forgotten first)."""


def memory_uri(topic_id: str) -> str:
    return SCHEME + quote(topic_id, safe="")


class Idioms:
    """Resources, the briefing prompt, list-change notices and client log levels over one service."""

    def __init__(self, service: MemoryService, bus: InMemorySubscriptionBus) -> None:
        self.service = service
        self.bus = bus
        self.sessions: dict[ServerSession, None] = {}
        """Handshake sessions, oldest first: one that has gone is dropped when a notice to it fails."""
        self.levels: OrderedDict[str, LoggingLevel] = OrderedDict()

    def install(self, server: MCPServer[Any]) -> None:
        low = server._lowlevel_server  # the SDK's documented way to add a request handler MCPServer lacks
        low.add_request_handler("resources/list", PaginatedRequestParams, self.list_resources)
        low.add_request_handler("logging/setLevel", SetLevelRequestParams, self.set_level)
        low.middleware.append(self.remember_session)
        options = NotificationOptions(resources_changed=True)
        plain = low.create_initialization_options
        low.create_initialization_options = lambda notification_options=None, *a, **k: plain(  # type: ignore[method-assign]
            notification_options or options, *a, **k
        )

        @server.resource(
            "memory://{topicId}",
            name="memory",
            title="Flowbaby memory",
            description="One stored memory, whole (its newest version), by topicId",
            mime_type="text/markdown",
            # A topicId is a name looked up whole, not a path: `..`, a leading `/` or `C:` are its own text.
            security=ResourceSecurity(exempt_params={"topicId"}),
        )
        async def read_memory(topicId: str) -> str:
            # The SDK percent-decodes the URI's topicId once (memory_uri encoded it once): decoding it again
            # would read `a%2Fb` as `a/b`.
            try:
                got = await self.service.get_memory(GetMemoryRequest(topicId=topicId))
            except ContractFailure as error:
                code = RESOURCE_NOT_FOUND if error.code.value == "NOT_FOUND" else INVALID_PARAMS
                raise MCPError(code=code, message=error.message, data={"uri": memory_uri(topicId)}) from None
            return memory_whole(got.model_dump(mode="json"))

        @server.prompt(
            name="flowbaby_briefing",
            title="Flowbaby briefing",
            description="This workspace's current decisions, open questions and next steps, one line per memory",
        )
        async def briefing() -> str:
            reply = await self.service.briefing(BriefingRequest(maxTokens=800))
            return reply.text or "Flowbaby holds no current memory for this workspace yet."

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListResourcesResult:
        """One page of memories, newest first; nextCursor is listMemories'."""
        request: dict[str, Any] = {"limit": PAGE} | ({"cursor": params.cursor} if params.cursor else {})
        try:
            page = await self.service.list_memories(validate_request(ListMemoriesRequest, request))
        except ContractFailure as error:
            raise MCPError(code=INVALID_PARAMS, message=error.message) from None
        resources = [
            Resource(
                uri=memory_uri(item["topicId"]),
                name=item["topicId"],
                title=item["topic"],
                description=f"{item['status']}, {item['updatedAt'][:10]}: {item['preview']}",
                mime_type="text/markdown",
            )
            for item in page.model_dump(mode="json")["memories"]
        ]
        return ListResourcesResult(resources=resources, next_cursor=page.nextCursor)

    async def set_level(self, ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
        key = _connection_key(ctx)
        self.levels[key] = params.level
        self.levels.move_to_end(key)
        while len(self.levels) > MAX_LEVELS:
            self.levels.popitem(last=False)
        return EmptyResult()

    async def log(self, ctx: ServerRequestContext[Any, Any], level: LoggingLevel, data: Any) -> None:
        """A `notifications/message` to this request's client, if at or above the level it set."""
        chosen = self.levels.get(_connection_key(ctx), DEFAULT_LEVEL)
        if LEVELS.index(level) < LEVELS.index(chosen):
            return
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # the client left
            await ctx.session.send_log_message(level, data, logger="flowbaby", related_request_id=ctx.request_id)

    async def remember_session(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: keep each handshake session, to tell it when the memory list changes."""
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self.sessions[ctx.session] = None
            while len(self.sessions) > MAX_LEVELS:  # sessions that ended without a change since
                del self.sessions[next(iter(self.sessions))]
        return result

    async def changed(self) -> None:
        """Tell every client the resource list changed; forget sessions that have gone."""
        await self.bus.publish(ResourcesListChanged())
        for session in list(self.sessions):
            try:
                await session.send_resource_list_changed()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                self.sessions.pop(session, None)
            except Exception:  # a transport's own failure: that session is gone for us
                log.debug("list_changed to a session failed", exc_info=True)
                self.sessions.pop(session, None)

    async def watch(self, interval: float = WATCH_SEC) -> None:
        """Until cancelled: notice when memories are stored, replaced or forgotten, by anyone."""
        seen = await self._fingerprint()
        while True:
            await asyncio.sleep(interval)
            now = await self._fingerprint()
            if now is None:
                continue
            if seen is not None and now != seen:
                await self.changed()
            seen = now

    async def _fingerprint(self) -> tuple[Any, str] | None:
        """How many memories there are and which was staged last: a store, a new version or a forget moves it."""
        try:
            health = await self.service.health()
            page = await self.service.list_memories(ListMemoriesRequest(limit=1, allVersions=True))
        except Exception:  # an owner leaving, a team server down: the next poll tries again
            log.debug("the memory list could not be read", exc_info=True)
            return None
        newest = page.memories[0] if page.memories else None
        return health.memories, f"{newest and newest.memoryId}:{newest and newest.stagedAt}"


def _connection_key(ctx: ServerRequestContext[Any, Any]) -> str:
    """The HTTP session's id (`Mcp-Session-Id`), or "" over stdio (one client per process)."""
    headers = getattr(ctx.request, "headers", None)
    return str(headers.get("mcp-session-id") or "") if headers is not None else ""
