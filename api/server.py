"""`flowbaby serve`: the HTTP API on its own, owning the workspace like the bridge does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator

import uvicorn

from api.app import create_app
from api.auth import resolve_token
from graph.core.contract import FlowbabyError
from graph.service import EXIT_WORKSPACE_UNAVAILABLE, MemoryService, is_loopback, open_service

log = logging.getLogger("flowbaby.api")


async def serve(workspace: str, host: str, port: int, allow_remote: bool, rate_limit_per_minute: int | None) -> int:
    if not is_loopback(host) and not allow_remote:
        print(f"flowbaby serve: refusing to bind {host}: pass --allow-remote to serve beyond loopback", file=sys.stderr)
        return 2
    service = await open_service("serve", workspace, rate_limit_per_minute)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        await service.watch_sessions()
        await http_server(service, host, port).serve()
    finally:
        await service.close()
    return 0


def http_server(service: MemoryService, host: str, port: int, *, own_signals: bool = True) -> uvicorn.Server:
    """A uvicorn server for this service; it announces its URL and token source on stderr.
    With own_signals=False (inside the bridge) the caller keeps SIGTERM/SIGINT."""
    token, source = resolve_token(service.paths)
    if not is_loopback(host):
        log.warning(
            "serving on %s, beyond loopback: anyone who can reach it and holds the token can read memories", host
        )
    config = uvicorn.Config(
        create_app(service, token, host),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",  # runs the MCP session manager
        access_log=False,
        log_config=None,
    )
    server = uvicorn.Server(config) if own_signals else _QuietServer(config)
    print(f"flowbaby API on http://{host}:{port} (token: {source})", file=sys.stderr, flush=True)
    log.info("API on http://%s:%d, token from %s", host, port, source)
    return server


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def run(workspace: str, host: str, port: int, allow_remote: bool, rate_limit_per_minute: int | None) -> int:
    return asyncio.run(serve(workspace, host, port, allow_remote, rate_limit_per_minute))
