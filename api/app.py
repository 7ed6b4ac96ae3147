"""The HTTP front: FastAPI routes that parse, call the service and frame the answer.

Bodies are validated by the same contract models as the bridge (inside the service),
so a field error reads the same over HTTP as over stdio. Contract codes map to HTTP
statuses here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, Literal, cast

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException

import graph.core.jsonwire as jsonwire
from api.browser import browser_routes
from api.docs_page import add_docs_page
from api.guard import BodyLimit, HostGuard, HostRule, InFlightLimit
from api.mcp_tools import build_mcp_server
from api.tenancy import AUTHORIZED, CurrentService, NamespaceRouter, NamespaceServices, Tenancy, WorkspaceToken
from graph import __version__
from graph.api import MemoryService, WorkspacePaths, namespace_for, service_record
from graph.core.contract import (
    AuditTailRequest,
    AuditTailResponse,
    ContractFailure,
    ErrorCode,
    ExportMemoriesResponse,
    FlowbabyError,
    ForgetMemoryResponse,
    GetMemoryResponse,
    GraphSnapshotRequest,
    GraphSnapshotResponse,
    GraphStatsResponse,
    HealthResponse,
    ImpliedSupersessionsResponse,
    IndexStatusResponse,
    ListMemoriesResponse,
    MemoryContextResponse,
    PublicHealthResponse,
    RepairResponse,
    RetrievalError,
    RetrievalErrorCode,
    validate_request,
    validate_retrieval,
)
from graph.core.methods import BODY_ROUTES, METHODS, Method

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


async def _json_body(request: Request, retrieval: bool) -> Any:
    try:
        return jsonwire.loads(await request.body() or b"null")
    except jsonwire.JSONInputError as exc:
        message = f"Body is not valid JSON: {exc}"
        if retrieval:
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, message) from None
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, message) from None


BODIES: dict[str, type[BaseModel]] = {
    method.http.split(" ")[1].split("?")[0]: method.body for method in METHODS if method.http and method.body
}
"""Bodies are parsed by the service (so errors read as in the bridge), not by FastAPI;
the OpenAPI document still names their contract models (the method table's `body`)."""


def _body_route(app: FastAPI, service: MemoryService, method: Method) -> None:
    """The route of a row of the method table that hands its JSON body to the service (BODY_ROUTES)."""
    assert method.http is not None
    verb, path = method.http.split(" ")

    async def route(request: Request) -> Any:
        return await getattr(service, method.service)(await _json_body(request, retrieval=False))

    app.add_api_route(
        path,
        route,
        methods=[verb],
        status_code=method.status,
        response_model=method.response,
        name=method.service,
        summary=method.bridge,
    )


def _document_bodies(app: FastAPI) -> dict[str, Any]:
    """The generated OpenAPI document, with each body's model and the models it uses
    registered under components/schemas, so $refs resolve for clients and fuzzers."""
    if app.openapi_schema is None:
        spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        for path, model in BODIES.items():
            schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[model.__name__] = schema
            ref = {"$ref": f"#/components/schemas/{model.__name__}"}
            spec["paths"][path]["post"]["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": ref}},
            }
        app.openapi_schema = spec
    return app.openapi_schema


def _given(**params: Any) -> dict[str, Any]:
    """A route's parameters for the service, without those the request left out (None), so the
    contract's own defaults apply."""
    return {key: value for key, value in params.items() if value is not None}


def list_params(request: Request) -> dict[str, Any]:
    """listMemories' fields from a query string, typed where the text says so; the service
    validates them, so a bad value is answered as over the bridge (INVALID_PAYLOAD naming it)."""
    params: dict[str, Any] = {}
    for key, value in request.query_params.multi_items():
        if key == "status":
            params.setdefault("status", []).extend(item for item in value.split(",") if item)
        elif key == "limit":
            params[key] = int(value) if value.lstrip("-").isdigit() else value
        elif key == "allVersions":
            params[key] = {"true": True, "1": True, "false": False, "0": False}.get(value.lower(), value)
        else:
            params[key] = value
    return params


def own_namespace(service: MemoryService) -> str | None:
    """The embedded server's namespace (its folder's), or None if that name is no namespace."""
    paths = getattr(service, "paths", None)
    if not isinstance(paths, WorkspacePaths):
        return None
    try:
        return namespace_for(paths)
    except FlowbabyError:
        return None


def create_app(
    service: MemoryService, token: str, host: str = "127.0.0.1", docs: bool = False, tenancy: Tenancy | None = None
) -> FastAPI:
    """The API, with the MCP tools over streamable HTTP at /mcp behind the same token. `host`
    is where it binds: every request's Host and Origin must name it or loopback (DNS rebinding).
    `docs` serves /docs, Swagger UI with its files served from here (api/docs_page.py): off unless asked for.
    `tenancy`: a team server's tokens and namespaces (api/tenancy.py); by default the workspace's
    token and namespace. Routes and MCP tool calls use the request's namespace's service."""
    if tenancy is None:
        namespaces = NamespaceServices(service, own_namespace(service), team=False)
        tenancy = Tenancy(WorkspaceToken(token), namespaces)
    service = cast(MemoryService, CurrentService(service))
    mcp = build_mcp_server(service)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", host=host)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            watching = asyncio.create_task(mcp.idioms.watch())  # resources/list_changed when memories change
            try:
                yield
            finally:
                watching.cancel()

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
    app.router.routes.extend(mcp_app.routes)
    if docs:
        add_docs_page(app)
    app.add_middleware(BodyLimit)  # innermost: a body is read only once the token checked out

    app.add_middleware(NamespaceRouter, tenancy=tenancy)  # token, namespace and scope; bodies unread
    app.add_middleware(InFlightLimit)
    app.add_middleware(HostGuard, rule=HostRule(host))

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

    @app.get("/api/health", response_model=HealthResponse | PublicHealthResponse)
    async def health(
        request: Request, challenge: str | None = Query(None, pattern="^[0-9a-f]{32,128}$")
    ) -> dict[str, Any] | JSONResponse:
        """Without the token: only that it is up, and its version (no path, no pid); with a
        `challenge`, the proof that it holds this workspace's token (`flowbaby ui` asks before it sends it)."""
        if AUTHORIZED.get():
            return await service.health()
        port = int((request.scope.get("server") or ("", 0))[1] or 0)
        proof = service_record.server_proof(token, port, challenge) if challenge else None
        return JSONResponse(PublicHealthResponse(version=__version__, proof=proof).model_dump(exclude_none=True))

    for method in BODY_ROUTES:
        _body_route(app, service, method)

    @app.post("/api/agent/retrieve")
    async def retrieve(request: Request, format: Literal["json", "markdown"] = "json") -> Any:
        markdown = format == "markdown"
        reply = await service.retrieve(await _json_body(request, retrieval=True), markdown=markdown)
        # Accept: application/json asks for the whole retrieveMemory reply (entries too): remote clients.
        as_text = markdown and "application/json" not in request.headers.get("accept", "")
        return PlainTextResponse(reply["markdown"], media_type="text/markdown") if as_text else reply

    @app.get("/api/agent/background")
    async def background() -> dict[str, Any]:
        return await service.background_status({})

    @app.get("/api/agent/background/{operation_id}")
    async def background_one(operation_id: str) -> Any:
        reply = await service.background_status({"operationId": operation_id})
        if reply["status"] == "unknown":  # a resource path: an id the ledger never had is a 404
            return _failure(FlowbabyError(ErrorCode.NOT_FOUND, f'No operation "{operation_id}"').to_response())
        return reply

    @app.get("/api/agent/search")
    async def search(
        q: str = "", limit: int = 20, session_id: str | None = None, cwd: str | None = None, source: str | None = None
    ) -> dict[str, Any]:
        """With session_id (or cwd, for its current session): that session's turns; else memory chunks."""
        if session_id or cwd:
            if not session_id:
                current = await service.sessions("current", {"cwd": cwd, "source": source})
                session_id = current["session_id"]
            return await service.sessions(
                "search", {"session_id": session_id, "q": q, "limit": limit, "source": source}
            )
        return await service.search_chunks({"q": q, "limit": limit})

    @app.get("/api/agent/index/status")
    async def index_status(session_id: str | None = None, cwd: str | None = None, source: str | None = None) -> Any:
        """A session's index status (by id, or the current one under cwd); without either, the memory index."""
        if session_id or cwd:
            return await service.sessions("status", {"session_id": session_id, "cwd": cwd, "source": source})
        return IndexStatusResponse.model_validate(await service.index_status()).model_dump(mode="json")

    @app.post("/api/agent/index/repair", response_model=RepairResponse)
    async def repair() -> dict[str, Any]:
        return await service.repair()

    @app.get("/api/agent/supersessions", response_model=ImpliedSupersessionsResponse)
    async def implied_supersessions() -> dict[str, Any]:
        return await service.implied_supersessions()

    @app.get("/api/agent/memories", response_model=ListMemoriesResponse)
    async def list_memories(request: Request) -> dict[str, Any]:
        """listMemories: the query parameters are its fields (status comma-separated or repeated)."""
        return await service.list_memories(list_params(request))

    @app.get("/api/agent/memories/{topic_id}", response_model=GetMemoryResponse)
    async def memory(topic_id: str, scope: str | None = None) -> dict[str, Any]:
        """getMemory (its reply holds memoryVersions' topicId and versions too); ?scope=user: the user store."""
        return await service.get_memory(_given(topicId=topic_id, scope=scope))

    @app.delete("/api/agent/memories/{topic_id}", response_model=ForgetMemoryResponse)
    async def forget_memory(
        topic_id: str, version: int | None = None, dryRun: bool = False, scope: str | None = None
    ) -> dict[str, Any]:
        """forgetMemory of one topic (every version), or of one version with ?version=N; ?scope=user."""
        return await service.forget_memory(_given(topicId=topic_id, dryRun=dryRun, version=version, scope=scope))

    @app.get("/api/agent/export", response_model=ExportMemoriesResponse)
    async def export_memories(cursor: str | None = None, limit: int = 500, scope: str | None = None) -> dict[str, Any]:
        """exportMemories: one page of every version, oldest first (the export file's lines); ?scope=user."""
        return await service.export_memories(_given(limit=limit, cursor=cursor, scope=scope))

    @app.get("/api/agent/memories/{topic_id}/context", response_model=MemoryContextResponse)
    async def memory_context(
        topic_id: str, q: str | None = None, hops: int = 1, version: int | None = None
    ) -> dict[str, Any]:
        return await service.memory_context(topic_id, q, hops, version)

    @app.get("/api/graph", response_model=GraphSnapshotResponse)
    async def graph_snapshot(topicId: str | None = None, hops: int = 2) -> Response:
        """Serialised by pydantic directly: FastAPI's own encoding of 2,000 nodes took ~70 ms."""
        request = validate_retrieval(GraphSnapshotRequest, _given(hops=hops, topicId=topicId))
        reply = await service.graph_snapshot(request)
        return Response(reply.model_dump_json(), media_type="application/json")

    @app.get("/api/agent/audit", response_model=AuditTailResponse)
    async def audit_tail(limit: int = 100) -> AuditTailResponse:
        """The newest audit entries, newest first (the memory browser's activity feed)."""
        return await service.audit_tail(validate_request(AuditTailRequest, {"limit": limit}))

    @app.get("/api/graph/stats", response_model=GraphStatsResponse)
    async def graph_stats(top: int = 10) -> GraphStatsResponse:
        return await service.graph_summary(max(1, min(top, 100)))

    _session_routes(app, service)
    browser_routes(app, tenancy)
    app.openapi = lambda: _document_bodies(app)  # type: ignore[method-assign]
    return app


def _session_routes(app: FastAPI, service: MemoryService) -> None:
    """Vapor's agent-memory routes over the agents' own sessions (graph/sessions), and ours beyond it."""

    @app.get("/api/agent/current-session")
    async def current_session(cwd: str | None = None, source: str | None = None) -> dict[str, Any]:
        return await service.sessions("current", {"cwd": cwd, "source": source})

    @app.get("/api/agent/sessions")
    async def sessions(cwd: str | None = None, source: str | None = None) -> dict[str, Any]:
        return await service.sessions("list", {"cwd": cwd, "source": source})

    @app.get("/api/agent/sessions/search")
    async def sessions_search(
        q: str = "", cwd: str | None = None, source: str | None = None, limit: int = 20, abstain: bool = False
    ) -> dict[str, Any]:
        params = {"q": q, "cwd": cwd, "source": source, "limit": limit, "abstain": abstain}
        return await service.sessions("search_all", params)

    @app.get("/api/agent/sessions/{session_id}/search")
    async def session_search(
        session_id: str, q: str = "", limit: int = 20, source: str | None = None, abstain: bool = False
    ) -> Any:
        params = {"session_id": session_id, "q": q, "limit": limit, "source": source, "abstain": abstain}
        return await service.sessions("search", params)

    @app.get("/api/agent/sessions/{session_id}/context")
    async def session_context(
        session_id: str, q: str = "", context_turns: int = 2, limit: int = 3, source: str | None = None
    ) -> dict[str, Any]:
        params = {"session_id": session_id, "q": q, "context_turns": context_turns, "limit": limit, "source": source}
        return await service.sessions("context", params)

    def action_route(action: Literal["import", "update", "repair"]) -> None:
        async def run(session_id: str, source: str | None = None) -> dict[str, Any]:
            return await service.sessions(action, {"session_id": session_id, "source": source})

        app.add_api_route(
            f"/api/agent/sessions/{{session_id}}/{action}", run, methods=["POST"], name=f"session_{action}"
        )

    for action in ("import", "update", "repair"):
        action_route(action)
