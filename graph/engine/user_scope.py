"""The user scope (issue 49, docs/contract/21-user-scope.md): memory that follows the person across projects.

The user's store is a flowbaby store of its own (Environment.user_store, outside every repository), with
this same engine and its guarantees (forget from every byte, export/import, redaction). A workspace's
engine reaches it as any front reaches a workspace (graph.engine.opening): it owns it when no process
does, else works through its owner's socket and takes it over when that owner leaves; so two projects'
owners never open one store at once. Requests name it with `scope: "user"`; retrieval, recall and the
briefing read it beside the project's store; every memory in a reply says which store holds it. A team
server's workspace has no user scope: user memories never leave this machine through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from graph.backends.backend import backend_for
from graph.core.contract import (
    AGENT,
    CAPTURE,
    PROJECT,
    USER,
    BackgroundStatusRequest,
    BackgroundStatusResponse,
    BriefingRequest,
    BriefingResponse,
    ErrorCode,
    ExportMemoriesRequest,
    ExportMemoriesResponse,
    FlowbabyContextRequest,
    FlowbabyContextResponse,
    FlowbabyError,
    FlowbabyIngestRequest,
    FlowbabyIngestResponse,
    ForgetMemoryRequest,
    ForgetMemoryResponse,
    GetMemoryRequest,
    GetMemoryResponse,
    ImportMemoriesRequest,
    ImportMemoriesResponse,
    ListMemoriesRequest,
    ListMemoriesResponse,
    MemoryContextResponse,
    MemoryStatus,
    MemoryVersionsResponse,
    RestoreMemoryRequest,
    RestoreMemoryResponse,
    RetrievalEntry,
    RetrievalReply,
    RetrieveMemoryResponse,
    Scope,
    Scoped,
    StoreMemoryResponse,
    UnknownOperation,
    Writer,
)
from graph.core.environment import Environment
from graph.core.memory_query import encode_cursor
from graph.core.service_protocol import MemoryService
from graph.core.workspace import PRIVATE_DIR_MODE, WorkspacePaths, resolve_workspace
from graph.engine.forget import Forget
from graph.engine.hooks import Hooks
from graph.engine.memories import Memories
from graph.engine.state import log
from graph.owner.client import OwnerClient
from graph.search.briefing import GET_MEMORY_HINT
from graph.search.markdown import render_markdown
from graph.search.reconciler import CachedEncoder
from graph.search.token_budget import count_tokens
from graph.search.user_scope import PREFERENCES_TITLE, budget, fuse, overriding, preferences_section, proposals_line

Model = TypeVar("Model", bound=BaseModel)
"""A typed operation's reply (a contract model)."""
ScopedRequest = TypeVar("ScopedRequest", bound=Scoped)
"""A typed request that may name the user store."""
USER_WAIT_SEC = 10.0
"""The longest a read waits for the user store (opened, or reached through its owner); past it the
project's answer goes out alone (logged)."""
USER_SKIP_ENV = "FLOWBABY_USER_SKIP_SEC"
DEFAULT_USER_SKIP_SEC = 30.0
MAX_USER_SKIP_SEC = 300.0
"""After a read that waited USER_WAIT_SEC in vain, the user store is not asked for FLOWBABY_USER_SKIP_SEC
(30 s); each later try that times out again doubles that, up to 300 s; an answer ends it. A stuck owner
of the user store (stopped, swapping) would otherwise hold every retrieval, recall and briefing of every
project for USER_WAIT_SEC."""
WARM_WAIT_SEC = 3.0
"""How long a briefing waits for this project's search to load, to tell which preferences it overrides."""
MAX_PREFERENCES = 12
"""User memories the briefing considers (the newest ones)."""


def user_store_root() -> Path:
    return Path(os.path.abspath(Environment.read().user_store)).resolve()


def _private_folder(root: Path) -> None:
    """The user store's folder and its parent, made 0700 where missing; one of another user is refused."""
    for folder in (root.parent, root):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True)
    info = root.stat()
    if info.st_uid != os.getuid():
        raise FlowbabyError(ErrorCode.INVALID_WORKSPACE_PATH, f"The user store {root} belongs to uid {info.st_uid}")
    if info.st_mode & 0o077:
        os.chmod(root, PRIVATE_DIR_MODE)


class UserScope(Hooks, Memories, Forget):
    """Routes `scope` to the user's store and reads both stores where an agent reads memory."""

    _user: MemoryService | None = None
    _user_opening: asyncio.Lock | None = None
    _user_encoder: CachedEncoder | None = None

    _scope: Scope | None = None
    _user_skip_until: float = 0.0
    _user_skip_sec: float = 0.0
    """The back-off's current length (0: the user store answered last, or was never stuck)."""

    @property
    def scope(self) -> Scope:
        """This store's scope: `user` for the user store itself, else `project` (read once: the folder's)."""
        if self._scope is None:
            self._scope = USER if self.paths.root == user_store_root() else PROJECT
        return self._scope

    def _has_user_scope(self) -> bool:
        return self.scope == PROJECT and not self.backend.shared

    async def _user_service(self, *, create: bool) -> MemoryService | None:
        """The user store (None: it does not exist yet and `create` is false, or this store has no user scope)."""
        if not self._has_user_scope():
            return None
        if self._user is not None:
            return self._user
        root = user_store_root()
        if not create and not WorkspacePaths(root).store_db.exists():
            return None
        if self._user_opening is None:
            self._user_opening = asyncio.Lock()
        async with self._user_opening:
            if self._user is None:
                self._user = await self._open_user_store(root)
        return self._user

    async def _open_user_store(self, root: Path) -> MemoryService:
        """Own it (sharing this process's model), or work through the process that does."""
        await asyncio.to_thread(_private_folder, root)
        opener: Any = type(self)  # FlowbabyService: this mixin cannot import it (a cycle)
        embedder, build = self.embedder, self.operations.started  # graph work runs where the project's does

        async def own() -> Any:
            paths = resolve_workspace(root)
            return await opener.open(
                root, own_logging=False, embedder=embedder, backend=backend_for(paths), build_graph=build
            )

        try:
            owned: MemoryService = await own()
            return owned
        except FlowbabyError as error:
            if error.code is not ErrorCode.WORKSPACE_BUSY:
                raise
        return await OwnerClient.connect(resolve_workspace(root), own)

    def start_graph_work(self) -> None:
        """The project's graph work, and the user store's when this process holds it (a forget there waits
        for the graph's step, which only a started operation manager takes)."""
        super().start_graph_work()
        starts = getattr(self._user, "start_graph_work", None)
        if starts is not None:
            starts()

    async def _routed(self, scope: Scope | None) -> MemoryService | None:
        """The service a request's `scope` names (None: this one)."""
        if scope in (None, PROJECT) or self.scope == USER:
            return None
        if self.backend.shared:
            raise FlowbabyError(
                ErrorCode.INVALID_PAYLOAD,
                'Field "scope": a team server keeps no user-scope memories (they stay on the user\'s machine)',
                fields=["scope"],
            )
        service = await self._user_service(create=True)
        assert service is not None
        return service

    def _marked(self, reply: dict[str, Any], scope: Scope | None = None) -> dict[str, Any]:
        """The reply with the store it came from."""
        return {**reply, "scope": scope or self.scope}

    def _model_marked(self, reply: Model, scope: Scope | None = None) -> Model:
        """A typed reply (a contract model with a `scope` field) with the store it came from."""
        return reply.model_copy(update={"scope": scope or self.scope})

    # -- writes and single memories ------------------------------------------------------------
    def _proposes(self, writer: Writer) -> bool:
        """The user store keeps an agent's writes as proposals until the person accepts them."""
        return self.scope == USER and writer == AGENT

    def _project(self, project: str | None) -> str:
        """The project a user-scope write came from (its briefing line names it)."""
        return project or str(self.origin)

    async def ingest(
        self,
        request: FlowbabyIngestRequest,
        *,
        bulk: bool = False,
        origin: str | None = None,
        capture: bool = False,
        writer: Writer | None = None,
        project: str | None = None,
    ) -> FlowbabyIngestResponse:
        user, request = await self._routed_request(request)
        if user is not None:
            who = writer or (CAPTURE if capture else AGENT)
            reply = await user.ingest(request, bulk=bulk, writer=who, project=self._project(project or origin))
            return self._model_marked(reply, USER)
        return self._model_marked(
            await super().ingest(request, bulk=bulk, origin=origin, capture=capture, writer=writer, project=project)
        )

    async def store_memory(
        self,
        request: FlowbabyIngestRequest,
        *,
        origin: str | None = None,
        writer: Writer | None = None,
        project: str | None = None,
    ) -> StoreMemoryResponse:
        user, request = await self._routed_request(request)
        if user is not None:
            reply = await user.store_memory(request, writer=writer or AGENT, project=self._project(project or origin))
            return self._model_marked(reply, USER)
        return self._model_marked(await super().store_memory(request, origin=origin, writer=writer, project=project))

    async def get_memory(self, request: GetMemoryRequest) -> GetMemoryResponse:
        """A topicId without `scope` is looked up in the project, then in the user store."""
        named = request.scope is not None
        user, request = await self._routed_request(request)
        if user is not None:
            return self._model_marked(await user.get_memory(request), USER)
        try:
            return self._model_marked(await super().get_memory(request))
        except FlowbabyError as error:
            if error.code is not ErrorCode.NOT_FOUND or named:
                raise
            found = await self._user_service(create=False)
            if found is None:
                raise
            return self._model_marked(await found.get_memory(request), USER)

    async def background_status(
        self, request: BackgroundStatusRequest, *, audited: bool = False, agent_name: str | None = None
    ) -> BackgroundStatusResponse:
        """An operationId the project does not know (`unknown`) is asked of the user store: a user write's."""
        reply = await super().background_status(request, audited=audited, agent_name=agent_name)
        if not isinstance(reply, UnknownOperation):
            return reply
        found = await self._user_read(lambda service: service.background_status(request))
        return found if found is not None and not isinstance(found, UnknownOperation) else reply

    async def memory_versions(self, topic_id: str) -> MemoryVersionsResponse:
        """The project's topic, else (NOT_FOUND) the user store's of that topicId."""
        try:
            return await super().memory_versions(topic_id)
        except FlowbabyError as error:
            found = await self._user_service(create=False) if error.code is ErrorCode.NOT_FOUND else None
            if found is None:
                raise
            return await found.memory_versions(topic_id)

    async def memory_context(
        self, topic_id: str, query: str | None = None, hops: int = 1, version: int | None = None
    ) -> MemoryContextResponse:
        """As memory_versions: the project's topic, else the user store's, with its own graph neighbourhood."""
        try:
            return await super().memory_context(topic_id, query, hops, version)
        except FlowbabyError as error:
            here = await asyncio.to_thread(self.store.topic_versions, topic_id)
            if error.code is not ErrorCode.NOT_FOUND or here:
                raise  # not found, or the project's topic lacks that version
            found = await self._user_service(create=False)
            if found is None:
                raise
            return await found.memory_context(topic_id, query, hops, version)

    async def _routed_request(self, request: ScopedRequest) -> tuple[MemoryService | None, ScopedRequest]:
        """As _routed, for a typed request: the service its `scope` names, and the request without it."""
        user = await self._routed(request.scope)
        return user, request.model_copy(update={"scope": None})

    async def forget_memory(
        self, request: ForgetMemoryRequest, *, agent_name: str | None = None
    ) -> ForgetMemoryResponse:
        user, request = await self._routed_request(request)
        if user is not None:
            return self._model_marked(await user.forget_memory(request, agent_name=agent_name), USER)
        return self._model_marked(await super().forget_memory(request, agent_name=agent_name))

    async def export_memories(self, request: ExportMemoriesRequest) -> ExportMemoriesResponse:
        user, request = await self._routed_request(request)
        if user is not None:
            return await user.export_memories(request)
        return await super().export_memories(request)

    async def import_memories(
        self, request: ImportMemoriesRequest, *, retire_person: bool = False
    ) -> ImportMemoriesResponse:
        user, request = await self._routed_request(request)
        if user is not None:
            return self._model_marked(await user.import_memories(request, retire_person=retire_person), USER)
        return self._model_marked(await super().import_memories(request, retire_person=retire_person))

    async def restore_memory(self, request: RestoreMemoryRequest) -> RestoreMemoryResponse:
        user, request = await self._routed_request(request)
        if user is not None:
            return await user.restore_memory(request)
        return await super().restore_memory(request)

    async def list_memories(self, request: ListMemoriesRequest) -> ListMemoriesResponse:
        """`scope`: project (the default), user, or all (both, merged in the page's order; one cursor
        pages both, as both keep their pages by stagedAt and memoryId)."""
        scope, request = request.scope or PROJECT, request.model_copy(update={"scope": None})
        if scope == PROJECT or self.scope == USER or (scope == "all" and not self._has_user_scope()):
            return self._listed(await super().list_memories(request), self.scope)
        if scope == USER:
            user = await self._routed(USER)
            assert user is not None
            return self._listed(await user.list_memories(request), USER)
        project = await super().list_memories(request)
        found = await self._user_service(create=False)
        if found is None:
            return self._listed(project, PROJECT)
        other = await found.list_memories(request)
        both = self._listed(project, PROJECT).memories + self._listed(other, USER).memories
        both.sort(key=lambda m: (m.stagedAt, m.memoryId), reverse=request.order == "newest")
        page, more = both[: request.limit], len(both) > request.limit or bool(project.nextCursor or other.nextCursor)
        cursor = encode_cursor(page[-1].stagedAt, page[-1].memoryId) if more and page else None
        return project.model_copy(update={"memories": page, "count": len(page), "nextCursor": cursor})

    @staticmethod
    def _listed(reply: ListMemoriesResponse, scope: Scope) -> ListMemoriesResponse:
        return reply.model_copy(update={"memories": [m.model_copy(update={"scope": scope}) for m in reply.memories]})

    # -- reading both stores ------------------------------------------------------------------------
    async def _user_read(self, call: Any) -> Any:
        """A read of the user store, bounded; None when there is none, it failed (logged) or is skipped."""
        return (await self._user_read_noted(call))[0]

    async def _user_read_noted(self, call: Any) -> tuple[Any, str | None]:
        """_user_read, and why the user store was not read when it is stuck (timed out now, or skipped
        while its back-off runs: USER_SKIP_ENV)."""
        if self._user_skip_sec and time.monotonic() < self._user_skip_until:
            return None, self._skipped_note()
        try:
            # shielded: a slow open is never cancelled half-way (it holds the store's lock); the next read uses it
            service = await asyncio.wait_for(asyncio.shield(self._user_service(create=False)), USER_WAIT_SEC)
            found = None if service is None else await asyncio.wait_for(call(service), USER_WAIT_SEC)
        except TimeoutError:
            self._user_skip_sec = min(MAX_USER_SKIP_SEC, 2 * self._user_skip_sec or self._first_skip_sec())
            self._user_skip_until = time.monotonic() + self._user_skip_sec
            log.warning("the user store did not answer within %gs; skipped for %gs", USER_WAIT_SEC, self._user_skip_sec)
            return None, self._skipped_note()
        except Exception as exc:  # the project's answer never waits on, or fails with, the user store
            log.warning(
                "the user store did not answer (%s: %s); the project's answer goes alone", type(exc).__name__, exc
            )
            return None, None
        self._user_skip_sec = 0.0
        return found, None

    @staticmethod
    def _first_skip_sec() -> float:
        try:
            return max(0.0, Environment.read().seconds(USER_SKIP_ENV, DEFAULT_USER_SKIP_SEC))
        except ValueError:
            return DEFAULT_USER_SKIP_SEC

    def _skipped_note(self) -> str:
        left = max(0.0, self._user_skip_until - time.monotonic())
        return (
            f"Your user store was not searched: it did not answer within {USER_WAIT_SEC:g}s (its owner may be "
            f"stuck); it is skipped for {left:.0f}s more, then asked again."
        )

    def _overrides(self, user: list[dict[str, Any]]) -> dict[str, str]:
        retriever, index = self._retriever, self._vectors
        if not user or retriever is None or index is None:
            return {}
        if self._user_encoder is None:
            self._user_encoder = CachedEncoder()
        return overriding(user, retriever, index, self._user_encoder)

    async def retrieve(
        self, request: FlowbabyContextRequest, *, markdown: bool = False, **options: Any
    ) -> RetrievalReply:
        """retrieveForAgent / retrieveMemory over `scope` (all: both stores, fused; user entries this
        project overrides are marked `overriddenBy` and ranked last). `options`: Retrieval.retrieve's
        (lanes, agent_name, origin); the user store gets only the caller's agent name."""
        agent_name = options.get("agent_name")
        scope, request = request.scope or "all", request.model_copy(update={"scope": None})
        if scope == USER and self._has_user_scope():
            service = await self._routed(USER)
            assert service is not None
            return self._entries_marked(await service.retrieve(request, markdown=markdown, agent_name=agent_name), USER)
        if scope == PROJECT or not self._has_user_scope():
            return self._entries_marked(await super().retrieve(request, markdown=markdown, **options), self.scope)
        mine = request.model_copy(update={"includeSessions": False})
        answered, (found, skipped) = await asyncio.gather(
            super().retrieve(request, markdown=markdown, **options),  # audited as the command it is
            self._user_read_noted(lambda service: service.retrieve(mine, agent_name=agent_name)),
        )
        marked = self._entries_marked(answered, PROJECT)
        if found is None:
            return self._user_skipped(marked, skipped)
        project = marked.model_dump(mode="json")
        user = self._entries_marked(found, USER).model_dump(mode="json")
        candidates = [*user["entries"], *user["weakCandidates"]]
        overridden = await asyncio.to_thread(self._overrides, candidates)
        for entry in candidates:
            entry["overriddenBy"] = overridden.get(entry["topicId"])
        both_abstained = project["abstained"] and user["abstained"]
        entries = fuse(
            [] if project["abstained"] else project["entries"],
            [] if user["abstained"] else user["entries"],
            request.maxResults,
            request.maxTokens,
        )
        weak = sorted([*project["weakCandidates"], *user["weakCandidates"]], key=lambda e: -e["score"])[:2]
        answer = FlowbabyContextResponse.model_validate(
            {
                "entries": entries,
                "totalResults": len(entries),
                "tokensUsed": sum(int(e["tokens"]) for e in entries),
                "abstained": both_abstained,
                "abstainReason": project["abstainReason"] if both_abstained else None,
                "weakCandidates": weak if both_abstained else [],
                "indexing": project.get("indexing"),
                "sessionsNotSearched": project.get("sessionsNotSearched"),
            }
        )
        return self._finished(answer, markdown)

    @staticmethod
    def _user_skipped(reply: RetrievalReply, note: str | None) -> RetrievalReply:
        """The project's answer with `userNotSearched` (and, with markdown, the note as its first line)."""
        if note is None:
            return reply
        if isinstance(reply, RetrieveMemoryResponse):
            return reply.model_copy(update={"userNotSearched": note, "markdown": f"> {note}\n\n{reply.markdown}"})
        return reply.model_copy(update={"userNotSearched": note})

    @staticmethod
    def _entries_marked(reply: RetrievalReply, scope: Scope) -> RetrievalReply:
        def marked(entries: list[RetrievalEntry]) -> list[RetrievalEntry]:
            return [entry.model_copy(update={"scope": scope}) for entry in entries]

        return reply.model_copy(
            update={"entries": marked(reply.entries), "weakCandidates": marked(reply.weakCandidates)}
        )

    @staticmethod
    def _finished(reply: FlowbabyContextResponse, markdown: bool) -> RetrievalReply:
        if not markdown:
            return reply
        text = render_markdown(reply.entries, reply.abstainReason if reply.abstained else None)
        if reply.sessionsNotSearched:
            text = f"> {reply.sessionsNotSearched}\n\n{text}"
        return RetrieveMemoryResponse(**dict(reply), markdown=text)

    async def briefing(self, request: BriefingRequest) -> BriefingResponse:
        """The project's briefing, and after it "Your preferences": the user's newest memories within
        a quarter of the budget (budget()), each overridden one naming the project memory that wins."""
        listed = [] if request.scope == PROJECT else await self._user_read(self._preferences) or []
        preferences = [p for p in listed if p["status"] != MemoryStatus.PROPOSED.value]
        waiting = len(listed) - len(preferences)
        if not preferences and not waiting:
            return self._items_marked(await super().briefing(request))
        warming = self._warm_task
        if self._retriever is None and warming is not None and not warming.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(warming), WARM_WAIT_SEC)
        overridden = await asyncio.to_thread(self._overrides, preferences)
        lines, items, used = preferences_section(preferences, overridden, budget(request.maxTokens))
        if waiting:  # proposals are never listed as the person's: only counted, with how to see them
            lines = [*(lines or [PREFERENCES_TITLE]), proposals_line(waiting)]
            used += count_tokens(lines[-1]) + 1
        rest = request.model_copy(update={"maxTokens": max(50, request.maxTokens - used)})
        project = self._items_marked(await super().briefing(rest))
        if not lines:
            return project
        head = project.text or f"Flowbaby workspace memory (one line per memory; {GET_MEMORY_HINT}):"
        text = "\n".join([head, *lines])
        return project.model_copy(
            update={"text": text, "items": [*project.items, *items], "tokens": count_tokens(text)}
        )

    async def _preferences(self, service: MemoryService) -> list[dict[str, Any]]:
        """The user's newest live memories and agents' proposals, each with its topic, decisions and context."""
        live = ListMemoriesRequest.model_validate(
            {"limit": MAX_PREFERENCES, "status": ["Active", "DecisionRecord", "Proposed"], "withContent": True}
        )
        return [item.model_dump(mode="json") for item in (await service.list_memories(live)).memories]

    def _items_marked(self, reply: BriefingResponse) -> BriefingResponse:
        return reply.model_copy(update={"items": [{**item, "scope": self.scope} for item in reply.items]})

    async def close(self, grace_sec: float = 30.0, *, hand_on: bool = False) -> None:
        user, self._user = self._user, None
        if user is not None:
            try:
                await user.close(grace_sec, hand_on=hand_on)
            except Exception:  # the project's own close must still run
                log.exception("closing the user store failed")
        await super().close(grace_sec, hand_on=hand_on)
