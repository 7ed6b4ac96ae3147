"""The MCP front: the Flowbaby tools over the Model Context Protocol (official `mcp` SDK).

Tool names and parameters follow the VS Code Flowbaby tools, so `.agent.md` files and agent
habits carry over. Each tool calls the same service method as the bridge; the
service validates, throttles and audits. This module only frames: arguments in, a tool
result out, and a contract failure as a tool error (`isError`) that never drops the client.
The caller's name for the audit log is the `clientInfo.name` the client sent at `initialize`.
Over HTTP, `service` is the per-request proxy of api/tenancy.py: each call runs in its request's
namespace, and the audit names its token's user.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from api.mcp_resources import Idioms
from graph import __version__
from graph.api import MemoryService, agent_forget_enabled, answer_index, memory_whole
from graph.core.contract import (
    AGENT,
    MAX_GET_TOPICS,
    ContractFailure,
    ErrorCode,
    FlowbabyError,
    ForgetMemoryRequest,
    GetMemoriesRequest,
    GetMemoryRequest,
    GetMemoryResponse,
    SessionsRequest,
    validate_request,
    validate_retrieval,
)
from graph.core.methods import BACKGROUND as BACKGROUND_ROW
from graph.core.methods import RETRIEVE_MEMORY, request_of
from graph.core.methods import STORE as STORE_ROW

AUDITED_BACKGROUND = replace(BACKGROUND_ROW, audit="backgroundStatus")
"""The MCP tool's backgroundStatus: its calls are audited, a refused one too (the bridge's are not)."""

log = logging.getLogger("flowbaby.mcp")

STORE = "flowbaby_storeMemory"
RETRIEVE = "flowbaby_retrieveMemory"
BACKGROUND = "flowbaby_backgroundStatus"
INDEX = "flowbaby_indexStatus"
SESSIONS = "flowbaby_searchSessions"
GET_MEMORY = "flowbaby_getMemory"
FORGET = "flowbaby_forgetMemory"

INSTRUCTIONS = (
    "Flowbaby is this workspace's long-term memory. Retrieve before reasoning: call "
    f"{RETRIEVE} at the start of a task or whenever the user refers to earlier work. Store after "
    f"meaningful progress: call {STORE} when a task finishes, a decision is made or a debugging "
    "session concludes, and before a hand-off. Do not store trivial turns."
)

STORE_DESCRIPTION = (
    "Store a summary of meaningful progress in Flowbaby's workspace memory. Call it once a task "
    "finishes, a decision is made or a debugging session concludes, and at the end of a session: a "
    "state checkpoint, like the summary you would give the user. Do not store trivial turns (single "
    "clarifications, small talk, one-line answers): fold them into the next real summary. Write a "
    "context of 300-1,500 characters and 0-5 decision bullets, with their rationale, open questions "
    "and next steps. Reuse metadata.topicId to replace an earlier summary of the same topic. The "
    "memory is staged at once and becomes searchable after background processing (seconds to a "
    f"minute or two); poll {BACKGROUND} with the returned operationId if you must wait. What it can "
    "change: a new version of a topic, or a summary that replaces one on the same subject, supersedes "
    "(never deletes) an earlier memory an agent, a capture or an import wrote; a memory the person wrote "
    "is never changed (PERSON_WRITTEN), and scope user stores a proposal the person accepts or dismisses."
)

RETRIEVE_DESCRIPTION = (
    "Retrieve memories relevant to a natural-language query from Flowbaby's workspace memory. "
    "Retrieve before reasoning: call it at the start of each task, and whenever the user refers to "
    "prior work, decisions or plans, so you build on what was decided instead of contradicting it. "
    "Returns a short index, best first: one line per memory with its topicId, title, status and date and "
    f"the decisions that answer; call {GET_MEMORY} with topicIds to read one whole. On 429_AGENT_THROTTLED "
    "wait retryAfterSec and retry with exponential backoff."
)

BACKGROUND_DESCRIPTION = (
    "Status of Flowbaby's background graph building: one operation by operationId (as returned "
    f"by {STORE}), or every operation with counts. Status is pending, running, completed, failed, "
    "terminated or unknown; a stored memory is fully indexed once its operation is completed."
)

INDEX_DESCRIPTION = (
    "Health of Flowbaby's search index: whether search works now (can_search), what is still being "
    "indexed (needs_update) and whether a repair is needed (needs_repair), with counts and coverage."
)

SESSIONS_DESCRIPTION = (
    "Search this workspace's own agent sessions (OpenCode and Claude Code histories: what was said, "
    "tool calls and their output) for a natural-language query; lower distance is better. Give "
    "sessionId to search one session, else every indexed session of the workspace is searched. Use "
    "it for details no stored memory kept: an old error message, a command that worked."
)

GET_MEMORY_DESCRIPTION = (
    f"Read stored memories whole by topicId (as listed by {RETRIEVE}): the newest version with its context, "
    "decisions, rationale, open questions, next steps and references, then its earlier versions and what it "
    "supersedes or is superseded by, one line each. Give one or more topicIds; unknown ones are named at the end."
)

FORGET_DESCRIPTION = (
    "Permanently forget a stored memory from Flowbaby: one version (topicId and version) or the topic with "
    "every version (topicId). It is removed from every store and cannot be undone. Only call it when the user "
    "asked for it in this conversation, name the memory to the user first, and set dryRun to see what would go."
)

RETRY_ADVICE = {
    "RATE_LIMIT_EXCEEDED": (
        "429_AGENT_THROTTLED",
        "Retrieval is throttled: wait {retry}s, then retry; on repeated 429s double the wait up to about 15s. "
        "Tell the user why you paused.",
    ),
    "QUEUE_FULL": (
        "429_AGENT_THROTTLED",
        "Too many retrievals at once: wait {retry}s and retry with exponential backoff (up to about 15s). "
        "Tell the user the queue is saturated.",
    ),
    "429_FLOWBABY_BACKLOG": (
        "429_FLOWBABY_BACKLOG",
        "The background queue is full, nothing was stored: retry in {retry}s, or skip a low-priority "
        "summary and fold it into the next one.",
    ),
    "DATABASE_UNAVAILABLE": (
        "503_DATABASE_UNAVAILABLE",
        "The team database is not answering and nothing was stored or read: wait {retry}s and retry the same "
        "call; tell the user the memory server's database is down if it persists.",
    ),
    "DATABASE_BUSY": (
        "503_DATABASE_BUSY",
        "The team database is saturated and nothing was stored or read: wait {retry}s and retry the same call.",
    ),
}
"""Contract codes that mean 'try again later', the 429 family the agent docs name, and what to do."""

Handler = Callable[[dict[str, Any], "str | None"], Awaitable[CallToolResult]]


class StoreMetadata(BaseModel):
    """Optional metadata of a stored summary."""

    model_config = ConfigDict(extra="forbid")

    topicId: Annotated[
        str | None,
        Field(
            max_length=256,
            description="Stable id of the topic; storing again with the same topicId supersedes the earlier "
            "summary. Generated when absent.",
        ),
    ] = None
    planId: Annotated[str | None, Field(max_length=256, description="Plan or project id")] = None
    status: Annotated[
        Literal["Active", "DecisionRecord"] | None,
        Field(description="Active (default) or DecisionRecord; to retire a memory, store what replaces it"),
    ] = None


def client_name(ctx: Context[Any, Any]) -> str | None:
    """The `clientInfo.name` the client gave at `initialize` (or in its request envelope)."""
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def success(reply: dict[str, Any] | BaseModel, text: str | None = None) -> CallToolResult:
    """A reply as the tool's result: its JSON as text, and as the structured content."""
    body = reply.model_dump(mode="json") if isinstance(reply, BaseModel) else reply
    return CallToolResult(content=[TextContent(type="text", text=text or _text(body))], structured_content=body)


def markdown_only(text: str) -> CallToolResult:
    """What the model reads, and nothing else: no structured content (the tools declare no outputSchema,
    so none is required), because Claude Code (2.1.332) hands the model only the structured content when
    a result has any, and a second copy of the entries as JSON cost more than the answer (issue 48)."""
    return CallToolResult(content=[TextContent(type="text", text=text)])


def failure(body: dict[str, Any]) -> CallToolResult:
    """A contract failure as a tool error: code and message first, then what to do about it."""
    code = str(body.get("errorCode", "FLOWBABY_ERROR"))
    message = str(body.get("message") or body.get("error") or "")
    text = f"{code}: {message}"
    if code in RETRY_ADVICE:
        family, advice = RETRY_ADVICE[code]
        body = {**body, "retryable": family, "retryAdvice": advice.format(retry=body.get("retryAfterSec", 30))}
        text += f"\n{family}. {body['retryAdvice']}"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=body, is_error=True)


async def framed(tool: str, call: Callable[[], Awaitable[CallToolResult]]) -> CallToolResult:
    try:
        return await call()
    except ContractFailure as error:
        return failure(error.to_response())
    except Exception as exc:  # one failing call never takes the session down
        log.exception("%s failed", tool)
        return failure(
            {"success": False, "error": f"{tool} failed: {type(exc).__name__}: {exc}", "errorCode": "FLOWBABY_ERROR"}
        )


class FlowbabyMCP(MCPServer[Any]):
    """An MCPServer whose argument errors are the contract's: arguments the SDK's schema check
    rejects go to the service as they are, which answers INVALID_PAYLOAD or INVALID_REQUEST
    naming the field (and audits the call), exactly as over the bridge. Its `idioms` (api/mcp_resources.py)
    add the resources, the briefing prompt and log levels; each tool call ends with a log line to the client."""

    def __init__(self, handlers: dict[str, Handler], service: MemoryService) -> None:
        bus = InMemorySubscriptionBus()
        super().__init__(
            "flowbaby", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", subscriptions=bus
        )
        self.handlers = handlers
        self.idioms = Idioms(service, bus)
        self.idioms.install(self)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as error:
            if not isinstance(error.__cause__, ValidationError) or name not in self.handlers or context is None:
                raise
            result = await self.handlers[name](arguments, client_name(context))
        if context is not None and isinstance(result, CallToolResult):
            said = result.content[0].text if result.content and isinstance(result.content[0], TextContent) else ""
            level: Literal["warning", "debug"] = "warning" if result.is_error else "debug"
            message = said.splitlines()[0] if result.is_error and said else f"{name}: {len(said)} characters"
            await self.idioms.log(context.request_context, level, message)
        return result


def build_mcp_server(service: MemoryService, *, agent_forget: bool | None = None) -> FlowbabyMCP:
    """The Flowbaby tools over `service`; serve it over stdio or streamable HTTP. `agent_forget`:
    offer flowbaby_forgetMemory (default: the workspace's FLOWBABY_AGENT_FORGET setting)."""
    if agent_forget is None:
        agent_forget = agent_forget_enabled(getattr(service, "paths", None))

    async def store_raw(params: dict[str, Any], agent: str | None) -> CallToolResult:
        async def call() -> CallToolResult:
            request = await request_of(service, STORE_ROW, {**params, "agentName": agent})
            return success(await service.store_memory(request, writer=AGENT))

        return await framed(STORE, call)

    async def retrieve_raw(params: dict[str, Any], agent: str | None) -> CallToolResult:
        async def call() -> CallToolResult:
            request = await request_of(service, RETRIEVE_MEMORY, params, agent)
            reply = await service.retrieve(request, markdown=True, agent_name=agent)  # retrieveMemory (3.6)
            return markdown_only(answer_index(reply.model_dump(mode="json")))

        return await framed(RETRIEVE, call)

    async def background_raw(params: dict[str, Any], agent: str | None) -> CallToolResult:
        async def call() -> CallToolResult:
            request = await request_of(service, AUDITED_BACKGROUND, params, agent)
            return success(await service.background_status(request, audited=True, agent_name=agent))

        return await framed(BACKGROUND, call)

    async def get_raw(params: dict[str, Any], agent: str | None) -> CallToolResult:
        async def call() -> CallToolResult:
            request: GetMemoriesRequest = validate_request(GetMemoriesRequest, params)
            found: list[GetMemoryResponse] = []
            missing: list[str] = []
            for topic_id in dict.fromkeys(request.topicIds):
                try:
                    found.append(await service.get_memory(GetMemoryRequest(topicId=topic_id)))
                except ContractFailure as error:
                    if error.code.value != "NOT_FOUND":
                        raise
                    missing.append(topic_id)
            text = "\n\n".join(memory_whole(got.model_dump(mode="json")) for got in found)
            if missing:
                text += ("\n\n" if text else "") + "No memory with topicId: " + ", ".join(missing)
            return markdown_only(text)

        return await framed(GET_MEMORY, call)

    async def forget_raw(params: dict[str, Any], agent: str | None) -> CallToolResult:
        async def call() -> CallToolResult:
            if "filter" in params:  # agents forget named memories only, never by filter
                raise FlowbabyError(
                    ErrorCode.INVALID_PAYLOAD, 'Field "filter" is not offered to agents', fields=["filter"]
                )
            request = validate_request(ForgetMemoryRequest, params)
            return success(await service.forget_memory(request, agent_name=agent))

        return await framed(FORGET, call)

    handlers: dict[str, Handler] = {
        STORE: store_raw,
        RETRIEVE: retrieve_raw,
        BACKGROUND: background_raw,
        GET_MEMORY: get_raw,
    }
    if agent_forget:
        handlers[FORGET] = forget_raw
    server = FlowbabyMCP(handlers, service)
    # Additive (MCP's destructiveHint false): a store adds a version; a supersession it causes keeps the older
    # version, is listed and undone by restoreMemory, and never touches a memory the person wrote (STORE_DESCRIPTION).
    # Clients that run a destructive tool only after a prompt (Codex exec: "requires approval") could not store.
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(name=STORE, title="Store Memory in Flowbaby", description=STORE_DESCRIPTION, annotations=writes)
    async def store_memory(
        topic: Annotated[str, Field(description="Short title of the summary")],
        context: Annotated[str, Field(description="What happened and why it matters, 300-1,500 characters")],
        ctx: Context[Any, Any],
        decisions: Annotated[list[str], Field(description="0-5 key decisions, one per item")] = [],  # noqa: B006
        rationale: Annotated[list[str], Field(description="Why those decisions were made")] = [],  # noqa: B006
        openQuestions: Annotated[list[str], Field(description="Questions still open")] = [],  # noqa: B006
        nextSteps: Annotated[list[str], Field(description="What should happen next")] = [],  # noqa: B006
        references: Annotated[list[str], Field(description="Files, links, tickets")] = [],  # noqa: B006
        metadata: StoreMetadata | None = None,
        scope: Annotated[
            Literal["project", "user"],
            Field(
                description='"user" for the user\'s own way of working, which every project should follow '
                '("I always use uv"); default "project": this workspace\'s memory'
            ),
        ] = "project",
    ) -> CallToolResult:
        params: dict[str, Any] = {
            "topic": topic,
            "context": context,
            "decisions": decisions,
            "rationale": rationale,
            "openQuestions": openQuestions,
            "nextSteps": nextSteps,
            "references": references,
        }
        if metadata is not None:
            params["metadata"] = metadata.model_dump(exclude_none=True)
        if scope != "project":
            params["scope"] = scope
        return await store_raw(params, client_name(ctx))

    @server.tool(name=RETRIEVE, title="Retrieve Flowbaby Memory", description=RETRIEVE_DESCRIPTION, annotations=reads)
    async def retrieve_memory(
        query: Annotated[str, Field(description="Natural-language description of what you need to know")],
        ctx: Context[Any, Any],
        maxResults: Annotated[int, Field(ge=1, le=10, description="Most memories to return")] = 3,
        maxTokens: Annotated[int, Field(ge=1, le=200_000, description="Token budget of the returned text")] = 2000,
        includeSuperseded: Annotated[bool, Field(description="Also return replaced (superseded) versions")] = False,
        includeSessions: Annotated[
            bool, Field(description="Also search your imported agent sessions, ranked with the memories")
        ] = False,
    ) -> CallToolResult:
        params = {
            "query": query,
            "maxResults": maxResults,
            "maxTokens": maxTokens,
            "includeSuperseded": includeSuperseded,
            "includeSessions": includeSessions,
        }
        return await retrieve_raw(params, client_name(ctx))

    @server.tool(
        name=BACKGROUND, title="Flowbaby Background Status", description=BACKGROUND_DESCRIPTION, annotations=reads
    )
    async def background_status(
        ctx: Context[Any, Any],
        operationId: Annotated[
            str | None, Field(min_length=1, max_length=256, description="One operation; omit for all")
        ] = None,
    ) -> CallToolResult:
        return await background_raw({} if operationId is None else {"operationId": operationId}, client_name(ctx))

    @server.tool(name=INDEX, title="Flowbaby Index Status", description=INDEX_DESCRIPTION, annotations=reads)
    async def index_status(ctx: Context[Any, Any]) -> CallToolResult:
        async def call() -> CallToolResult:
            return success(await service.index_status(audited=True, agent_name=client_name(ctx)))

        return await framed(INDEX, call)

    @server.tool(name=GET_MEMORY, title="Get Flowbaby Memory", description=GET_MEMORY_DESCRIPTION, annotations=reads)
    async def get_memory(
        topicIds: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=256)]],
            Field(min_length=1, max_length=MAX_GET_TOPICS, description="The memories' topicIds"),
        ],
    ) -> CallToolResult:
        return await get_raw({"topicIds": topicIds}, None)

    if agent_forget:
        destructive = ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        )

        @server.tool(
            name=FORGET, title="Forget Flowbaby Memory", description=FORGET_DESCRIPTION, annotations=destructive
        )
        async def forget_memory(
            topicId: Annotated[str, Field(min_length=1, max_length=256, description="The memory's topicId")],
            ctx: Context[Any, Any],
            version: Annotated[int | None, Field(ge=1, description="One version only; omit for every version")] = None,
            dryRun: Annotated[bool, Field(description="Only say what would be forgotten")] = False,
        ) -> CallToolResult:
            params: dict[str, Any] = {"topicId": topicId, "dryRun": dryRun}
            if version is not None:
                params["version"] = version
            return await forget_raw(params, client_name(ctx))

    @server.tool(name=SESSIONS, title="Search Agent Sessions", description=SESSIONS_DESCRIPTION, annotations=reads)
    async def search_sessions(
        query: Annotated[str, Field(description="What to look for, in natural language")],
        sessionId: Annotated[str | None, Field(description="One session; omit for every session")] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most turns to return (one result per turn)")] = 10,
    ) -> CallToolResult:
        async def call() -> CallToolResult:
            if sessionId:
                request = validate_retrieval(SessionsRequest, {"session_id": sessionId, "q": query, "limit": limit})
                return success(await service.sessions("search", request))
            return success(
                await service.sessions("search_all", validate_retrieval(SessionsRequest, {"q": query, "limit": limit}))
            )

        return await framed(SESSIONS, call)

    return server
