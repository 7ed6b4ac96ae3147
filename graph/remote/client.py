"""A local front's handle on a workspace served by a team server (`flowbaby serve` elsewhere).

RemoteService implements graph.api.MemoryService over the server's HTTP API (httpx), so the
bridge and `flowbaby mcp` behave as they do on a local folder: every call becomes one request
with `Authorization: Bearer <token>` and `X-Flowbaby-Namespace: <namespace>`, and an error body
is raised again as the same contract error (same code, message and details). Requests are checked
here with the same contract models first, so a malformed call fails as it would locally without a
round trip. What the server cannot do for a remote caller is refused with a message that says so:
session memory (it reads the agent transcripts on this machine; the server would read its own).
Operation-end notifications are polled: each operation this client staged is asked about every
POLL_SEC until it finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from graph.core.contract import (
    BackgroundOperations,
    BackgroundStatusRequest,
    BackgroundStatusResponse,
    ChunkSearchRequest,
    ChunkSearchResponse,
    ContractFailure,
    ErrorCode,
    FlowbabyContextRequest,
    FlowbabyContextResponse,
    FlowbabyError,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
    GraphStatsResponse,
    HealthResponse,
    ImpliedSupersessionsResponse,
    IndexStatusResponse,
    MemoryContextResponse,
    MemoryVersionsResponse,
    OperationReply,
    OperationStatus,
    RefusedRequest,
    RepairResponse,
    RetrievalError,
    RetrievalErrorCode,
    RetrievalReply,
    RetrieveMemoryResponse,
    SessionOp,
    SessionsRequest,
    SessionsResponse,
    Succeeded,
    UnknownOperation,
    WatchingSessions,
)
from graph.core.methods import BODY_ROUTES, QUERY_ROUTES, Method
from graph.core.service_protocol import MemoryService, OperationListener
from graph.core.workspace import WorkspacePaths
from graph.remote.settings import ServerSettings

log = logging.getLogger("flowbaby.remote")

NAMESPACE_HEADER = "X-Flowbaby-Namespace"
CONNECT_TIMEOUT_SEC = 5.0
READ_TIMEOUT_SEC = 120.0
"""A graph snapshot of a large namespace takes a while; the bridge's own deadline still applies."""
POLL_SEC = 2.0
"""How often the status of an operation this client staged is asked for, until it ends."""
FINISHED = frozenset({"completed", "failed", "terminated"})
_RETRIEVAL_CODES = {code.value for code in RetrievalErrorCode}
_INGEST_CODES = {code.value for code in ErrorCode}


def failure_from_body(body: Any, status: int, retrieval: bool) -> ContractFailure:
    """The contract error a server's error body stands for (api.app renders to_response())."""
    if not isinstance(body, dict) or not isinstance(body.get("errorCode"), str):
        message = f"The team server answered HTTP {status} without a flowbaby error body"
        code = RetrievalErrorCode.FLOWBABY_ERROR if retrieval else ErrorCode.FLOWBABY_ERROR
        return RetrievalError(code, message) if retrieval else FlowbabyError(ErrorCode.FLOWBABY_ERROR, message)
    code = body["errorCode"]
    details = {k: v for k, v in body.items() if k not in ("success", "error", "errorCode", "message")}
    if "message" in body and body.get("error") == code and code in _RETRIEVAL_CODES:
        return RetrievalError(RetrievalErrorCode(code), str(body["message"]), **details)
    message = str(body.get("error") or body.get("message") or "")
    if code in _INGEST_CODES:
        return FlowbabyError(ErrorCode(code), message, **details)
    # A code this client does not know yet (a newer server): kept, under the generic code.
    return FlowbabyError(ErrorCode.FLOWBABY_ERROR, f"{message} ({code})", serverErrorCode=code, **details)


Reply = TypeVar("Reply", bound=BaseModel)


def answered(model: type[Reply], reply: Any) -> Reply:
    """A typed operation's reply as its model; one that is not (a server of another version) is FLOWBABY_ERROR."""
    try:
        return model.model_validate(reply)
    except ValidationError as exc:
        message = (
            f"The team server answered with a {model.__name__} this client does not read: {exc.errors()[0]['msg']}"
        )
        raise FlowbabyError(ErrorCode.FLOWBABY_ERROR, message) from None


if TYPE_CHECKING:  # the body routes' operations are made from the method table below: checked as the Protocol's
    _Operations = MemoryService
else:
    _Operations = object


def _no_user_scope(params: Any) -> None:
    """User-scope memories never go to a team server (docs/contract/21-user-scope.md): refused here,
    before a byte of them is sent."""
    scope = params.get("scope") if isinstance(params, dict) else getattr(params, "scope", None)
    if scope == "user":
        raise FlowbabyError(
            ErrorCode.INVALID_PAYLOAD,
            'Field "scope": this workspace is served by a team server, which never receives user-scope memories',
            fields=["scope"],
        )


class RemoteService(_Operations):
    """The service API of a workspace whose memories live on a team server."""

    def __init__(
        self, paths: WorkspacePaths, server: ServerSettings, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.paths = paths
        self.server = server
        self._http = httpx.AsyncClient(
            base_url=server.url,
            headers={"Authorization": f"Bearer {server.token}", NAMESPACE_HEADER: server.namespace},
            timeout=httpx.Timeout(READ_TIMEOUT_SEC, connect=CONNECT_TIMEOUT_SEC),
            transport=transport,
            trust_env=False,  # no proxy or netrc from the environment sees the token
        )
        self._listeners: list[OperationListener] = []
        self._watched: set[str] = set()
        self._poller: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, paths: WorkspacePaths, server: ServerSettings) -> RemoteService:
        """Connected and authorised, or the error that says why not (the front then exits 3)."""
        service = cls(paths, server)
        try:
            await service.health()
        except BaseException:
            await service._http.aclose()
            raise
        return service

    # -- transport -----------------------------------------------------------------
    async def _request(
        self,
        method: str,
        path: str,
        *,
        retrieval: bool = False,
        body: Any = None,
        query: dict[str, Any] | None = None,
        accept_json: bool = False,
    ) -> Any:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        headers = {"Accept": "application/json"} if accept_json else None
        try:
            reply = await self._http.request(
                method, path, json=body if method == "POST" else None, params=params, headers=headers
            )
        except httpx.TimeoutException:
            raise self._failure(
                retrieval, "BRIDGE_TIMEOUT", f"The team server {self.server.url} did not answer in time"
            ) from None
        except httpx.HTTPError as exc:
            raise self._failure(
                retrieval,
                "FLOWBABY_ERROR",
                f"Cannot reach the team server {self.server.url}: {exc or type(exc).__name__}",
            ) from None
        try:
            data = reply.json()
        except ValueError:
            data = None
        if reply.status_code >= 400:
            raise failure_from_body(data, reply.status_code, retrieval)
        if data is None:
            raise self._failure(retrieval, "FLOWBABY_ERROR", f"The team server answered {path} without JSON")
        return data

    def _failure(self, retrieval: bool, code: str, message: str) -> ContractFailure:
        if retrieval:
            return RetrievalError(RetrievalErrorCode(code), message, server=self.server.url)
        return FlowbabyError(ErrorCode(code), message, server=self.server.url)

    # -- operation-end notifications, polled -------------------------------------------------
    def add_operation_listener(self, listener: OperationListener) -> None:
        self._listeners.append(listener)

    def _watch(self, reply: dict[str, Any]) -> dict[str, Any]:
        operation_id = reply.get("operationId")
        if self._listeners and isinstance(operation_id, str) and operation_id:
            self._watched.add(operation_id)
            if self._poller is None or self._poller.done():
                self._poller = asyncio.create_task(self._poll(), name="flowbaby-remote-poll")
        return reply

    async def _poll(self) -> None:
        while self._watched:
            await asyncio.sleep(POLL_SEC)
            for operation_id in sorted(self._watched):
                try:
                    reply = await self.background_status(BackgroundStatusRequest(operationId=operation_id))
                except ContractFailure as error:  # the server is away for now: ask again later
                    log.warning("status of %s: %s", operation_id, error.message)
                    continue
                if isinstance(reply, UnknownOperation):
                    self._watched.discard(operation_id)
                elif isinstance(reply, OperationReply) and reply.status in FINISHED:
                    self._watched.discard(operation_id)
                    status = OperationStatus.model_validate(reply.model_dump(exclude={"success"}))
                    for listener in self._listeners:
                        await listener(status)

    # -- the service API, over HTTP (typed as the fronts' MemoryService) -------------------------
    async def health(self) -> HealthResponse:
        reply: dict[str, Any] = await self._request("GET", "/api/health")
        if "memories" not in reply:  # the public answer: the server did not take the token
            raise FlowbabyError(
                ErrorCode.UNAUTHORIZED,
                f"The team server {self.server.url} did not accept the token from {self.server.source}",
                server=self.server.url,
            )
        return answered(HealthResponse, reply)

    async def background_status(
        self, request: BackgroundStatusRequest, *, audited: bool = False, agent_name: str | None = None
    ) -> BackgroundStatusResponse:
        if not request.operationId:
            return answered(BackgroundOperations, await self._request("GET", "/api/agent/background"))
        try:
            path = f"/api/agent/background/{quote(request.operationId, safe='')}"
            return answered(OperationReply, await self._request("GET", path))
        except FlowbabyError as error:  # the route answers 404 for an id the ledger never had
            if error.code is ErrorCode.NOT_FOUND:
                return UnknownOperation(operationId=request.operationId)
            raise

    async def retrieve(
        self,
        request: FlowbabyContextRequest,
        *,
        markdown: bool = False,
        agent_name: str | None = None,
        origin: str | None = None,
    ) -> RetrievalReply:
        _no_user_scope(request)
        query = {"format": "markdown"} if markdown else None
        body = request.model_dump(mode="json", exclude_unset=True)
        reply = await self._request(
            "POST", "/api/agent/retrieve", retrieval=True, body=body, query=query, accept_json=True
        )
        if markdown:
            return answered(RetrieveMemoryResponse, reply)
        return answered(FlowbabyContextResponse, reply)

    async def index_status(self, *, audited: bool = False, agent_name: str | None = None) -> IndexStatusResponse:
        return answered(IndexStatusResponse, await self._request("GET", "/api/agent/index/status"))

    async def repair(self) -> RepairResponse:
        return answered(RepairResponse, self._watch(await self._request("POST", "/api/agent/index/repair")))

    async def memory_context(
        self, topic_id: str, query: str | None = None, hops: int = 1, version: int | None = None
    ) -> MemoryContextResponse:
        path = f"/api/agent/memories/{quote(topic_id, safe='')}/context"
        query_string = {"q": query, "hops": hops, "version": version}
        return answered(MemoryContextResponse, await self._request("GET", path, query=query_string))

    async def memory_versions(self, topic_id: str) -> MemoryVersionsResponse:
        reply = await self._request("GET", f"/api/agent/memories/{quote(topic_id, safe='')}")
        return answered(MemoryVersionsResponse, {key: reply.get(key) for key in ("success", "topicId", "versions")})

    async def forget_memory(
        self, request: ForgetMemoryRequest, *, agent_name: str | None = None
    ) -> ForgetMemoryResponse:
        _no_user_scope(request)
        if request.topicId is not None and request.filter is None:
            query = {"version": request.version, "dryRun": "true" if request.dryRun else None}
            path = f"/api/agent/memories/{quote(request.topicId, safe='')}"
            return answered(ForgetMemoryResponse, await self._request("DELETE", path, query=query))
        reply: ForgetMemoryResponse = await self._typed_body(FORGET, request)
        return reply

    async def search_chunks(self, request: ChunkSearchRequest) -> ChunkSearchResponse:
        query = {"q": request.q, "limit": request.limit}
        return answered(
            ChunkSearchResponse, await self._request("GET", "/api/agent/search", retrieval=True, query=query)
        )

    async def graph_summary(self, top: int = 10) -> GraphStatsResponse:
        return answered(GraphStatsResponse, await self._request("GET", "/api/graph/stats", query={"top": top}))

    async def _typed_body(self, method: Method, request: BaseModel) -> Any:
        body = request.model_dump(mode="json", exclude_unset=True)
        reply = self._watch(dict(await self._request(*_route(method), body=body)))
        assert method.response is not None
        return answered(method.response, reply)

    async def sessions(self, op: SessionOp, request: SessionsRequest) -> SessionsResponse:
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            "Session memory reads this machine's agent transcripts and is not available while the workspace "
            f"is served by the team server {self.server.url}",
            remote=True,
        )

    async def watch_sessions(self) -> WatchingSessions:
        return WatchingSessions(watching=False)

    async def audit_refused(self, refusal: RefusedRequest) -> Succeeded:
        """The team server audits the requests it receives; one refused here never left this machine."""
        return Succeeded()

    async def implied_supersessions(self) -> ImpliedSupersessionsResponse:
        return answered(ImpliedSupersessionsResponse, await self._request("GET", "/api/agent/supersessions"))

    async def _hook(self, request: BaseModel) -> Any:
        """briefing, recall and capture (set below the class): refused, they work on this machine's own workspace."""
        raise FlowbabyError(
            ErrorCode.FLOWBABY_ERROR,
            "The client hooks (briefing, recall, capture) work on this machine's own workspace and are not "
            f"available while the workspace is served by the team server {self.server.url}",
            remote=True,
        )

    async def close(self, grace_sec: float = 30.0, *, hand_on: bool = False) -> None:
        """`hand_on` has nothing to do here: the team server runs the work."""
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._poller
        await self._http.aclose()


def _body_call(method: Method) -> Callable[..., Awaitable[Any]]:
    """An operation whose server route takes its request as the JSON body (BODY_ROUTES), posted there
    (its request model's fields as set, and its reply model back). The Protocol's other
    arguments are for a local owner (`bulk`, the caller's folder): a team server keeps its own limits and
    records no checkout. An operation it stages is watched for its end."""
    signature = inspect.signature(getattr(MemoryService, method.service))

    async def call(self: RemoteService, *args: Any, **kwargs: Any) -> Any:
        request = signature.bind(self, *args, **kwargs).arguments["request"]
        _no_user_scope(request)
        return await self._typed_body(method, request)

    call.__name__ = call.__qualname__ = method.service
    call.__signature__ = signature  # type: ignore[attr-defined]
    return call


def _route(method: Method) -> tuple[str, str]:
    assert method.http is not None
    verb, path = method.http.split(" ")
    return verb, path


def _query_value(value: Any) -> Any:
    """A field as its query parameter: a list comma-separated (listMemories' status), None left out."""
    return ",".join(value) if isinstance(value, list) else value


def _query_call(method: Method) -> Callable[..., Awaitable[Any]]:
    """A typed operation whose server route takes its fields as the query string (QUERY_ROUTES), asked
    there with the request's fields the row names and its path's; its reply model back."""
    signature = inspect.signature(getattr(MemoryService, method.service))

    async def call(self: RemoteService, *args: Any, **kwargs: Any) -> Any:
        request = signature.bind(self, *args, **kwargs).arguments["request"]
        _no_user_scope(request)
        fields = request.model_dump(mode="json")
        query = {name: _query_value(fields[name]) for name in method.query}
        verb, path = _route(method)
        path = re.sub(r"{(\w+)}", lambda name: quote(str(fields[name[1]]), safe=""), path)
        reply = await self._request(verb, path, retrieval=method.retrieval_errors, query=query)
        assert method.response is not None
        return answered(method.response, reply)

    call.__name__ = call.__qualname__ = method.service
    call.__signature__ = signature  # type: ignore[attr-defined]
    return call


FORGET = next(method for method in BODY_ROUTES if method.service == "forget_memory")

for _method in BODY_ROUTES:
    if _method.service not in vars(RemoteService):  # forget_memory: a topic goes to its own DELETE route
        setattr(RemoteService, _method.service, _body_call(_method))
for _method in QUERY_ROUTES:
    if _method.service not in vars(RemoteService):  # sessions: refused, they read this machine's transcripts
        setattr(RemoteService, _method.service, _query_call(_method))
for _name in ("briefing", "recall", "capture"):
    setattr(RemoteService, _name, RemoteService._hook)
