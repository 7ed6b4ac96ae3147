"""`flowbaby mcp`: the MCP tools over stdio, owning the workspace like the bridge does.

stdout carries MCP messages only: the SDK's stdio transport points fd 1 at stderr while it
serves and writes the protocol to a private duplicate. The service is opened first, so a busy
or missing workspace is an exit code and a line on stderr, before any protocol traffic.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import NoReturn

from api.mcp_tools import build_mcp_server
from graph.api import EXIT_WORKSPACE_UNAVAILABLE, open_service
from graph.core.contract import FlowbabyError


async def serve(workspace: str, rate_limit_per_minute: int | None, shutdown_grace_sec: float) -> int:
    service = await open_service("mcp", workspace, rate_limit_per_minute)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, main.cancel)
    try:
        # Awaited directly, not as a task: nothing has yielded since the service opened, so its
        # background work has not started and the transport takes fd 1 before anything can print.
        server = build_mcp_server(service)
        watching = asyncio.create_task(server.idioms.watch())  # resources/list_changed when memories change
        try:
            await server.run_stdio_async()  # until the client closes stdin
        finally:
            watching.cancel()
    except asyncio.CancelledError:
        main.uncancel()  # a signal: stop serving, then close the workspace cleanly
    finally:
        # Clients close stdin, then signal after about 2 s: a later signal must not cut the close
        # short, so a running graph batch gets the (short) grace and is otherwise parked and handed
        # on to the finisher (graph.owner.finisher), which builds it after this process has gone.
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda: None)
        await service.close(shutdown_grace_sec, hand_on=True)
    return 0


def run(workspace: str, rate_limit_per_minute: int | None, shutdown_grace_sec: float) -> NoReturn:
    """Serve, then leave as soon as the workspace is closed: asyncio.run's exit joins the default
    executor, and a thread still loading the model (seconds on a busy machine) held it past the
    client's kill, about 2 s after it closed stdin. Nothing is left to flush but stderr."""
    loop = asyncio.new_event_loop()
    code = loop.run_until_complete(serve(workspace, rate_limit_per_minute, shutdown_grace_sec))
    sys.stderr.flush()
    os._exit(code)
