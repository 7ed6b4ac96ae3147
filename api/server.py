"""`flowbaby serve`: the HTTP API on its own, owning the workspace like the bridge does."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import sys

import uvicorn

from api.app import create_app
from api.auth import resolve_token
from graph.contract import FlowbabyError

log = logging.getLogger("flowbaby.api")
EXIT_WORKSPACE_UNAVAILABLE = 3


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve(workspace: str, host: str, port: int, allow_remote: bool) -> int:
    from graph.service import FlowbabyService

    if not is_loopback(host) and not allow_remote:
        print(f"flowbaby serve: refusing to bind {host}: pass --allow-remote to serve beyond loopback", file=sys.stderr)
        return 2
    try:
        service = await FlowbabyService.open(workspace)
    except FlowbabyError as error:
        print(f"flowbaby serve: {error.code.value}: {error.message}", file=sys.stderr)
        return EXIT_WORKSPACE_UNAVAILABLE
    token, source = resolve_token(service.paths)
    if not is_loopback(host):
        log.warning("serving on %s, beyond loopback: anyone who can reach it and holds the token can read memories", host)
    config = uvicorn.Config(create_app(service, token), host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    print(f"flowbaby API on http://{host}:{port} (token: {source})", file=sys.stderr, flush=True)
    log.info("API on http://%s:%d, token from %s", host, port, source)
    try:
        await server.serve()
    finally:
        await service.close()
    return 0


def run(workspace: str, host: str, port: int, allow_remote: bool) -> int:
    return asyncio.run(serve(workspace, host, port, allow_remote))
