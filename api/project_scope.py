"""What a server started with `--allow-remote` serves: the workspace's own store, never the user scope.

The user store holds the person's own memories across every project (docs/contract/21-user-scope.md).
A server that allows remote callers answers whoever holds the workspace's token: a teammate, a CI
job, a tunnel, a reverse proxy on this machine. Whether a request came from loopback says nothing
once a proxy or tunnel relays it, so the rule is the server's, not the request's: such a server
refuses `scope: "user"` (INVALID_PAYLOAD, `fields: ["scope"]`; retrieval: INVALID_REQUEST), reads
only the project for `all` and for the default scopes, and never falls back to the user store for
a topicId the project does not hold. This holds whether this process owns the workspace or works
through its owner, because the requests are narrowed here, before they reach either.
"""

from __future__ import annotations

from typing import Any

from graph.api import MemoryService
from graph.core.contract import (
    PROJECT,
    USER,
    BriefingRequest,
    BriefingResponse,
    ErrorCode,
    FlowbabyContextRequest,
    FlowbabyError,
    GetMemoryRequest,
    GetMemoryResponse,
    ListMemoriesRequest,
    ListMemoriesResponse,
    MemoryContextResponse,
    MemoryVersionsResponse,
    RetrievalError,
    RetrievalErrorCode,
    RetrievalReply,
    Scoped,
)

REFUSAL = (
    'Field "scope": this server was started with --allow-remote, so it serves this workspace\'s memories '
    "only; the user scope (your own memories, every project) is served on this machine's loopback alone"
)
ROUTED = ("ingest", "store_memory", "forget_memory", "export_memories", "import_memories", "restore_memory")
"""The operations whose request may name a store: a user one is refused, the rest pass unchanged."""


def _refuse(request: Scoped | ListMemoriesRequest | FlowbabyContextRequest) -> None:
    if request.scope == USER:
        raise FlowbabyError(ErrorCode.INVALID_PAYLOAD, REFUSAL, fields=["scope"])


class ProjectOnly:
    """`service` with the user scope out of reach (module docstring); every other call passes through."""

    def __init__(self, service: MemoryService) -> None:
        self._service = service

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._service, name)
        if name not in ROUTED:
            return found

        async def routed(request: Scoped, *args: Any, **options: Any) -> Any:
            _refuse(request)
            return await found(request, *args, **options)

        return routed

    async def get_memory(self, request: GetMemoryRequest) -> GetMemoryResponse:
        _refuse(request)
        return await self._service.get_memory(request.model_copy(update={"scope": PROJECT}))

    async def list_memories(self, request: ListMemoriesRequest) -> ListMemoriesResponse:
        _refuse(request)
        return await self._service.list_memories(request.model_copy(update={"scope": PROJECT}))

    async def retrieve(self, request: FlowbabyContextRequest, **options: Any) -> RetrievalReply:
        if request.scope == USER:
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, REFUSAL, fields=["scope"])
        return await self._service.retrieve(request.model_copy(update={"scope": PROJECT}), **options)

    async def briefing(self, request: BriefingRequest) -> BriefingResponse:
        return await self._service.briefing(request.model_copy(update={"scope": PROJECT}))

    async def _held(self, topic_id: str) -> None:
        """NOT_FOUND unless the project holds `topic_id` (the engine would look in the user store next)."""
        await self._service.get_memory(GetMemoryRequest(topicId=topic_id, scope=PROJECT))

    async def memory_versions(self, topic_id: str) -> MemoryVersionsResponse:
        await self._held(topic_id)
        return await self._service.memory_versions(topic_id)

    async def memory_context(
        self, topic_id: str, query: str | None = None, hops: int = 1, version: int | None = None
    ) -> MemoryContextResponse:
        await self._held(topic_id)
        return await self._service.memory_context(topic_id, query, hops, version)
