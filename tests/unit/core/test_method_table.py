"""The method table (graph.core.methods) is the one list of operations: the service Protocol, the
engine, both clients that stand in for it (the owner's and a team server's), the bridge, the HTTP
app and the MCP server all hold exactly what it says."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import httpx
import pytest

from api.app import create_app
from api.mcp_tools import build_mcp_server
from bridge.server import Bridge
from graph.core.contract import (
    ErrorCode,
    FlowbabyError,
    RefusedRequest,
    RetrievalError,
    RetrievalErrorCode,
    SessionSearchResponse,
    SessionsRequest,
)
from graph.core.methods import (
    BRIDGE_METHODS,
    METHODS,
    OWNER_METHODS,
    RETRIEVAL_METHODS,
    RETRIEVE_MEMORY,
    TYPED,
    Reply,
    request_of,
)
from graph.core.service_protocol import MemoryService
from graph.engine.service import FlowbabyService
from graph.owner.client import OwnerClient
from graph.remote.client import RemoteService

LIFECYCLE = {"add_operation_listener", "close"}
"""Protocol members that are not operations: a front registers for events and closes."""


def _protocol_methods() -> set[str]:
    return {name for name, _ in inspect.getmembers(MemoryService, inspect.isfunction) if not name.startswith("_")}


def test_the_table_is_the_protocol() -> None:
    assert {method.service for method in METHODS} == _protocol_methods() - LIFECYCLE
    assert _protocol_methods() - LIFECYCLE == OWNER_METHODS


@pytest.mark.parametrize("implementation", [FlowbabyService, OwnerClient, RemoteService])
def test_every_implementation_answers_every_operation(implementation: type) -> None:
    missing = sorted(
        name for name in OWNER_METHODS if not inspect.iscoroutinefunction(getattr(implementation, name, None))
    )
    assert not missing, f"{implementation.__name__} lacks {missing}"


class Recording:
    """A stand-in service that records how the bridge called it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def add_operation_listener(self, listener: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            self.calls.append((name, args, kwargs))
            return {"success": True}

        return call


class Writer:
    def send(self, message: dict[str, Any]) -> None:
        pass

    def notify(self, method: str, params: dict[str, Any]) -> None:
        pass


STAMP = "2026-01-01T00:00:00.000Z"
EXPORTED = {"topicId": "t", "version": 1, "memoryId": "m", "status": "Active", "topic": "T", "context": "C"}
REQUIRED = {
    "topicId": "t",
    "query": "q",
    "topic": "T",
    "context": "C",
    "metadata": {"topicId": "t", "createdAt": STAMP},
    "olderTopicId": "a",
    "newerTopicId": "b",
    "memories": [{**EXPORTED, "createdAt": STAMP, "updatedAt": STAMP, "stagedAt": STAMP}],
}
"""What every typed row's request model needs, so each row's parse accepts the stand-in params."""


def test_the_bridge_serves_the_table_and_calls_each_row_as_it_says() -> None:
    service = Recording()
    bridge = Bridge(service, Writer(), 5.0)  # type: ignore[arg-type]
    assert set(bridge.methods) == set(BRIDGE_METHODS) | {"shutdown"}
    for name, method in BRIDGE_METHODS.items():
        params = {"marker": name, **REQUIRED}
        asyncio.run(bridge.methods[name](params))
        called, args, kwargs = service.calls[-1]
        assert called == method.service
        sent = [method.parse(params)] if method.parse else [params] if method.params else []
        assert args == (*method.args, *sent)
        assert kwargs == method.kwargs
    assert {"retrieveForAgent", "retrieveMemory"} == RETRIEVAL_METHODS
    assert all(BRIDGE_METHODS[name].reply is Reply.RETRIEVAL for name in RETRIEVAL_METHODS)


def test_every_http_route_and_mcp_tool_of_the_table_is_served() -> None:
    app = create_app(Recording(), "t" * 32)  # type: ignore[arg-type]
    routes = {f"{verb} {route.path}" for route in app.routes for verb in getattr(route, "methods", None) or ()}
    wanted = {method.http.split("?")[0] for method in METHODS if method.http}
    assert wanted <= routes, sorted(wanted - routes)
    tools = {tool.name for tool in asyncio.run(build_mcp_server(Recording()).list_tools())}  # type: ignore[arg-type]
    assert {method.mcp for method in METHODS if method.mcp} <= tools


def test_the_owner_client_forwards_every_operation_by_name_with_its_arguments() -> None:
    """The owner client's operations are made from the table: each reaches the service with the
    caller's arguments by name, and this front's folder where the operation records one."""
    client = OwnerClient(None, _never_opened)  # type: ignore[arg-type]
    client._local = Recording()
    client.origin = "/front/worktree"
    for name in sorted(OWNER_METHODS):
        signature = inspect.signature(getattr(MemoryService, name))
        given = {
            parameter: f"{name}.{parameter}"
            for parameter in list(signature.parameters)[1:]
            if not (name == "retrieve" and parameter == "origin")  # left out: the front's folder goes instead
        }
        parameters = list(signature.parameters.values())[1:]
        positional = [given.pop(p.name) for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
        asyncio.run(getattr(client, name)(*positional, **given))
        called, args, kwargs = client._local.calls[-1]
        expected = {p: f"{name}.{p}" for p in list(signature.parameters)[1:]}
        if name == "retrieve":
            expected["origin"] = "/front/worktree"
        assert (called, args, kwargs) == (name, (), expected)


async def _never_opened() -> Any:
    raise AssertionError("the owner client opened the workspace")


class Searching(Recording):
    """Answers a session search with its reply model (the generated route checks it)."""

    async def sessions(self, op: str, request: Any) -> SessionSearchResponse:
        self.calls.append(("sessions", (op, request), {}))
        return SessionSearchResponse(results=[], count=0, abstained="nothing close")


def test_a_query_route_of_the_table_parses_its_query_and_path_into_the_rows_model() -> None:
    """GET /api/agent/sessions/{session_id}/search is made from its row: the query parameters the row names,
    typed by the request model's fields, and the path, reach the service as the model (others are ignored);
    a value of the wrong type is 400 INVALID_REQUEST naming it, and the service is not called."""
    service = Searching()
    app = create_app(service, "t" * 32)  # type: ignore[arg-type]
    bearer = {"Authorization": "Bearer " + "t" * 32}

    async def get(query: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get(f"/api/agent/sessions/ses%201/search?{query}", headers=bearer)

    found = asyncio.run(get("q=why&limit=5&abstain=true&cwd=/elsewhere"))
    assert found.status_code == 200 and found.json() == {"results": [], "count": 0, "abstained": "nothing close"}
    request = SessionsRequest(session_id="ses 1", q="why", limit=5, abstain=True)
    assert service.calls == [("sessions", ("search", request), {})]
    refused = asyncio.run(get("q=why&limit=five"))
    assert refused.status_code == 400
    assert (refused.json()["errorCode"], refused.json()["fields"]) == ("INVALID_REQUEST", ["limit"])
    assert len(service.calls) == 1


def test_a_refused_request_is_audited_and_keeps_its_error() -> None:
    """request_of audits a refused request of an audited row through the service (the front's agent name first,
    the query as the text it digests), and the caller gets its request's own error even when auditing fails."""
    audited: list[RefusedRequest] = []

    class Service:
        async def audit_refused(self, refusal: RefusedRequest) -> None:
            audited.append(refusal)

    class Broken:
        async def audit_refused(self, refusal: RefusedRequest) -> None:
            raise OSError("disk full")

    asked = {"query": "q", "maxResults": 11}  # retrieveMemory takes at most 10
    with pytest.raises(RetrievalError) as refused:
        asyncio.run(request_of(Service(), RETRIEVE_MEMORY, asked, "claude-code"))
    assert refused.value.code is RetrievalErrorCode.INVALID_REQUEST and refused.value.details == {
        "fields": ["maxResults"]
    }
    assert audited == [
        RefusedRequest(command="retrieveMemory", agentName="claude-code", topic="q", errorCode="INVALID_REQUEST")
    ]
    with pytest.raises(FlowbabyError) as kept:
        asyncio.run(request_of(Broken(), TYPED["ingest"], {"topic": "", "context": "c"}))
    assert kept.value.code is ErrorCode.INVALID_PAYLOAD and kept.value.details == {"fields": ["topic"]}
