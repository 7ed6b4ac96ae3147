"""The contract's method table: every operation a front offers, in one place.

Each row names the service method that answers it (graph.api.MemoryService), how the bridge
calls it (its JSON-RPC name, and what it passes besides the params), its HTTP route and MCP tool
where there is one, and which reply shape its failures take. The bridge's method map, the owner
socket's allow-list (graph.owner.wire) and the bridge's failure shapes are derived from it; a unit
test holds the Protocol, the owner and remote clients, the HTTP app and the MCP tools to it.
INGEST_CONTRACT.md is its prose.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Any

from pydantic import BaseModel

from graph.core.contract import (
    SESSION_REPLIES,
    AuditTailRequest,
    AuditTailResponse,
    BackgroundOperations,
    BackgroundStatusRequest,
    BriefingRequest,
    CaptureRequest,
    ChunkSearchRequest,
    ChunkSearchResponse,
    ConfirmSupersessionRequest,
    ConfirmSupersessionResponse,
    ContractFailure,
    ExportMemoriesRequest,
    ExportMemoriesResponse,
    FlowbabyContextRequest,
    FlowbabyContextResponse,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
    GetMemoryRequest,
    GetMemoryResponse,
    GraphSnapshotRequest,
    GraphSnapshotResponse,
    ImportMemoriesRequest,
    ImportMemoriesResponse,
    ListMemoriesRequest,
    ListMemoriesResponse,
    RecallRequest,
    RefusedRequest,
    RestoreMemoryRequest,
    RestoreMemoryResponse,
    RetrieveMemoryRequest,
    RetrieveMemoryResponse,
    SessionOp,
    SessionsRequest,
    StoreMemoryResponse,
    list_query,
    validate_request,
    validate_retrieval,
)
from graph.core.contract.base import _Strict

log = logging.getLogger("flowbaby.methods")


class Reply(str, Enum):
    """Which failure shape an operation's callers parse (INGEST_CONTRACT.md section 5)."""

    INGEST = "ingest"  # {success:false, errorCode, error}
    RETRIEVAL = "retrieval"  # {success:false, error: code, message}


@dataclass(frozen=True)
class Method:
    service: str
    """The MemoryService method that answers it."""
    bridge: str | None = None
    """Its JSON-RPC method name on the bridge (None: not a bridge method)."""
    http: str | None = None
    """`VERB /path` of its HTTP route (None: no route)."""
    mcp: str | None = None
    """The MCP tool that calls it (None: no tool)."""
    reply: Reply = Reply.INGEST
    args: tuple[str, ...] = ()
    """Positional arguments the bridge passes before the params (a session operation's name)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments the bridge passes (retrieveMemory: markdown=True)."""
    params: bool = True
    """Whether the bridge passes the request's params."""
    body: type[BaseModel] | None = None
    """The contract model of its HTTP route's JSON body. The service validates the body (so errors read
    as over the bridge); the OpenAPI document names the model."""
    response: type[BaseModel] | None = None
    """Its HTTP route's reply model (FastAPI's response_model), where the route is made from this row."""
    status: int = 200
    """Its HTTP route's success status, where the route is made from this row."""
    parse: Callable[[Any], BaseModel] | None = None
    """A typed operation (it takes a contract model, not params): how the bridge and the HTTP route validate
    the params into it, with the error its callers parse."""
    query: tuple[str, ...] = ()
    """A typed operation's route without a body: the query parameters it takes (its path names the others);
    the HTTP app makes it from this row (api/table_routes.py)."""
    audit: str | None = None
    """The command a refused request is audited as (its parse failed before the engine saw it: request_of)."""
    from_query: Callable[[list[tuple[str, str]]], dict[str, Any]] | None = None
    """How its route reads the query string into the request's fields, where not by each field's type
    (listMemories: a status list, comma-separated or repeated)."""

    @property
    def retrieval_errors(self) -> bool:
        """Its request's faults are INVALID_REQUEST in the retrieval shape (its parse is validate_retrieval)."""
        return isinstance(self.parse, partial) and self.parse.func is validate_retrieval


def _body(service: str, bridge: str, http: str, request: type[_Strict], response: type[BaseModel]) -> Method:
    """A typed operation whose HTTP route takes its request as the JSON body (errors: INVALID_PAYLOAD)."""
    return Method(service, bridge, http, body=request, response=response, parse=partial(validate_request, request))


def _query(
    service: str,
    bridge: str | None,
    http: str,
    request: type[_Strict],
    response: type[BaseModel],
    query: tuple[str, ...],
    errors: Callable[[type[_Strict], Any], Any] = validate_request,
    **extra: Any,
) -> Method:
    """A typed operation whose HTTP route takes its request's fields from the query string."""
    return Method(service, bridge, http, response=response, parse=partial(errors, request), query=query, **extra)


def _write(service: str, bridge: str, http: str, mcp: str | None, response: type[BaseModel]) -> Method:
    """ingestForAgent and storeMemory: a summary staged (202); a refused one is audited as the command."""
    parse = partial(validate_request, FlowbabyIngestRequest)
    return Method(
        service, bridge, http, mcp, body=FlowbabyIngestRequest, response=response, status=202, parse=parse, audit=bridge
    )


def _hook(service: str, bridge: str | None, request: type[_Strict]) -> Method:
    """A client hook's operation (section 17): reached through the owner (the stand-alone hook's socket call)."""
    return Method(service, bridge, parse=partial(validate_request, request))


def _sessions(op: SessionOp, bridge: str, http: str | None, query: tuple[str, ...] = ("source",)) -> Method:
    return Method(
        "sessions",
        bridge,
        http,
        "flowbaby_searchSessions" if op == "search_all" else None,
        args=(op,),
        response=SESSION_REPLIES[op],
        parse=partial(validate_retrieval, SessionsRequest),
        query=query,
    )


METHODS: tuple[Method, ...] = (
    Method("health", "health", "GET /api/health", params=False),
    INGEST := _write("ingest", "ingestForAgent", "POST /api/agent/ingest", None, FlowbabyIngestResponse),
    STORE := _write(
        "store_memory", "storeMemory", "POST /api/agent/memories", "flowbaby_storeMemory", StoreMemoryResponse
    ),
    Method("audit_refused"),
    BACKGROUND := _query(
        "background_status",
        "backgroundStatus",
        "GET /api/agent/background",
        BackgroundStatusRequest,
        BackgroundOperations,
        (),
        mcp="flowbaby_backgroundStatus",
    ),
    RETRIEVE := Method(
        "retrieve",
        "retrieveForAgent",
        "POST /api/agent/retrieve",
        reply=Reply.RETRIEVAL,
        body=FlowbabyContextRequest,
        response=FlowbabyContextResponse,
        parse=partial(validate_retrieval, FlowbabyContextRequest),
        audit="retrieveForAgent",
    ),
    RETRIEVE_MEMORY := Method(
        "retrieve",
        "retrieveMemory",
        "POST /api/agent/retrieve?format=markdown",
        "flowbaby_retrieveMemory",
        Reply.RETRIEVAL,
        kwargs={"markdown": True},
        response=RetrieveMemoryResponse,
        parse=partial(validate_retrieval, RetrieveMemoryRequest),
        audit="retrieveMemory",
    ),
    Method("index_status", "indexStatus", "GET /api/agent/index/status", "flowbaby_indexStatus", params=False),
    Method("repair", "repair", "POST /api/agent/index/repair", params=False),
    Method("graph_summary", "graphStats", "GET /api/graph/stats", params=False),
    _query(
        "graph_snapshot",
        "graphSnapshot",
        "GET /api/graph",
        GraphSnapshotRequest,
        GraphSnapshotResponse,
        ("topicId", "hops"),
        validate_retrieval,
    ),
    Method("implied_supersessions", "listImpliedSupersessions", "GET /api/agent/supersessions", params=False),
    _body(
        "confirm_supersession",
        "confirmSupersession",
        "POST /api/agent/supersessions/confirm",
        ConfirmSupersessionRequest,
        ConfirmSupersessionResponse,
    ),
    Method("memory_versions"),
    _query(
        "list_memories",
        "listMemories",
        "GET /api/agent/memories",
        ListMemoriesRequest,
        ListMemoriesResponse,
        tuple(ListMemoriesRequest.model_fields),
        from_query=list_query,
    ),
    _query(
        "get_memory",
        "getMemory",
        "GET /api/agent/memories/{topicId}",
        GetMemoryRequest,
        GetMemoryResponse,
        ("scope",),
        mcp="flowbaby_getMemory",
    ),
    _body(
        "restore_memory",
        "restoreMemory",
        "POST /api/agent/memories/restore",
        RestoreMemoryRequest,
        RestoreMemoryResponse,
    ),
    # flowbaby_forgetMemory is offered to agents only with FLOWBABY_AGENT_FORGET=1 (section 20.3).
    _body(
        "forget_memory", "forgetMemory", "POST /api/agent/memories/forget", ForgetMemoryRequest, ForgetMemoryResponse
    ),
    _query(
        "export_memories",
        "exportMemories",
        "GET /api/agent/export",
        ExportMemoriesRequest,
        ExportMemoriesResponse,
        ("cursor", "limit", "scope"),
    ),
    _body("import_memories", "importMemories", "POST /api/agent/import", ImportMemoriesRequest, ImportMemoriesResponse),
    Method("memory_context", http="GET /api/agent/memories/{topic_id}/context"),
    # Its route is shared with a session's search (session_id or cwd): written by hand in api/app.py.
    SEARCH := _query(
        "search_chunks",
        None,
        "GET /api/agent/search?q=",
        ChunkSearchRequest,
        ChunkSearchResponse,
        ("q", "limit"),
        validate_retrieval,
    ),
    _query("audit_tail", None, "GET /api/agent/audit", AuditTailRequest, AuditTailResponse, ("limit",)),
    _sessions("list", "sessionsList", "GET /api/agent/sessions", ("cwd", "source")),
    _sessions("current", "sessionsCurrent", "GET /api/agent/current-session", ("cwd", "source")),
    _sessions("status", "sessionsStatus", "GET /api/agent/index/status?session_id="),  # shared with indexStatus
    _sessions(
        "search", "sessionsSearch", "GET /api/agent/sessions/{session_id}/search", ("q", "limit", "source", "abstain")
    ),
    _sessions(
        "search_all", "sessionsSearchAll", "GET /api/agent/sessions/search", ("q", "cwd", "source", "limit", "abstain")
    ),
    _sessions(
        "context",
        "sessionsContext",
        "GET /api/agent/sessions/{session_id}/context",
        ("q", "context_turns", "limit", "source"),
    ),
    _sessions("import", "sessionsImport", "POST /api/agent/sessions/{session_id}/import"),
    _sessions("update", "sessionsUpdate", "POST /api/agent/sessions/{session_id}/update"),
    _sessions("repair", "sessionsRepair", "POST /api/agent/sessions/{session_id}/repair"),
    # Reached through the owner only: the fronts' session watch and the client hooks (section 17).
    Method("watch_sessions"),
    _hook("briefing", "briefing", BriefingRequest),  # also the VS Code extension's Copilot instructions file (17.6)
    _hook("recall", None, RecallRequest),
    _hook("capture", None, CaptureRequest),
)

OWNER_METHODS = frozenset(method.service for method in METHODS)
"""The service methods a front may call through the owner: the whole API the fronts use."""
BRIDGE_METHODS = {method.bridge: method for method in METHODS if method.bridge}
"""JSON-RPC name -> row (the bridge adds `shutdown`, which ends the bridge itself)."""
BODY_ROUTES = tuple(method for method in METHODS if method.body is not None and method.reply is Reply.INGEST)
"""Operations whose HTTP route hands its JSON body to the service and nothing more: the HTTP app
(api/app.py) and the team server's client (graph/remote/client.py) make them from these rows."""
QUERY_ROUTES = tuple(
    method for method in METHODS if method.http and method.parse and method.body is None and "?" not in method.http
)
"""Typed operations whose HTTP route takes its fields from the query string and path: made from these rows
(api/table_routes.py); a route another operation shares (`?` in it) is written by hand."""
RETRIEVAL_METHODS = frozenset(name for name, method in BRIDGE_METHODS.items() if method.reply is Reply.RETRIEVAL)
"""Bridge methods whose failures use the retrieval shape."""


def _refusal(method: Method, params: Any, error: ContractFailure, agent_name: str | None) -> RefusedRequest:
    """The audit line's fields: the caller's agent (the front's, else the request's), and the text it
    digests (a write's topic, a retrieval's query)."""
    assert method.audit is not None
    sent = params if isinstance(params, dict) else {}
    said = sent.get("query" if method.reply is Reply.RETRIEVAL else "topic")
    agent = agent_name or sent.get("agentName")
    return RefusedRequest(
        command=method.audit,
        errorCode=error.code.value,
        agentName=agent if isinstance(agent, str) else None,
        topic=said if isinstance(said, str) else None,
    )


async def request_of(service: Any, method: Method, params: Any, agent_name: str | None = None) -> Any:
    """A typed row's request from its params (the row's parse, with the error its callers parse); a
    refused one is first audited by the service where the row says (`audit`), as the engine audited
    the invalid requests it validated itself. `agent_name`: the caller a front knows (the MCP client)."""
    assert method.parse is not None
    try:
        return method.parse(params)
    except ContractFailure as error:
        if method.audit is not None:
            try:
                await service.audit_refused(_refusal(method, params, error, agent_name))
            except Exception:  # the caller gets its request's error, never the audit's
                log.exception("auditing a refused %s failed", method.audit)
        raise


TYPED: dict[str, Method] = {method.service: method for method in reversed(METHODS) if method.parse}
"""A typed operation's row by its service method, its first (retrieve: retrieveForAgent's): the owner's socket,
the command line, the engine's own calls."""
