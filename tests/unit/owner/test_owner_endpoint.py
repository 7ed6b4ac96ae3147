"""The owner endpoint and the client of later fronts, in process over a real unix socket,
with a small fake service: calls, contract failures, events, and taking over."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from graph.core.contract import (
    ErrorCode,
    FlowbabyContextRequest,
    FlowbabyError,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
    GraphSnapshotRequest,
    GraphSnapshotResponse,
    HealthResponse,
    MemoryStatus,
    OperationStatus,
    RefusedRequest,
    ResponseMetadata,
    RetrievalError,
    RetrievalErrorCode,
    RetrievalReply,
    RetrieveMemoryResponse,
    SessionSearchResponse,
    SessionsRequest,
    SessionsResponse,
    Succeeded,
    WatchingSessions,
)
from graph.core.workspace import WorkspacePaths
from graph.owner.client import OwnerClient
from graph.owner.endpoint import OwnerEndpoint
from graph.owner.wire import endpoint_file, socket_path


class FakeService:
    """Answers like the service: a dict per call, contract failures as exceptions."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[tuple[str, Any]] = []
        self.listeners: list[Any] = []
        self.closed = False

    def add_operation_listener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def health(self) -> HealthResponse:
        """Which owner answered: its name as the workspace."""
        self.calls.append(("health", None))
        return HealthResponse.model_validate(
            {"version": "0", "workspace": self.name, "pid": 1, "embedderLoaded": False, "workerPid": None}
            | {"llm": "offline-extractor", "memories": 0, "pendingOperations": 0, "uptimeSec": 0.0}
        )

    async def ingest(self, request: FlowbabyIngestRequest) -> FlowbabyIngestResponse:
        self.calls.append(("ingest", request.topic))
        metadata = ResponseMetadata(
            topic_id="t", session_id=None, plan_id=None, status=MemoryStatus.ACTIVE, created_at="", updated_at=""
        )
        return FlowbabyIngestResponse(
            staged=True,
            operationId=self.name,
            ingested_chars=0,
            timestamp="",
            metadata=metadata,
            staging_duration_sec=0.0,
            ingestion_metrics={"topic": request.topic},
        )

    async def audit_refused(self, refusal: RefusedRequest) -> Succeeded:
        self.calls.append(("audit_refused", refusal))
        return Succeeded()

    async def retrieve(self, request: FlowbabyContextRequest, markdown: bool = False) -> RetrievalReply:
        self.calls.append(("retrieve", request.query))
        if request.query == "too many":
            raise RetrievalError(RetrievalErrorCode.RATE_LIMIT_EXCEEDED, "slow down", retryAfterSec=6)
        return RetrieveMemoryResponse(entries=[], totalResults=0, tokensUsed=0, markdown=f"{markdown} {self.name}")

    async def watch_sessions(self) -> WatchingSessions:
        self.calls.append(("watch_sessions", None))
        return WatchingSessions(watching=True)

    async def graph_snapshot(self, request: GraphSnapshotRequest) -> GraphSnapshotResponse:
        self.calls.append(("graph_snapshot", request))
        nodes = [{"id": f"memory:{request.topicId}", "hops": request.hops}]
        return GraphSnapshotResponse.model_validate(
            {"topicId": request.topicId, "hops": request.hops, "directed": False, "multigraph": False}
            | {"graph": {}, "nodes": nodes, "edges": []}
        )

    async def sessions(self, op: str, request: SessionsRequest) -> SessionsResponse:
        self.calls.append(("sessions", request))
        hit = {"session_id": request.session_id, "chunk_text": request.q}
        return SessionSearchResponse(results=[hit], count=1)

    async def forget_memory(
        self, request: ForgetMemoryRequest, *, agent_name: str | None = None
    ) -> ForgetMemoryResponse:
        self.calls.append(("forget_memory", request))
        topics = [request.topicId] if request.topicId else []
        return ForgetMemoryResponse(
            dryRun=request.dryRun, forgetId=None, topics=1, versions=1, topicIds=topics, pending=[]
        )

    async def close(self, grace_sec: float = 30.0, *, hand_on: bool = False) -> None:
        self.closed = True


async def _owner(paths: WorkspacePaths, name: str) -> tuple[FakeService, OwnerEndpoint]:
    service = FakeService(name)
    endpoint = OwnerEndpoint(service, paths)
    await endpoint.start()
    return service, endpoint


def test_calls_results_and_contract_failures_cross_the_socket(paths: WorkspacePaths) -> None:
    async def scenario() -> None:
        owner, endpoint = await _owner(paths, "first")
        front = await OwnerClient.connect(paths, opener=_never)
        assert (await front.call("health")).workspace == "first"
        staged = await front.call("ingest", request=FlowbabyIngestRequest(topic="Ünïcödé ✓", context="c"))
        assert staged.operationId == "first" and staged.ingestion_metrics["topic"] == "Ünïcödé ✓"
        with pytest.raises(FlowbabyError) as invalid:
            await front.call("ingest", request={"topic": "", "context": "c", "agentName": "a"})
        assert invalid.value.code is ErrorCode.INVALID_PAYLOAD and invalid.value.details == {"fields": ["topic"]}
        with pytest.raises(RetrievalError) as throttled:
            await front.call("retrieve", request=FlowbabyContextRequest(query="too many"), markdown=True)
        assert throttled.value.code is RetrievalErrorCode.RATE_LIMIT_EXCEEDED
        assert throttled.value.details == {"retryAfterSec": 6}
        asked = await front.call("retrieve", request=FlowbabyContextRequest(query="q"), markdown=True)
        assert asked.markdown == "True first"
        with pytest.raises(FlowbabyError, match="unknown method") as fault:
            await front.call("close")  # not part of the remote API
        assert fault.value.code is ErrorCode.FLOWBABY_ERROR
        assert [name for name, _ in owner.calls] == ["health", "ingest", "audit_refused", "retrieve", "retrieve"]
        refused = RefusedRequest(command="ingestForAgent", agentName="a", topic="", errorCode="INVALID_PAYLOAD")
        assert owner.calls[2][1] == refused  # the owner audits a request it refused, as the engine did
        await front.close()
        await endpoint.close()

    asyncio.run(scenario())


def test_a_typed_operation_crosses_the_socket_as_its_contract_models(paths: WorkspacePaths) -> None:
    """graphSnapshot takes and returns contract models: the front's request reaches the owner as the
    model (not its JSON), and the owner's reply comes back as the reply model, field for field."""

    async def scenario() -> None:
        owner, endpoint = await _owner(paths, "first")
        front = await OwnerClient.connect(paths, opener=_never)
        reply = await front.graph_snapshot(GraphSnapshotRequest(topicId="adr-0007", hops=1))
        assert isinstance(reply, GraphSnapshotResponse)
        assert (reply.topicId, reply.hops, reply.nodes) == ("adr-0007", 1, [{"id": "memory:adr-0007", "hops": 1}])
        [(name, received)] = [call for call in owner.calls if call[0] == "graph_snapshot"]
        assert received == GraphSnapshotRequest(topicId="adr-0007", hops=1)
        await front.close()
        await endpoint.close()

    asyncio.run(scenario())


def test_each_converted_operation_crosses_the_socket_as_its_contract_models(paths: WorkspacePaths) -> None:
    """sessions answers one of several models (its op says which) and forgetMemory one: both arrive at the
    owner as their request models and come back as their reply models, an omitted field still omitted."""

    async def scenario() -> None:
        owner, endpoint = await _owner(paths, "first")
        front = await OwnerClient.connect(paths, opener=_never)
        found = await front.sessions("search", SessionsRequest(session_id="ses_1", q="why"))
        assert isinstance(found, SessionSearchResponse) and found.results == [
            {"session_id": "ses_1", "chunk_text": "why"}
        ]
        assert found.model_dump(mode="json") == {"results": found.results, "count": 1}  # no abstained, no null
        forgot = await front.forget_memory(ForgetMemoryRequest(topicId="adr-7", dryRun=True))
        assert isinstance(forgot, ForgetMemoryResponse) and (forgot.dryRun, forgot.topicIds) == (True, ["adr-7"])
        assert [request for _, request in owner.calls] == [
            SessionsRequest(session_id="ses_1", q="why"),
            ForgetMemoryRequest(topicId="adr-7", dryRun=True),
        ]
        await front.close()
        await endpoint.close()

    asyncio.run(scenario())


def test_a_typed_operation_sent_as_plain_json_gets_the_contracts_error(paths: WorkspacePaths) -> None:
    """The command line sends a typed operation's params as they are (flowbaby/owner_line.py): the owner
    validates them as the bridge would, so a bad field is INVALID_PAYLOAD naming it, not a fault."""

    async def scenario() -> None:
        owner, endpoint = await _owner(paths, "first")
        front = await OwnerClient.connect(paths, opener=_never)
        assert (await front.call("forget_memory", request={"topicId": "adr-7"})).topicIds == ["adr-7"]
        with pytest.raises(FlowbabyError) as invalid:
            await front.call("forget_memory", request={"topicId": "adr-7", "version": "2"})
        assert invalid.value.code is ErrorCode.INVALID_PAYLOAD and invalid.value.details == {"fields": ["version"]}
        with pytest.raises(RetrievalError) as refused:
            await front.call("sessions", op="search", request={"limit": True})
        assert refused.value.code is RetrievalErrorCode.INVALID_REQUEST
        assert [name for name, _ in owner.calls] == ["forget_memory"]
        await front.close()
        await endpoint.close()

    asyncio.run(scenario())


def test_the_endpoint_is_private_and_recorded(paths: WorkspacePaths) -> None:
    async def scenario() -> None:
        _, endpoint = await _owner(paths, "first")
        record = json.loads(endpoint_file(paths).read_text())
        assert record["socket"] == str(socket_path(paths))
        assert stat.S_IMODE(Path(record["socket"]).stat().st_mode) == 0o600
        assert stat.S_IMODE(endpoint_file(paths).stat().st_mode) == 0o600
        await endpoint.close()
        assert not endpoint_file(paths).exists() and not Path(record["socket"]).exists()

    asyncio.run(scenario())


def test_operation_events_reach_every_front(paths: WorkspacePaths) -> None:
    async def scenario() -> None:
        owner, endpoint = await _owner(paths, "first")
        seen: list[tuple[str, str]] = []
        fronts = [await OwnerClient.connect(paths, opener=_never) for _ in range(2)]
        for index, front in enumerate(fronts):

            async def record(status: OperationStatus, index: int = index) -> None:
                seen.append((f"front{index}", status.operationId))

            front.add_operation_listener(record)
        await fronts[0].call("health")  # both connected and served
        await fronts[1].call("health")
        status = OperationStatus(
            operationId="op_1", status="completed", memoryIds=[], topicIds=[], createdAt="2025-03-01T10:00:00.000Z"
        )
        for listener in owner.listeners:
            await listener(status)
        for _ in range(50):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.02)
        assert sorted(seen) == [("front0", "op_1"), ("front1", "op_1")]
        for front in fronts:
            await front.close()
        await endpoint.close()

    asyncio.run(scenario())


def test_a_front_takes_over_when_the_owner_leaves(paths: WorkspacePaths) -> None:
    async def scenario() -> None:
        _, endpoint = await _owner(paths, "first")
        successor = FakeService("second")
        opened: list[str] = []

        async def opener() -> FakeService:
            opened.append("second")
            return successor

        front = await OwnerClient.connect(paths, opener=opener)
        assert (await front.call("health")).workspace == "first"
        await endpoint.close()
        reply = await front.call("ingest", request=FlowbabyIngestRequest(topic="after the owner left", context="c"))
        assert reply.operationId == "second" and front.owns_workspace and opened == ["second"]
        assert successor.calls == [("ingest", "after the owner left")]
        await front.close()
        assert successor.closed

    asyncio.run(scenario())


def test_a_front_that_took_over_keeps_watching_sessions(paths: WorkspacePaths) -> None:
    async def scenario() -> None:
        first, endpoint = await _owner(paths, "first")
        successor = FakeService("second")

        async def opener() -> FakeService:
            return successor

        front = await OwnerClient.connect(paths, opener=opener)
        assert (await front.watch_sessions()).watching
        assert ("watch_sessions", None) in first.calls
        await endpoint.close()
        await front.call("ingest", request=FlowbabyIngestRequest(topic="after the owner left", context="c"))
        assert successor.calls[0] == ("watch_sessions", None)  # started as the process took over
        await front.close()

    asyncio.run(scenario())


def test_a_front_follows_another_front_that_took_over(paths: WorkspacePaths) -> None:
    async def scenario() -> None:
        _, first = await _owner(paths, "first")
        attempts: list[str] = []

        async def busy() -> FakeService:
            attempts.append("busy")
            raise FlowbabyError(ErrorCode.WORKSPACE_BUSY, "owned by another process")

        front = await OwnerClient.connect(paths, opener=busy)
        assert (await front.call("health")).workspace == "first"
        await first.close()
        _, second = await _owner(paths, "second")  # the other front won the lock
        assert (await front.call("health")).workspace == "second"
        assert attempts and not front.owns_workspace
        await front.close()
        await second.close()

    asyncio.run(scenario())


async def _never() -> FakeService:
    raise AssertionError("this front should never need to own the workspace")


def test_a_front_that_connects_wakes_the_owners_graph_work(paths: WorkspacePaths) -> None:
    """A one-call command's service (build_graph=False) runs the graph work once a front works through it."""

    async def scenario() -> None:
        woken: list[int] = []
        endpoint = OwnerEndpoint(FakeService("command"), paths, on_front=lambda: woken.append(1))
        await endpoint.start()
        assert woken == []
        front = await OwnerClient.connect(paths, opener=_never)
        assert (await front.call("health")).workspace == "command" and woken == [1]
        await front.close()
        await endpoint.close()

    asyncio.run(scenario())
