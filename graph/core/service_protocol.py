"""MemoryService: what every front calls, whoever answers it (the owner, its client, a team server)."""

from __future__ import annotations

import types
from collections.abc import Awaitable, Callable
from functools import cache
from typing import Any, Protocol, cast, get_args, get_type_hints

from pydantic import BaseModel, TypeAdapter

from graph.core.contract import (
    AuditTailRequest,
    AuditTailResponse,
    BackgroundStatusRequest,
    BackgroundStatusResponse,
    BriefingRequest,
    BriefingResponse,
    CaptureRequest,
    CaptureResponse,
    ChunkSearchRequest,
    ChunkSearchResponse,
    ConfirmSupersessionRequest,
    ConfirmSupersessionResponse,
    ExportMemoriesRequest,
    ExportMemoriesResponse,
    FlowbabyContextRequest,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
    GetMemoryRequest,
    GetMemoryResponse,
    GraphSnapshotRequest,
    GraphSnapshotResponse,
    GraphStatsResponse,
    HealthResponse,
    ImpliedSupersessionsResponse,
    ImportMemoriesRequest,
    ImportMemoriesResponse,
    IndexStatusResponse,
    ListMemoriesRequest,
    ListMemoriesResponse,
    MemoryContextResponse,
    MemoryVersionsResponse,
    OperationStatus,
    RecallRequest,
    RecallResponse,
    RefusedRequest,
    RepairResponse,
    RestoreMemoryRequest,
    RestoreMemoryResponse,
    RetrievalReply,
    SessionOp,
    SessionsRequest,
    SessionsResponse,
    StoreMemoryResponse,
    Succeeded,
    WatchingSessions,
    Writer,
)
from graph.core.workspace import WorkspacePaths

OperationListener = Callable[[OperationStatus], Awaitable[None]]
"""Called with each background operation's status as it ends (a front turns it into a notification)."""


class MemoryService(Protocol):
    """What every front calls: this process's own FlowbabyService when it owns the workspace,
    or an OwnerClient that forwards each call to the process that does."""

    paths: WorkspacePaths

    def add_operation_listener(self, listener: OperationListener) -> None: ...
    async def health(self) -> HealthResponse: ...
    async def ingest(
        self,
        request: FlowbabyIngestRequest,
        *,
        bulk: bool = ...,
        origin: str | None = ...,
        writer: Writer | None = ...,
        project: str | None = ...,
    ) -> FlowbabyIngestResponse: ...
    async def store_memory(
        self,
        request: FlowbabyIngestRequest,
        *,
        origin: str | None = ...,
        writer: Writer | None = ...,
        project: str | None = ...,
    ) -> StoreMemoryResponse: ...
    async def audit_refused(self, refusal: RefusedRequest) -> Succeeded: ...
    async def background_status(
        self, request: BackgroundStatusRequest, *, audited: bool = ..., agent_name: str | None = ...
    ) -> BackgroundStatusResponse: ...
    async def retrieve(
        self,
        request: FlowbabyContextRequest,
        *,
        markdown: bool = ...,
        agent_name: str | None = ...,
        origin: str | None = ...,
    ) -> RetrievalReply: ...
    async def index_status(self, *, audited: bool = ..., agent_name: str | None = ...) -> IndexStatusResponse: ...
    async def repair(self) -> RepairResponse: ...
    async def memory_context(
        self, topic_id: str, query: str | None = ..., hops: int = ..., version: int | None = ...
    ) -> MemoryContextResponse: ...
    async def memory_versions(self, topic_id: str) -> MemoryVersionsResponse: ...
    async def list_memories(self, request: ListMemoriesRequest) -> ListMemoriesResponse: ...
    async def get_memory(self, request: GetMemoryRequest) -> GetMemoryResponse: ...
    async def forget_memory(
        self, request: ForgetMemoryRequest, *, agent_name: str | None = ...
    ) -> ForgetMemoryResponse: ...
    async def export_memories(self, request: ExportMemoriesRequest) -> ExportMemoriesResponse: ...
    async def import_memories(
        self, request: ImportMemoriesRequest, *, retire_person: bool = ...
    ) -> ImportMemoriesResponse: ...
    async def search_chunks(self, request: ChunkSearchRequest) -> ChunkSearchResponse: ...
    async def graph_snapshot(self, request: GraphSnapshotRequest) -> GraphSnapshotResponse: ...
    async def graph_summary(self, top: int = ...) -> GraphStatsResponse: ...
    async def audit_tail(self, request: AuditTailRequest) -> AuditTailResponse: ...
    async def sessions(self, op: SessionOp, request: SessionsRequest) -> SessionsResponse: ...
    async def watch_sessions(self) -> WatchingSessions: ...
    async def implied_supersessions(self) -> ImpliedSupersessionsResponse: ...
    async def confirm_supersession(
        self, request: ConfirmSupersessionRequest, *, writer: Writer | None = ...
    ) -> ConfirmSupersessionResponse: ...
    async def restore_memory(self, request: RestoreMemoryRequest) -> RestoreMemoryResponse: ...
    async def briefing(self, request: BriefingRequest) -> BriefingResponse: ...
    async def recall(self, request: RecallRequest) -> RecallResponse: ...
    async def capture(self, request: CaptureRequest) -> CaptureResponse: ...
    async def close(self, grace_sec: float = ..., *, hand_on: bool = ...) -> None: ...


def _model(hint: object) -> type[BaseModel] | None:
    if isinstance(hint, type) and not isinstance(hint, types.GenericAlias) and issubclass(hint, BaseModel):
        return hint
    return None


def _reply(hint: object) -> TypeAdapter[Any] | None:
    """A contract model, or a union of them (sessions: which one, its op says), as what rebuilds it."""
    members = get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return TypeAdapter(cast(Any, hint)) if members and all(_model(member) for member in members) else None


@cache
def operation_models(name: str) -> tuple[dict[str, type[BaseModel]], TypeAdapter[Any] | None]:
    """A typed operation's contract models, read from the Protocol: its parameters that take one, and
    what rebuilds its reply (None: a JSON object). The owner's socket carries them as JSON (graph.owner)."""
    hints = get_type_hints(getattr(MemoryService, name))
    reply = _reply(hints.pop("return", None))
    return {parameter: model for parameter, hint in hints.items() if (model := _model(hint))}, reply
