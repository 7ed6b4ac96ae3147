"""`flowbaby serve`: the HTTP API on its own, owning the workspace like the bridge does."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import uvicorn

from api.app import create_app
from api.auth import resolve_token
from api.guard import GuardedH11Protocol, install_log_limits, raise_descriptor_limit
from api.tenancy import NamespaceServices, TeamTokens, Tenancy, WorkspaceToken
from graph.api import (
    EXIT_WORKSPACE_UNAVAILABLE,
    Backend,
    FlowbabyService,
    MemoryService,
    TokenStore,
    is_loopback,
    open_backend,
    open_service,
    open_token_store,
    resolve_workspace,
    service_record,
    start_watching,
)
from graph.core.contract import ErrorCode, FlowbabyError

log = logging.getLogger("flowbaby.api")

TLS = tuple[str, str]
"""(certificate file, key file) for HTTPS."""

EXIT_ADDRESS_UNAVAILABLE = 4
"""`serve` could not listen on --host/--port (most often: another server has the port)."""
STOP_GRACE_SEC = 0.5
"""What a running graph batch gets at a stop before it is parked (re-run by the next owner; a batch
takes seconds, so waiting longer rarely saves one): the whole exit stays within 5 s of SIGTERM, the
queued vector writes included (systemd waits 90 s, Docker 10 s)."""
HTTP_GRACE_SEC = 1
"""What requests in flight get at a stop before uvicorn cancels them."""


class AddressUnavailable(Exception):
    """The listening socket could not be bound; the message says what to do."""


def listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound before anything announces the server, so a taken
    port is reported as such (with the --port hint) instead of after a start-up banner."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise AddressUnavailable(f"cannot listen on {host}:{port}: {exc.strerror}; check --host") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: TIME_WAIT is no clash
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        hint = (
            "another process (perhaps another `flowbaby serve`) is using it; pick a free port with --port"
            if exc.errno == errno.EADDRINUSE
            else "check --host and --port"
        )
        raise AddressUnavailable(f"cannot listen on {host}:{port}: {exc.strerror}; {hint}") from None
    return sock


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
    idle_exit: float | None = None,
) -> int:
    """`idle_exit` (a service `flowbaby start` or a hook started): leave at once if the workspace
    already has a service, and after that many seconds idle (0: never)."""
    refusal = bind_refusal(host, allow_remote, tls)
    if refusal:
        print(f"flowbaby serve: {refusal}", file=sys.stderr)
        return 2
    try:
        sock = listen(host, port)  # a taken port is refused before the workspace is touched
    except AddressUnavailable as error:
        print(f"flowbaby serve: {error}", file=sys.stderr)
        return EXIT_ADDRESS_UNAVAILABLE
    port = sock.getsockname()[1]  # --port 0: the free port the system chose
    try:
        paths = resolve_workspace(workspace)
        claim = service_record.claim(paths)
    except (FlowbabyError, OSError) as exc:
        sock.close()
        print(f"flowbaby serve: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return EXIT_WORKSPACE_UNAVAILABLE
    if claim is None and idle_exit is not None:
        sock.close()
        print(f"flowbaby serve: {paths.root} already has a service running; leaving it to that one", file=sys.stderr)
        return 0
    service = await open_service("serve", workspace, rate_limit_per_minute)
    if isinstance(service, FlowbabyError):
        sock.close()
        return EXIT_WORKSPACE_UNAVAILABLE
    team: TeamServer | None = None
    try:
        backend = open_backend(service.paths)
        team = (
            await asyncio.to_thread(TeamServer.open, service, backend, rate_limit_per_minute)
            if backend.shared
            else None
        )
        server = http_server(
            service,
            host,
            port,
            own_signals=False,
            tls=tls,
            docs=docs,
            team=team,
            sock=sock,
            user_scope=not allow_remote,
        )
    except FlowbabyError as error:
        print(f"flowbaby serve: {error.message}", file=sys.stderr)
        sock.close()
        if team is not None:
            team.tokens.close()
        await service.close()
        return EXIT_WORKSPACE_UNAVAILABLE
    # uvicorn's own handlers re-raise the signal once it stops, which killed the process before
    # service.close(): the owner lock stayed and the running operation read as a crash at the
    # next start. The signal only asks the server to stop; the workspace is then closed cleanly.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
    record = {"port": port, "host": host, "since": _now(), "idleExitSec": idle_exit or 0}
    lifetime = asyncio.create_task(_lifetime(server, service, paths, record if claim is not None else None, idle_exit))
    try:
        await start_watching(service, "serve")
        await server.serve()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):  # a second signal must not cut the close short
            loop.add_signal_handler(sig, lambda: None)
        lifetime.cancel()
        if claim is not None:
            service_record.withdraw(paths)
        # Every namespace at once: each may take its grace period to park a running batch.
        closing = [service.close(STOP_GRACE_SEC, hand_on=True), *([team.close()] if team is not None else [])]
        await asyncio.gather(*closing)
        if claim is not None:
            service_record.release(claim)
    return 0


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _lifetime(
    server: uvicorn.Server,
    service: MemoryService,
    paths: Any,
    record: dict[str, Any] | None,
    idle_exit: float | None,
) -> None:
    """Publish the service record once the port answers; with `idle_exit`, stop the server after that
    long without an HTTP request, a front's call or connection, or graph work (INGEST_CONTRACT.md 9.2).
    The record's lastActivity is rewritten when activity was seen (at most once a tick)."""
    while not server.started:
        await asyncio.sleep(0.02)
    if record is not None:
        record["lastActivity"] = _now()
        await asyncio.to_thread(service_record.publish, paths, record)
    if not idle_exit:
        return
    tick = min(5.0, max(0.2, idle_exit / 4))
    seen: tuple[int, float] | None = None
    quiet_since = time.monotonic()
    while not server.should_exit:
        await asyncio.sleep(tick)
        state = server.server_state
        fronts, last_call = service.front_activity() if isinstance(service, FlowbabyService) else (0, 0.0)
        try:
            health = await service.health()  # through an owner that left, this call takes the workspace over
            pending = health.pendingOperations if health.graphBuilding else 0
        except Exception:  # noqa: BLE001 - an owner in trouble: stay, the next tick asks again
            pending = 1
        now = (state.total_requests, last_call)
        if now != seen or fronts or pending or len(state.connections):
            if now != seen and record is not None and seen is not None:
                record["lastActivity"] = _now()
                await asyncio.to_thread(service_record.publish, paths, record)
            seen, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= idle_exit:
            log.info("idle for %.0f s with no graph work left: the service leaves", idle_exit)
            print(f"flowbaby serve: idle for {idle_exit:g} s; exiting", file=sys.stderr, flush=True)
            server.should_exit = True


class TeamServer:
    """`serve` with FLOWBABY_DATABASE_URL: many namespaces, per-user tokens (api/tenancy.py)."""

    def __init__(self, services: NamespaceServices, tokens: TokenStore) -> None:
        self.services = services
        self.tokens = tokens

    @classmethod
    def open(cls, service: MemoryService, backend: Backend, rate_limit_per_minute: int | None) -> TeamServer:
        """Raises FlowbabyError if the token schema cannot be reached or migrated."""
        return cls(
            NamespaceServices(service, backend.namespace, team=True, rate=rate_limit_per_minute),
            open_token_store(backend.url),
        )

    def tenancy(self, token: str) -> Tenancy:
        workspace = WorkspaceToken(token, self.services.namespace)
        return Tenancy(TeamTokens(workspace, self.tokens), self.services)

    async def close(self) -> None:
        await self.services.close()
        await asyncio.to_thread(self.tokens.close)


def http_server(
    service: MemoryService,
    host: str,
    port: int,
    *,
    own_signals: bool = True,
    tls: TLS | None = None,
    docs: bool = False,
    team: TeamServer | None = None,
    sock: socket.socket | None = None,
    user_scope: bool = True,
) -> uvicorn.Server:
    """A uvicorn server for this service on `sock` (bound here if not given); it announces its
    URL and token source on stderr once the port is its own. With own_signals=False (inside the
    bridge) the caller keeps SIGTERM/SIGINT. Raises FlowbabyError if the token file is refused or
    the port cannot be bound. `team`: serve many namespaces (serve only). `user_scope=False` (--allow-remote):
    the user store is out of reach (api/project_scope.py)."""
    token, source = resolve_token(service.paths)
    if sock is None:
        try:
            sock = listen(host, port)
        except AddressUnavailable as error:
            raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, str(error)) from None
    if not is_loopback(host):
        log.warning(
            "serving on %s, beyond loopback: anyone who can reach it and holds the token can read memories", host
        )
    install_log_limits()
    raise_descriptor_limit()
    config = uvicorn.Config(
        create_app(
            service, token, host, docs=docs, tenancy=team.tenancy(token) if team else None, user_scope=user_scope
        ),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",  # runs the MCP session manager
        access_log=False,
        log_config=None,
        http=GuardedH11Protocol,  # request-head deadline and connection cap (api/guard.py)
        timeout_keep_alive=5,
        timeout_graceful_shutdown=HTTP_GRACE_SEC,
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    server = _Server(config, sock, own_signals)
    scheme = "https" if tls else "http"
    if team is not None:
        own = team.services.namespace
        source += f"; per-user tokens from the team database; /api/ns/{{namespace}}/..., own namespace {own}"
    print(f"flowbaby API on {scheme}://{host}:{port} (token: {source})", file=sys.stderr, flush=True)
    log.info("API on %s://%s:%d, token from %s", scheme, host, port, source)
    return server


class _Server(uvicorn.Server):
    """uvicorn on a socket bound beforehand; without own_signals it leaves signals to the caller."""

    def __init__(self, config: uvicorn.Config, sock: socket.socket, own_signals: bool) -> None:
        super().__init__(config)
        self.sock, self.own_signals = sock, own_signals

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().serve(sockets=sockets or [self.sock])
        finally:
            self.sock.close()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if self.own_signals:
            with super().capture_signals():
                yield
        else:
            yield
