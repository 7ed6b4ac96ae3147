"""`flowbaby serve`: the HTTP API on its own, owning the workspace like the bridge does."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterator

import uvicorn

from api.app import create_app
from api.auth import resolve_token
from api.guard import GuardedH11Protocol, install_log_limits, raise_descriptor_limit
from graph.core.contract import FlowbabyError
from graph.service import EXIT_WORKSPACE_UNAVAILABLE, MemoryService, is_loopback, open_service

log = logging.getLogger("flowbaby.api")

TLS = tuple[str, str]
"""(certificate file, key file) for HTTPS."""


def bind_refusal(host: str, allow_remote: bool, tls: TLS | None) -> str | None:
    """Why binding `host` is refused, or None: beyond loopback needs --allow-remote, and TLS,
    since the token and every memory would otherwise cross the network in clear."""
    if is_loopback(host):
        return None
    if not allow_remote:
        return f"refusing to bind {host}: pass --allow-remote to serve beyond loopback"
    if tls is None:
        return f"refusing to bind {host} without TLS: --allow-remote needs --tls-cert and --tls-key"
    return None


def tls_pair(cert: str | None, key: str | None) -> TLS | None:
    """Both files or neither; one alone is a mistake the caller reports."""
    if bool(cert) != bool(key):
        raise SystemExit("flowbaby: --tls-cert and --tls-key go together")
    return (cert, key) if cert and key else None


async def serve(
    workspace: str,
    host: str,
    port: int,
    allow_remote: bool,
    rate_limit_per_minute: int | None,
    tls: TLS | None = None,
    docs: bool = False,
) -> int:
    refusal = bind_refusal(host, allow_remote, tls)
    if refusal:
        print(f"flowbaby serve: {refusal}", file=sys.stderr)
        return 2
    service = await open_service("serve", workspace, rate_limit_per_minute)
    if isinstance(service, FlowbabyError):
        return EXIT_WORKSPACE_UNAVAILABLE
    try:
        server = http_server(service, host, port, own_signals=False, tls=tls, docs=docs)
    except FlowbabyError as error:
        print(f"flowbaby serve: {error.message}", file=sys.stderr)
        await service.close()
        return EXIT_WORKSPACE_UNAVAILABLE
    # uvicorn's own handlers re-raise the signal once it stops, which killed the process before
    # service.close(): the owner lock stayed and the running operation read as a crash at the
    # next start. The signal only asks the server to stop; the workspace is then closed cleanly.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
    try:
        await service.watch_sessions()
        await server.serve()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the close short
            loop.add_signal_handler(sig, lambda: None)
        await service.close()
    return 0


def http_server(
    service: MemoryService,
    host: str,
    port: int,
    *,
    own_signals: bool = True,
    tls: TLS | None = None,
    docs: bool = False,
) -> uvicorn.Server:
    """A uvicorn server for this service; it announces its URL and token source on stderr.
    With own_signals=False (inside the bridge) the caller keeps SIGTERM/SIGINT. Raises
    FlowbabyError if the token file is refused."""
    token, source = resolve_token(service.paths)
    if not is_loopback(host):
        log.warning(
            "serving on %s, beyond loopback: anyone who can reach it and holds the token can read memories", host
        )
    install_log_limits()
    raise_descriptor_limit()
    config = uvicorn.Config(
        create_app(service, token, host, docs=docs),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",  # runs the MCP session manager
        access_log=False,
        log_config=None,
        http=GuardedH11Protocol,  # request-head deadline and connection cap (api/guard.py)
        timeout_keep_alive=5,
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    server = uvicorn.Server(config) if own_signals else _QuietServer(config)
    scheme = "https" if tls else "http"
    print(f"flowbaby API on {scheme}://{host}:{port} (token: {source})", file=sys.stderr, flush=True)
    log.info("API on %s://%s:%d, token from %s", scheme, host, port, source)
    return server


class _QuietServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def run(
    workspace: str,
    host: str,
    port: int,
    allow_remote: bool,
    rate_limit_per_minute: int | None,
    tls: TLS | None = None,
    docs: bool = False,
) -> int:
    return asyncio.run(serve(workspace, host, port, allow_remote, rate_limit_per_minute, tls, docs))
