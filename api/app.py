"""The HTTP front: FastAPI routes that parse, call the service and frame the answer.

Bodies are validated by the same contract models as the bridge (inside the service),
so a field error reads the same over HTTP as over stdio. Contract codes map to HTTP
statuses here and nowhere else.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal, cast

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException
from starlette.routing import Route

from api.browser import browser_routes
from api.docs_page import add_docs_page
from api.guard import BodyLimit, HostGuard, HostRule, InFlightLimit
from api.mcp_mount import LazyMcp
from api.project_scope import ProjectOnly
from api.table_routes import document_bodies, json_body, table_routes
from api.tenancy import AUTHORIZED, CurrentService, NamespaceRouter, NamespaceServices, Tenancy, WorkspaceToken
from graph import __version__
from graph.api import MemoryService, WorkspacePaths, namespace_for, service_record
from graph.core.contract import (
    ContractFailure,
    ErrorCode,
    FlowbabyError,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
    GraphStatsResponse,
    HealthResponse,
    ImpliedSupersessionsResponse,
    MemoryContextResponse,
    OperationReply,
    PublicHealthResponse,
    RepairResponse,
    RetrievalError,
    RetrievalErrorCode,
    RetrieveMemoryResponse,
    SessionDescription,
    SessionsRequest,
    UnknownOperation,
    validate_request,
    validate_retrieval,
)
from graph.core.methods import BACKGROUND, RETRIEVE, RETRIEVE_MEMORY, SEARCH, request_of

log = logging.getLogger("flowbaby.api")

STATUS: dict[str, int] = {
    code.value: status
    for code, status in (
        (ErrorCode.INVALID_PAYLOAD, 400),
        (RetrievalErrorCode.INVALID_REQUEST, 400),
        (ErrorCode.INVALID_NAMESPACE, 400),
        (ErrorCode.UNAUTHORIZED, 401),
        (ErrorCode.NAMESPACE_FORBIDDEN, 403),
        (ErrorCode.NOT_FOUND, 404),
        (ErrorCode.METHOD_NOT_ALLOWED, 405),
        (ErrorCode.PERSON_WRITTEN, 409),
        (ErrorCode.BACKLOG, 429),
        (RetrievalErrorCode.RATE_LIMIT_EXCEEDED, 429),
        (RetrievalErrorCode.QUEUE_FULL, 429),
        (ErrorCode.MISSING_API_KEY, 503),
        (ErrorCode.NAMESPACE_UNAVAILABLE, 503),
        (RetrievalErrorCode.NOT_INITIALIZED, 503),
        (ErrorCode.BRIDGE_TIMEOUT, 504),
        (ErrorCode.FLOWBABY_ERROR, 500),
        (ErrorCode.DATABASE_UNAVAILABLE, 503),
        (ErrorCode.DATABASE_BUSY, 503),
    )
}
"""HTTP status of each reply code (keyed by wire value: the ingest and retrieval enums share some)."""


def _failure(body: dict[str, Any]) -> JSONResponse:
    headers = {"Retry-After": str(body["retryAfterSec"])} if "retryAfterSec" in body else None
    return JSONResponse(body, status_code=STATUS.get(body["errorCode"], 500), headers=headers)


def _given(**params: Any) -> dict[str, Any]:
    """A route's parameters for the service, without those the request left out (None), so the
    contract's own defaults apply."""
    return {key: value for key, value in params.items() if value is not None}


def _session(**params: Any) -> SessionsRequest:
    """The sessions operation's request of a hand-written route (one it shares with another operation)."""
    request: SessionsRequest = validate_retrieval(SessionsRequest, params)
    return request


def own_namespace(service: MemoryService) -> str | None:
    """The embedded server's namespace (its folder's), or None if that name is no namespace."""
    paths = getattr(service, "paths", None)
    if not isinstance(paths, WorkspacePaths):
        return None
    try:
        return namespace_for(paths)
    except FlowbabyError:
        return None


def _answer_failures_in_json(app: FastAPI) -> None:
    """Every refusal and failure, the framework's own included, in the contract's JSON shape."""

    @app.exception_handler(ContractFailure)
    async def contract_failure(request: Request, error: ContractFailure) -> JSONResponse:
        return _failure(error.to_response())

    @app.exception_handler(RequestValidationError)
    async def parameter_failure(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())[1:]) or "request"
        message = f'Parameter "{field}": {first.get("msg", "is invalid")}'
        return _failure(RetrievalError(RetrievalErrorCode.INVALID_REQUEST, message, fields=[field]).to_response())

    @app.exception_handler(HTTPException)
    async def framework_failure(request: Request, error: HTTPException) -> JSONResponse:
        """The framework's own refusals (no such route, a method the route does not take) in the
        contract's shape, with their status and headers (Allow) kept."""
        route = f"{request.method} {request.url.path}"
        if error.status_code == 404:
            failure = FlowbabyError(ErrorCode.NOT_FOUND, f"No route {route}")
        elif error.status_code == 405:
            allowed = (error.headers or {}).get("Allow", "")
            failure = FlowbabyError(ErrorCode.METHOD_NOT_ALLOWED, f"{route} is not allowed; the route takes {allowed}")
        else:
            code = ErrorCode.INVALID_PAYLOAD if error.status_code < 500 else ErrorCode.FLOWBABY_ERROR
            failure = FlowbabyError(code, f"{route} failed: {error.detail}")
        return JSONResponse(failure.to_response(), status_code=error.status_code, headers=error.headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        """Even a failure nothing foresaw is answered in JSON, never a plain-text 500."""
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(error).__name__, error)
        message = f"{request.url.path} failed: {type(error).__name__}"
        return _failure(FlowbabyError(ErrorCode.FLOWBABY_ERROR, message).to_response())


def create_app(
    service: MemoryService,
    token: str,
    host: str = "127.0.0.1",
    docs: bool = False,
    tenancy: Tenancy | None = None,
    user_scope: bool = True,
) -> FastAPI:
    """The API, with the MCP tools over streamable HTTP at /mcp behind the same token. `host`
    is where it binds: every request's Host and Origin must name it or loopback (DNS rebinding).
    `docs` serves /docs, Swagger UI with its files served from here (api/docs_page.py): off unless asked for.
    `tenancy`: a team server's tokens and namespaces (api/tenancy.py); by default the workspace's
    token and namespace. Routes and MCP tool calls use the request's namespace's service. `user_scope=False`
    (a server started with --allow-remote): the workspace's store only (api/project_scope.py)."""
    if not user_scope:
        service = cast(MemoryService, ProjectOnly(service))
    if tenancy is None:
        namespaces = NamespaceServices(service, own_namespace(service), team=False)
        tenancy = Tenancy(WorkspaceToken(token), namespaces)
    service = cast(MemoryService, CurrentService(service))
    mcp = LazyMcp(service, host)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await mcp.close()

    # An explicit JSONResponse keeps FastAPI off its pydantic fast path for response models, so
    # bodies are written by json.dumps exactly as the bridge writes them (4.5e-05, not 0.000045).
    app = FastAPI(
        title="flowbaby",
        version=__version__,
        description="Local memory service for coding agents",
        default_response_class=JSONResponse,
        lifespan=lifespan,
        docs_url=None,  # FastAPI's own page loads Swagger UI from a CDN: api/docs_page.py instead
        redoc_url=None,
    )
    app.router.routes.append(Route("/mcp", endpoint=mcp))  # an ASGI app: it answers its own methods
    if docs:
        add_docs_page(app)
    app.add_middleware(BodyLimit)  # innermost: a body is read only once the token checked out

    app.add_middleware(NamespaceRouter, tenancy=tenancy)  # token, namespace and scope; bodies unread
    app.add_middleware(InFlightLimit)
    app.add_middleware(HostGuard, rule=HostRule(host))

    _answer_failures_in_json(app)

    @app.get("/api/health", response_model=HealthResponse | PublicHealthResponse)
    async def health(
        request: Request, challenge: str | None = Query(None, pattern="^[0-9a-f]{32,128}$")
    ) -> HealthResponse | JSONResponse:
        """Without the token: only that it is up, and its version (no path, no pid); with a
        `challenge`, the proof that it holds this workspace's token (`flowbaby ui` asks before it sends it)."""
        if AUTHORIZED.get():
            return await service.health()
        port = int((request.scope.get("server") or ("", 0))[1] or 0)
        proof = service_record.server_proof(token, port, challenge) if challenge else None
        return JSONResponse(PublicHealthResponse(version=__version__, proof=proof).model_dump(exclude_none=True))

    table_routes(app, service)

    @app.post("/api/agent/retrieve")
    async def retrieve(request: Request, format: Literal["json", "markdown"] = "json") -> Any:
        markdown = format == "markdown"
        asked = await request_of(service, RETRIEVE_MEMORY if markdown else RETRIEVE, await json_body(request, True))
        reply = await service.retrieve(asked, markdown=markdown)
        # Accept: application/json asks for the whole retrieveMemory reply (entries too): remote clients.
        if isinstance(reply, RetrieveMemoryResponse) and "application/json" not in request.headers.get("accept", ""):
            return PlainTextResponse(reply.markdown, media_type="text/markdown")
        return reply.model_dump(mode="json")  # json.dumps' floats, as the bridge writes them

    @app.get("/api/agent/background/{operationId}", response_model=OperationReply)
    async def background_one(operationId: str) -> Any:
        reply = await service.background_status(await request_of(service, BACKGROUND, {"operationId": operationId}))
        if isinstance(reply, UnknownOperation):  # a resource path: an id the ledger never had is a 404
            return _failure(FlowbabyError(ErrorCode.NOT_FOUND, f'No operation "{operationId}"').to_response())
        return reply.model_dump(mode="json")

    @app.get("/api/agent/search")
    async def search(
        q: str = "", limit: int = 20, session_id: str | None = None, cwd: str | None = None, source: str | None = None
    ) -> Any:
        """With session_id (or cwd, for its current session): that session's turns; else memory chunks."""
        if session_id or cwd:
            if not session_id:
                current = await service.sessions("current", _session(cwd=cwd, source=source))
                session_id = cast(SessionDescription, current).session_id
            return await service.sessions("search", _session(session_id=session_id, q=q, limit=limit, source=source))
        reply = await service.search_chunks(await request_of(service, SEARCH, {"q": q, "limit": limit}))
        return reply.model_dump(mode="json")  # json.dumps' floats, as before

    @app.get("/api/agent/index/status")
    async def index_status(session_id: str | None = None, cwd: str | None = None, source: str | None = None) -> Any:
        """A session's index status (by id, or the current one under cwd); without either, the memory index."""
        if session_id or cwd:
            return await service.sessions("status", _session(session_id=session_id, cwd=cwd, source=source))
        return await service.index_status()

    @app.post("/api/agent/index/repair", response_model=RepairResponse)
    async def repair() -> RepairResponse:
        return await service.repair()

    @app.get("/api/agent/supersessions", response_model=ImpliedSupersessionsResponse)
    async def implied_supersessions() -> ImpliedSupersessionsResponse:
        return await service.implied_supersessions()

    @app.delete("/api/agent/memories/{topic_id}", response_model=ForgetMemoryResponse)
    async def forget_memory(
        topic_id: str, version: int | None = None, dryRun: bool = False, scope: str | None = None
    ) -> ForgetMemoryResponse:
        """forgetMemory of one topic (every version), or of one version with ?version=N; ?scope=user."""
        params = _given(topicId=topic_id, dryRun=dryRun, version=version, scope=scope)
        return await service.forget_memory(validate_request(ForgetMemoryRequest, params))

    @app.get("/api/agent/memories/{topic_id}/context", response_model=MemoryContextResponse)
    async def memory_context(
        topic_id: str, q: str | None = None, hops: int = 1, version: int | None = None
    ) -> MemoryContextResponse:
        return await service.memory_context(topic_id, q, hops, version)

    @app.get("/api/graph/stats", response_model=GraphStatsResponse)
    async def graph_stats(top: int = 10) -> GraphStatsResponse:
        return await service.graph_summary(max(1, min(top, 100)))

    browser_routes(app, tenancy)
    app.openapi = lambda: document_bodies(app)  # type: ignore[method-assign]
    return app
