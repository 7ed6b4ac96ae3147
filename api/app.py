"""The HTTP front: FastAPI routes that parse, call the service and frame the answer.

Bodies are validated by the same contract models as the bridge (inside the service),
so a field error reads the same over HTTP as over stdio. Contract codes map to HTTP
statuses here and nowhere else.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel

from api.auth import token_matches
from api.mcp_tools import build_mcp_server
from graph import __version__
from graph.core.contract import (
    ConfirmSupersessionRequest,
    ConfirmSupersessionResponse,
    ContractFailure,
    ErrorCode,
    FlowbabyContextRequest,
    FlowbabyError,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    GraphSnapshotResponse,
    GraphStatsResponse,
    HealthResponse,
    ImpliedSupersessionsResponse,
    IndexStatusResponse,
    MemoryContextResponse,
    MemoryVersionsResponse,
    RepairResponse,
    RetrievalError,
    RetrievalErrorCode,
)
from graph.service import MemoryService

STATUS: dict[str, int] = {
    code.value: status
    for code, status in (
        (ErrorCode.INVALID_PAYLOAD, 400),
        (RetrievalErrorCode.INVALID_REQUEST, 400),
        (ErrorCode.UNAUTHORIZED, 401),
        (ErrorCode.NOT_FOUND, 404),
        (ErrorCode.BACKLOG, 429),
        (RetrievalErrorCode.RATE_LIMIT_EXCEEDED, 429),
        (RetrievalErrorCode.QUEUE_FULL, 429),
        (ErrorCode.MISSING_API_KEY, 503),
        (RetrievalErrorCode.NOT_INITIALIZED, 503),
        (ErrorCode.BRIDGE_TIMEOUT, 504),
        (ErrorCode.FLOWBABY_ERROR, 500),
    )
}
"""HTTP status of each reply code (keyed by wire value: the ingest and retrieval enums share some)."""


def _failure(body: dict[str, Any]) -> JSONResponse:
    headers = {"Retry-After": str(body["retryAfterSec"])} if "retryAfterSec" in body else None
    return JSONResponse(body, status_code=STATUS.get(body["errorCode"], 500), headers=headers)


async def _json_body(request: Request, retrieval: bool) -> Any:
    try:
        return json.loads(await request.body() or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = f"Body is not valid JSON: {exc}"
        if retrieval:
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, message) from None
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, message) from None


BODIES: dict[str, type[BaseModel]] = {
    "/api/agent/ingest": FlowbabyIngestRequest,
    "/api/agent/retrieve": FlowbabyContextRequest,
    "/api/agent/supersessions/confirm": ConfirmSupersessionRequest,
}
"""Bodies are parsed by the service (so errors read as in the bridge), not by FastAPI;
the OpenAPI document still names their contract models."""


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


def create_app(service: MemoryService, token: str, host: str = "127.0.0.1") -> FastAPI:
    """The API, with the MCP tools over streamable HTTP at /mcp behind the same token. `host`
    is where it binds: on loopback, /mcp also checks the Host and Origin headers (DNS rebinding)."""
    mcp = build_mcp_server(service)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", host=host)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    # An explicit JSONResponse keeps FastAPI off its pydantic fast path for response models, so
    # bodies are written by json.dumps exactly as the bridge writes them (4.5e-05, not 0.000045).
    app = FastAPI(
        title="flowbaby",
        version=__version__,
        description="Local memory service for coding agents",
        default_response_class=JSONResponse,
        lifespan=lifespan,
    )
    app.router.routes.extend(mcp_app.routes)

    @app.middleware("http")
    async def authenticate(request: Request, call_next: Any) -> Any:
        if request.url.path not in {"/api/health", "/docs", "/openapi.json"} and not token_matches(
            token, request.headers.get("authorization")
        ):
            return _failure(FlowbabyError(ErrorCode.UNAUTHORIZED, "Missing or wrong bearer token").to_response())
        return await call_next(request)

    @app.exception_handler(ContractFailure)
    async def contract_failure(request: Request, error: ContractFailure) -> JSONResponse:
        return _failure(error.to_response())

    @app.exception_handler(RequestValidationError)
    async def parameter_failure(request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())[1:]) or "request"
        message = f'Parameter "{field}": {first.get("msg", "is invalid")}'
        return _failure(RetrievalError(RetrievalErrorCode.INVALID_REQUEST, message, fields=[field]).to_response())

    @app.get("/api/health", response_model=HealthResponse)
    async def health() -> dict[str, Any]:
        return await service.health()

    @app.post("/api/agent/ingest", status_code=202, response_model=FlowbabyIngestResponse)
    async def ingest(request: Request) -> Any:
        return await service.ingest(await _json_body(request, retrieval=False))

    @app.post("/api/agent/retrieve")
    async def retrieve(request: Request, format: Literal["json", "markdown"] = "json") -> Any:
        markdown = format == "markdown"
        reply = await service.retrieve(await _json_body(request, retrieval=True), markdown=markdown)
        return PlainTextResponse(reply["markdown"], media_type="text/markdown") if markdown else reply

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
    async def search(q: str = "", limit: int = 20) -> dict[str, Any]:
        return await service.search_chunks({"q": q, "limit": limit})

    @app.get("/api/agent/index/status", response_model=IndexStatusResponse)
    async def index_status() -> dict[str, Any]:
        return await service.index_status()

    @app.post("/api/agent/index/repair", response_model=RepairResponse)
    async def repair() -> dict[str, Any]:
        return await service.repair()

    @app.get("/api/agent/supersessions", response_model=ImpliedSupersessionsResponse)
    async def implied_supersessions() -> dict[str, Any]:
        return await service.implied_supersessions()

    @app.post("/api/agent/supersessions/confirm", response_model=ConfirmSupersessionResponse)
    async def confirm_supersession(request: Request) -> dict[str, Any]:
        return await service.confirm_supersession(await _json_body(request, retrieval=False))

    @app.get("/api/agent/memories/{topic_id}", response_model=MemoryVersionsResponse)
    async def memory(topic_id: str) -> dict[str, Any]:
        return await service.memory_versions(topic_id)

    @app.get("/api/agent/memories/{topic_id}/context", response_model=MemoryContextResponse)
    async def memory_context(
        topic_id: str, q: str | None = None, hops: int = 1, version: int | None = None
    ) -> dict[str, Any]:
        return await service.memory_context(topic_id, q, hops, version)

    @app.get("/api/graph", response_model=GraphSnapshotResponse)
    async def graph_snapshot(topicId: str | None = None, hops: int = 2) -> dict[str, Any]:
        params: dict[str, Any] = {"hops": hops}
        if topicId is not None:
            params["topicId"] = topicId
        return await service.graph_snapshot(params)

    @app.get("/api/graph/stats", response_model=GraphStatsResponse)
    async def graph_stats(top: int = 10) -> dict[str, Any]:
        return await service.graph_summary(max(1, min(top, 100)))

    app.openapi = lambda: _document_bodies(app)  # type: ignore[method-assign]
    return app
