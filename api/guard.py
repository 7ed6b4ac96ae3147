"""What stands between the network and the routes: the Host/Origin check, the in-flight and
body limits (ASGI middleware), and a uvicorn protocol that times out slow headers and caps
open connections (slowloris). Every refusal is a JSON body, and the connection is closed.
"""

from __future__ import annotations

import asyncio
import fcntl
import ipaddress
import logging
import resource
import socket
import struct
import termios
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

import graph.core.jsonwire as jsonwire
from graph.api import is_loopback
from graph.core.contract import ErrorCode, FlowbabyError, RetrievalError, RetrievalErrorCode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest HTTP request body (the bridge's line cap); a larger one is answered 413."""
BODY_TIMEOUT_SEC = 30.0
"""A body not fully received by then is answered 408."""
MAX_IN_FLIGHT = 32
"""Requests with credentials being served at once; one more is answered 503 with Retry-After."""
MAX_UNAUTHENTICATED_IN_FLIGHT = 8
"""Requests without an Authorization header being served at once, counted apart from
MAX_IN_FLIGHT: callers without a token can never take the token holders' places."""
PUBLIC_PATHS = frozenset({"/api/health", "/docs", "/openapi.json"})
"""Answered without a token (health then says only that it is up); no body is read on them."""
PUBLIC_PREFIX = "/docs/assets/"
"""Swagger UI's files for /docs (api/docs_page.py), which a browser fetches without the token."""


def is_public(path: str) -> bool:
    """Whether `path` is answered without a token."""
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX)


BODILESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
"""Methods no route reads a body of: a declared body is not waited for."""
HEADER_TIMEOUT_SEC = 10.0
"""A connection that has not sent a whole request head by then (after connecting, or after
its previous response) is closed."""
MAX_CONNECTIONS = 128
"""Open connections; past it the oldest connections still waiting for their request head are
closed, so half-open connections can neither starve a client nor exhaust descriptors."""
SWEEP_DELAY_SEC = 0.05
"""The cap is enforced this long after it is passed, so a connection accepted in the same burst
as hundreds of half-open ones has sent its request head by then and is not a candidate."""
WILDCARD_HOSTS = {"0.0.0.0", "::", ""}


class HostRule:
    """Which Host (and Origin) names a request may carry: loopback names, plus the configured
    host when binding beyond loopback. A web page can only reach us through DNS rebinding
    under its own name, which is never on the list. Bound to a wildcard address, IP literals
    (which cannot be rebound) and this machine's names are accepted too."""

    def __init__(self, bind_host: str) -> None:
        self.names = {bind_host.strip("[]").lower()} if not is_loopback(bind_host) else set()
        self.any_ip = bind_host.strip("[]") in WILDCARD_HOSTS
        if self.any_ip:
            self.names |= {socket.gethostname().lower(), socket.getfqdn().lower()}

    def allows(self, host: str) -> bool:
        name = _host_name(host)
        if not name:
            return False
        if is_loopback(name) or name in self.names:
            return True
        if self.any_ip:
            try:
                ipaddress.ip_address(name)
                return True
            except ValueError:
                return False
        return False

    def allows_origin(self, origin: str) -> bool:
        parts = urlsplit(origin)
        return parts.scheme in {"http", "https"} and self.allows(parts.netloc)


def _host_name(host: str) -> str:
    """`name` of a Host header `name[:port]` or `[v6]:port`, lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def refuse(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    """A JSON refusal that also closes the connection (an unread body is not read on)."""
    data = jsonwire.dumps(body).encode("utf-8")
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"connection", b"close"),
    ]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


def _invalid(path: str, message: str) -> dict[str, Any]:
    """The body failure in the shape of the route's family (retrieval or ingest)."""
    if path.endswith("/retrieve"):
        return RetrievalError(RetrievalErrorCode.INVALID_REQUEST, message).to_response()
    return FlowbabyError(ErrorCode.INVALID_PAYLOAD, message).to_response()


class HostGuard:
    """421 for a Host header off the list, 403 for a foreign Origin (DNS rebinding)."""

    def __init__(self, app: ASGIApp, rule: HostRule) -> None:
        self.app = app
        self.rule = rule

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host = _header(scope, b"host") or ""
        if not self.rule.allows(host):
            message = f"Host {host[:100]!r} is not served here (DNS rebinding guard)"
            return await refuse(send, 421, FlowbabyError(ErrorCode.UNAUTHORIZED, message).to_response())
        origin = _header(scope, b"origin")
        if origin is not None and not self.rule.allows_origin(origin):
            message = f"Origin {origin[:100]!r} may not call this API"
            return await refuse(send, 403, FlowbabyError(ErrorCode.UNAUTHORIZED, message).to_response())
        await self.app(scope, receive, send)


class InFlightLimit:
    """503 with Retry-After once MAX_IN_FLIGHT requests with an Authorization header, or
    MAX_UNAUTHENTICATED_IN_FLIGHT without one, are being served. A wrong token is refused
    before anything is read, so only token holders can hold one of the larger quota's places."""

    def __init__(
        self, app: ASGIApp, limit: int = MAX_IN_FLIGHT, unauthenticated_limit: int = MAX_UNAUTHENTICATED_IN_FLIGHT
    ) -> None:
        self.app = app
        self.limits = {True: limit, False: unauthenticated_limit}
        self.active = {True: 0, False: 0}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        credentials = _header(scope, b"authorization") is not None
        limit = self.limits[credentials]
        if self.active[credentials] >= limit:
            who = "" if credentials else " without a token"
            message = f"{limit} requests{who} are already being served; retry in a second"
            body = FlowbabyError(ErrorCode.FLOWBABY_ERROR, message).to_response()
            return await refuse(send, 503, body, {"Retry-After": "1"})
        self.active[credentials] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active[credentials] -= 1


class BodyLimit:
    """Reads the whole body first, at most MAX_BODY_BYTES within BODY_TIMEOUT_SEC, then hands
    it to the app: 413 for a larger body (at once when Content-Length says so), 408 if slow.
    A public path (no token needed) or a bodiless method (GET...) gets an empty body at once:
    a declared body is never waited for there, so it cannot hold a place for 30 s."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES, timeout: float = BODY_TIMEOUT_SEC) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        if is_public(path) or scope.get("method") in BODILESS_METHODS:
            return await self.app(scope, _without_body(receive), send)
        too_large = _invalid(path, f"Request body exceeds {self.limit} bytes")
        length = _header(scope, b"content-length")
        if length is not None and length.strip().isdigit() and int(length) > self.limit:
            return await refuse(send, 413, too_large)
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client went away
                    size += len(message.get("body", b""))
                    if size > self.limit:
                        return await refuse(send, 413, too_large)
                    chunks.append(message.get("body", b""))
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            return await refuse(send, 408, _invalid(path, f"Request body not received within {self.timeout:.0f}s"))
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _without_body(receive: Receive) -> Receive:
    """An empty body first, then the connection's own messages (a disconnect)."""
    given = False

    async def empty() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await receive()

    return empty


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-head deadline and a cap on open connections."""

    _head_timer: asyncio.TimerHandle | None = None
    waiting_since: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_head()
        if len(self.connections) > MAX_CONNECTIONS and not _sweep_pending.get(id(self.connections)):
            _sweep_pending[id(self.connections)] = True
            self.loop.call_later(SWEEP_DELAY_SEC, _sweep, self.connections)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.waiting_since is not None and self.conn.their_state is not h11.IDLE:
            self._stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._wait_for_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _wait_for_head(self) -> None:
        self._stop_waiting()
        self.waiting_since = time.monotonic()
        self._head_timer = self.loop.call_later(HEADER_TIMEOUT_SEC, self._head_timeout)

    def _stop_waiting(self) -> None:
        self.waiting_since = None
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self.waiting_since is not None and not self.transport.is_closing():
            self.transport.close()


_sweep_pending: dict[int, bool] = {}
"""Per server (its connection set): whether a sweep is scheduled."""


def _unread_bytes(protocol: GuardedH11Protocol) -> int:
    """Bytes the kernel holds for this connection that the loop has not read yet (FIONREAD)."""
    sock = protocol.transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        return int(struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0])
    except OSError:
        return 0


def _sweep(connections: set[Any]) -> None:
    """Close the longest-waiting connections until MAX_CONNECTIONS are left open. A connection
    whose request has arrived but is not read yet (a busy loop) is not waiting: closing it would
    reset a valid client (seen under load during a flood of 1,000 half-open connections)."""
    _sweep_pending.pop(id(connections), None)
    live = [p for p in connections if not p.transport.is_closing()]
    waiting = sorted(
        (p for p in live if isinstance(p, GuardedH11Protocol) and p.waiting_since is not None and not _unread_bytes(p)),
        key=lambda p: p.waiting_since or 0.0,
    )
    for victim in waiting[: max(0, len(live) - MAX_CONNECTIONS)]:
        victim.transport.close()


class RateLimitedLog(logging.Filter):
    """At most `burst` records per message per `window` seconds; the next one let through
    says how many were dropped (accept errors once wrote 43 MB of tracebacks in 25 s)."""

    def __init__(self, burst: int = 5, window: float = 60.0) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self._seen: dict[tuple[str, str], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        start, count, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self.window:
            start, count = now, 0
        if count >= self.burst:
            self._seen[key] = (start, count, dropped + 1)
            return False
        if dropped:
            record.msg = f"{record.msg} ({dropped} similar messages suppressed)"
        self._seen[key] = (start, count + 1, 0)
        return True


NOISY_LOGGERS = ("asyncio", "uvicorn.error", "flowbaby.api")


def install_log_limits() -> None:
    """Rate-limit the loggers a flood of bad connections writes to (once per process)."""
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RateLimitedLog) for f in logger.filters):
            logger.addFilter(RateLimitedLog())


def raise_descriptor_limit(target: int = 65536) -> None:
    """Lift the soft descriptor limit toward the hard one: a burst of connections is accepted
    before the cap can close any, and at the common soft limit of 1,024 the accepts would fail
    (and asyncio would stop accepting for a second)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = target if hard == resource.RLIM_INFINITY else min(hard, target)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
