"""`/mcp` on the HTTP server, built at its first request.

Importing the MCP SDK is ~0.4 s of the ~1.2 CPU-s a server takes to answer its first health, and
most servers never serve `/mcp` (the one a client's hook starts, the memory browser's), so the
tools are built when the first MCP request comes. The SDK's session manager then runs in a task of
its own until the server stops: its anyio task group must be left by the task that entered it.
That task starts from an empty context, not the first request's (whose namespace and token
contextvars must not become every session's); tool calls run in their own request's context.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import TYPE_CHECKING

from starlette.types import ASGIApp, Receive, Scope, Send

from graph.api import MemoryService

if TYPE_CHECKING:
    from api.mcp_tools import FlowbabyMCP


class LazyMcp:
    """An ASGI app for the `/mcp` route: the SDK's streamable HTTP app, made at the first call."""

    def __init__(self, service: MemoryService, host: str) -> None:
        self._service = service
        self._host = host
        self._app: ASGIApp | None = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._running: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app or await self._start()
        await app(scope, receive, send)

    async def _start(self) -> ASGIApp:
        async with self._lock:
            if self._app is None:
                from api.mcp_tools import build_mcp_server

                mcp = build_mcp_server(self._service)
                app = mcp.streamable_http_app(streamable_http_path="/mcp", host=self._host)
                started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._running = asyncio.create_task(self._run(mcp, started), context=contextvars.Context())
                await started
                self._app = app
        return self._app

    async def _run(self, mcp: FlowbabyMCP, started: asyncio.Future[None]) -> None:
        try:
            async with mcp.session_manager.run():
                watching = asyncio.create_task(mcp.idioms.watch())  # resources/list_changed when memories change
                started.set_result(None)
                try:
                    await self._stop.wait()
                finally:
                    watching.cancel()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            raise

    async def close(self) -> None:
        """End every MCP session (the server is stopping); nothing to do if none ever began."""
        self._stop.set()
        if self._running is not None:
            await asyncio.gather(self._running, return_exceptions=True)
