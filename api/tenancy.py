"""Who calls, and for which namespace: the HTTP front's bearer check and namespace routing.

Every `/api/...` route is also served as `/api/ns/{namespace}/...`: this layer strips the prefix
before routing, so the route table is defined once and every route (present and future) is
served both ways; `/api/ns/{namespace}/mcp` is `/mcp` (the MCP tools) in that namespace. A request
may instead name its namespace in `X-Flowbaby-Namespace`; with neither, it is the server's own (its
workspace's) namespace. The route handlers and MCP tools call a service proxy that resolves, per
request, to the namespace's service (`CURRENT`). MCP tool calls see the contextvars set here: the
`mcp` SDK runs each handler in a copy of the context of the request that carried the message (its
context streams), not in the session's task context.

Embedded (no FLOWBABY_DATABASE_URL): one namespace, one bearer token, as before. A team server
(`flowbaby serve` with the URL) also accepts per-user tokens (graph.core.api_tokens), each scoped to
namespaces, and opens one engine service per namespace on first use, in
`<workspace>/.flowbaby/namespaces/<namespace>/` (its logs and graph worker), kept until it stops.
"""

from __future__ import annotations

import asyncio
import secrets
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from api.auth import token_matches
from api.browser_auth import KEY_HEADER, BrowserSessions, cookie_name, cookie_value, same_origin_problem
from api.guard import ASGIApp, Receive, Scope, Send, is_public, refuse
from graph.api import (
    AUDIT_USER,
    NAMESPACES_DIR,
    FlowbabyService,
    GrantCache,
    MemoryService,
    TokenStore,
    digest,
    namespace_problem,
    token_id_of,
    verify,
)
from graph.core.contract import ContractFailure, ErrorCode, FlowbabyError

PREFIX = "/api/ns/"
HEADER = b"x-flowbaby-namespace"
PAGE_PREFIX = "/ui/"
"""The memory browser's page, assets and sign-in routes (api/browser.py): they hold no memory."""
SESSION_HEADER = b"x-flowbaby-session"
"""A browser session sent as a header instead of the cookie (the page inside a VS Code webview,
where a framed page's SameSite=Strict cookie is never sent)."""


def needs_no_token(path: str) -> bool:
    """The public paths (api/guard.py), and the memory browser's page and sign-in."""
    return is_public(path) or path == "/" or path.startswith(PAGE_PREFIX)


def browser_session(scope: Scope) -> str | None:
    """The session a request carries (header, else this port's cookie), or None."""
    server = scope.get("server") or (None, None)
    return _header(scope, SESSION_HEADER) or cookie_value(scope.get("headers", ()), cookie_name(server[1]))


async def session_caller(tenancy: Tenancy, scope: Scope) -> tuple[str | None, Caller | None]:
    """(the session a request carries, who it stands for now). None for the caller when the
    session's key is missing or wrong, the session is unknown or expired, or the token that opened
    it no longer authenticates (revoked: the session is then closed)."""
    session = browser_session(scope)
    if session is None:
        return None, None
    caller = tenancy.browser.caller(session, _header(scope, KEY_HEADER))
    if caller is None:
        return session, None
    live = await tenancy.auth.recheck(caller)
    if live is None:
        tenancy.browser.close(session)
    return session, live


@dataclass(frozen=True)
class Caller:
    """A request's bearer: `user` None is the workspace's own token; `namespaces` None is any.
    `credential`: a per-user token's (id, sha256), so a browser session it opened can be checked
    against the token's row again (revocation)."""

    user: str | None
    namespaces: frozenset[str] | None
    credential: tuple[str, bytes] | None = field(default=None, repr=False, compare=False)

    def allows(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces


class Authenticator(Protocol):
    async def authenticate(self, header: str | None) -> Caller | None: ...

    async def recheck(self, caller: Caller) -> Caller | None:
        """`caller` as its token stands now (a browser session's), or None if it no longer does."""
        ...


def bearer(header: str | None) -> str | None:
    if not header or not header.startswith("Bearer "):
        return None
    return header.removeprefix("Bearer ").strip() or None


class WorkspaceToken:
    """The workspace's one token (api/auth.py). Embedded it may use any namespace the server has
    (which is only its own); on a team server only the server's own namespace."""

    def __init__(self, token: str, namespace: str | None = None) -> None:
        self._token = token
        self._caller = Caller(None, None if namespace is None else frozenset({namespace}))

    async def authenticate(self, header: str | None) -> Caller | None:
        return self._caller if token_matches(self._token, header) else None

    async def recheck(self, caller: Caller) -> Caller | None:
        return caller  # the workspace's token is the same for the whole life of the server


class TeamTokens:
    """The workspace token, then per-user tokens from the team database, each answer cached for
    CACHE_SEC (graph.core.api_tokens: a revoked token stops working within it)."""

    def __init__(self, workspace: WorkspaceToken, store: TokenStore, cache: GrantCache | None = None) -> None:
        self._workspace = workspace
        self._store = store
        self._cache = cache or GrantCache()

    async def authenticate(self, header: str | None) -> Caller | None:
        caller = await self._workspace.authenticate(header)
        token = bearer(header)
        if caller is not None or token is None:
            return caller
        key = digest(token)
        found, grant = self._cache.get(key)
        if not found:
            grant = await asyncio.to_thread(verify, self._store, token)
            self._cache.put(key, grant)
        token_id = token_id_of(token)
        credential = None if token_id is None else (token_id, key)
        return None if grant is None else Caller(grant.user, grant.namespaces, credential)

    async def recheck(self, caller: Caller) -> Caller | None:
        """A per-user token's row again (cached like `authenticate`): revoked, the answer is None."""
        if caller.credential is None:
            return await self._workspace.recheck(caller)
        token_id, key = caller.credential
        found, grant = self._cache.get(key)
        if not found:
            record = await asyncio.to_thread(self._store.find, token_id)
            live = record is not None and record.revoked_at is None and secrets.compare_digest(key, record.token_hash)
            grant = record.grant() if live and record is not None else None
            self._cache.put(key, grant)
        return None if grant is None else Caller(grant.user, grant.namespaces, caller.credential)


class NamespaceServices:
    """The service of each namespace this server holds. Embedded: its own only (another name is
    NOT_FOUND). Team: others are opened on first use, one at a time each, and kept."""

    def __init__(self, default: MemoryService, namespace: str | None, *, team: bool, rate: int | None = None) -> None:
        self.default = default
        self.namespace = namespace
        self._team = team
        self._rate = rate
        self._open: dict[str, MemoryService] = {} if namespace is None else {namespace: default}
        self._locks: dict[str, asyncio.Lock] = {}

    def folder(self, namespace: str) -> Path:
        return self.default.paths.data / NAMESPACES_DIR / namespace

    async def get(self, namespace: str) -> MemoryService:
        service = self._open.get(namespace)
        if service is not None:
            return service
        if not self._team:
            raise FlowbabyError(ErrorCode.NOT_FOUND, f'This server serves only the namespace "{self.namespace}"')
        async with self._locks.setdefault(namespace, asyncio.Lock()):
            if namespace not in self._open:
                root = self.folder(namespace)
                await asyncio.to_thread(root.mkdir, mode=0o700, parents=True, exist_ok=True)
                try:
                    self._open[namespace] = await FlowbabyService.open(
                        root,
                        log_to_stderr=False,
                        rate_limit_per_minute=self._rate,
                        own_logging=False,
                        embedder=getattr(self.default, "embedder", None),  # one model for all (not via an owner)
                    )
                except FlowbabyError as error:
                    raise FlowbabyError(
                        ErrorCode.NAMESPACE_UNAVAILABLE,
                        f'The namespace "{namespace}" cannot be opened here: {error.message}',
                        namespace=namespace,
                    ) from None
            return self._open[namespace]

    async def close(self) -> None:
        """Close every namespace opened here (not the default: its opener closes it)."""
        others = [s for name, s in self._open.items() if name != self.namespace]
        self._open = {} if self.namespace is None else {self.namespace: self.default}
        await asyncio.gather(*(s.close() for s in others), return_exceptions=True)


CURRENT: ContextVar[MemoryService | None] = ContextVar("flowbaby_namespace_service", default=None)
AUTHORIZED: ContextVar[bool] = ContextVar("flowbaby_authorized", default=False)
"""Whether the request's token may use its namespace (public health answers in full only then)."""
BROWSER: ContextVar[bool] = ContextVar("flowbaby_browser", default=False)
"""Whether the request came with a browser session (the person's page), not a bearer token (an agent's):
its writes are recorded as the person's (graph.core.provenance)."""


class CurrentService:
    """What the routes call: the service of the request's namespace (set by NamespaceRouter)."""

    def __init__(self, default: MemoryService) -> None:
        self._default = default

    def __getattr__(self, name: str) -> Any:
        return getattr(CURRENT.get() or self._default, name)


@dataclass
class Tenancy:
    auth: Authenticator
    services: NamespaceServices
    browser: BrowserSessions = field(default_factory=BrowserSessions)
    """The memory browser's sign-in codes and sessions (api/browser_auth.py)."""


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class NamespaceRouter:
    """ASGI: authenticate, resolve the namespace, check the token's scope, then call the app with
    the path's prefix stripped and the namespace's service current. Refusals close the connection
    (the body is never read): 401 UNAUTHORIZED, 400 INVALID_NAMESPACE, 403 NAMESPACE_FORBIDDEN,
    404 NOT_FOUND (embedded: another namespace), 503 NAMESPACE_UNAVAILABLE."""

    def __init__(self, app: ASGIApp, tenancy: Tenancy) -> None:
        self.app = app
        self.tenancy = tenancy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        in_path = None
        if path.startswith(PREFIX):
            in_path, _, rest = path[len(PREFIX) :].partition("/")
            path = "/mcp" if rest == "mcp" else "/api/" + rest
            scope = {**scope, "path": path, "raw_path": path.encode()}
        in_header = _header(scope, HEADER)
        authorization = _header(scope, b"authorization")
        try:
            caller = await self.tenancy.auth.authenticate(authorization)
        except ContractFailure as error:
            return await refuse(send, 503, error.to_response(), {"Retry-After": "5"})
        except Exception as exc:  # the token database is unreachable
            message = f"Tokens cannot be checked now: {type(exc).__name__}; retry shortly"
            return await refuse(send, 503, FlowbabyError(ErrorCode.FLOWBABY_ERROR, message).to_response())
        public = needs_no_token(path)
        browser = False
        session = browser_session(scope) if authorization is None and path.startswith("/api/") else None
        if session is not None:
            forged = same_origin_problem(scope.get("headers", ()), scope.get("scheme", "http"))
            if forged:
                failure = FlowbabyError(ErrorCode.UNAUTHORIZED, f"Cross-site request refused: {forged}")
                return await refuse(send, 403, failure.to_response())
            try:
                session, caller = await session_caller(self.tenancy, scope)
                browser = caller is not None
            except Exception as exc:  # the token database is unreachable
                message = f"Tokens cannot be checked now: {type(exc).__name__}; retry shortly"
                return await refuse(send, 503, FlowbabyError(ErrorCode.FLOWBABY_ERROR, message).to_response())
        if caller is None:
            if not public:
                text = "Browser session expired; sign in again" if session else "Missing or wrong bearer token"
                failure = FlowbabyError(ErrorCode.UNAUTHORIZED, text)
                return await refuse(send, 401, failure.to_response())
            return await self._call(scope, receive, send, self.tenancy.services.default, None, False)
        services = self.tenancy.services
        named = (in_path if in_path is not None else in_header or "").strip() or None
        if in_path is not None and in_header is not None and in_path != in_header.strip():
            problem: str | None = f'is named "{in_path}" in the path but "{in_header}" in {HEADER.decode()}'
        else:
            problem = namespace_problem(named) if named is not None else None
            if named is None and in_path is not None:
                problem = "is missing from the path /api/ns/{namespace}/..."
        if problem:
            message = f"The namespace {problem}"
            return await refuse(send, 400, FlowbabyError(ErrorCode.INVALID_NAMESPACE, message).to_response())
        namespace = named or services.namespace  # None: embedded, in a folder whose name is no namespace
        if namespace is not None and not caller.allows(namespace):
            if public:
                return await self._call(scope, receive, send, services.default, None, False)
            message = f'This token may not use the namespace "{namespace}"'
            return await refuse(send, 403, FlowbabyError(ErrorCode.NAMESPACE_FORBIDDEN, message).to_response())
        try:
            service = services.default if named is None else await services.get(named)
        except FlowbabyError as error:
            status = 404 if error.code is ErrorCode.NOT_FOUND else 503
            headers = {"Retry-After": "5"} if status == 503 else None
            return await refuse(send, status, error.to_response(), headers)
        await self._call(scope, receive, send, service, caller.user, True, browser)

    async def _call(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        service: MemoryService,
        user: str | None,
        authorized: bool,
        browser: bool = False,
    ) -> None:
        tokens = (CURRENT.set(service), AUTHORIZED.set(authorized), AUDIT_USER.set(user))
        by_browser = BROWSER.set(browser)
        try:
            await self.app(scope, receive, send)
        finally:
            BROWSER.reset(by_browser)
            AUDIT_USER.reset(tokens[2])
            AUTHORIZED.reset(tokens[1])
            CURRENT.reset(tokens[0])
