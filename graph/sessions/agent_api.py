"""The session-memory API as the service exposes it: Vapor's agent endpoints (current session,
index status, search, context), the workspace-wide list and search, and the import, update and
repair actions; plus the watcher that keeps imported sessions fresh while the workspace is owned.

Every call runs the synchronous SessionIndex in a worker thread. An unknown session or one of
another workspace is NOT_FOUND; a missing `q` is INVALID_REQUEST; a source that cannot be read
is reported inside the status message.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from graph.backends.backend import Backend
from graph.core.contract import (
    ErrorCode,
    FlowbabyError,
    RetrievalEntry,
    RetrievalError,
    RetrievalErrorCode,
    SessionOp,
)
from graph.sessions.config import SessionSettings, load_session_settings
from graph.sessions.entries import session_entry
from graph.sessions.index import (
    Encoder,
    OutsideWorkspace,
    SearchOutcome,
    SessionIndex,
    SessionNotFound,
    sources_from,
)
from graph.sessions.model import SOURCES, Source, SourceError
from graph.sessions.ranking import TurnHit

log = logging.getLogger("flowbaby.sessions")

THROTTLED_SESSION_OPS: frozenset[SessionOp] = frozenset({"search", "search_all", "context"})
"""Session searches are retrievals: they pass the retrieval throttle. The others do not: list,
current and status read metadata (an agent polls status while a session imports), and an
import or update may run for minutes, which would hold one of the two retrieval slots."""
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
MAX_QUERY_CHARS = 4000
Entries = list[RetrievalEntry]


class SessionMemory:
    def __init__(
        self,
        workspace: Path,
        folder: Path,
        encoder: Encoder,
        settings: SessionSettings | None = None,
        sources: list[Source] | None = None,
        vectors_idle_sec: float | None = None,
        backend: Backend | None = None,
    ) -> None:
        """`vectors_idle_sec` and `backend` as in SessionIndex (the owner passes its
        FLOWBABY_WORKER_IDLE_SEC and its backend)."""
        self.settings = settings or load_session_settings(workspace)
        sources = sources or sources_from(self.settings)
        self._args = (workspace, folder, encoder, self.settings, sources, vectors_idle_sec, backend)
        self._index: SessionIndex | None = None
        self._opening = asyncio.Lock()
        self._watch: asyncio.Task[None] | None = None

    async def index(self) -> SessionIndex:
        """Opened on first use, so a workspace that never asks about sessions pays nothing."""
        async with self._opening:
            if self._index is None:
                self._index = await asyncio.to_thread(SessionIndex, *self._args)
            return self._index

    async def call(self, op: SessionOp, params: dict[str, Any]) -> dict[str, Any]:
        index = await self.index()
        handler = getattr(self, f"_{op}", None)
        if handler is None:
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, f"Unknown sessions operation {op!r}")
        try:
            result: dict[str, Any] = await asyncio.to_thread(handler, index, self._checked(params))
            return result
        except SessionNotFound as exc:
            raise FlowbabyError(ErrorCode.NOT_FOUND, str(exc)) from None
        except OutsideWorkspace as exc:
            raise FlowbabyError(ErrorCode.NOT_FOUND, str(exc)) from None

    async def turns(
        self, query: str, limit: int, abstain: bool, max_tokens: int
    ) -> tuple[Entries, Entries, str | None]:
        """retrieveForAgent's `includeSessions`: the workspace's best session turns as entries, the
        weak candidates when the search abstained, and why."""
        index = await self.index()

        def search() -> tuple[Entries, Entries, str | None]:
            keys = index.keys_under(None)
            found = index.search(keys, query, limit, abstain)
            titles = {key: (index.store.record(key) or ("", "", "", ""))[3] for key in keys}

            def entry(result: dict[str, Any], hit: TurnHit, weak: bool = False) -> RetrievalEntry:
                return session_entry(result, hit, titles.get(hit.key, ""), max_tokens, weak)

            shown = [entry(r, h) for r, h in zip(found.results, found.hits, strict=False)]
            weak = [entry(r, h, True) for r, h in zip(found.weak, found.hits, strict=False)]
            return shown, weak, found.abstained

        return await asyncio.to_thread(search)

    # -- parameters -------------------------------------------------------------------
    @staticmethod
    def _source(params: dict[str, Any]) -> str | None:
        source = params.get("source") or None
        if source is not None and source not in SOURCES:
            raise RetrievalError(
                RetrievalErrorCode.INVALID_REQUEST,
                f'Parameter "source" must be one of {", ".join(SOURCES)}',
                fields=["source"],
            )
        return source

    @staticmethod
    def query(params: dict[str, Any]) -> str:
        """The search's `q`, checked (INVALID_REQUEST)."""
        query = params.get("q")
        if not isinstance(query, str) or not query.strip():
            raise RetrievalError(RetrievalErrorCode.INVALID_REQUEST, 'Parameter "q" is required', fields=["q"])
        if len(query) > MAX_QUERY_CHARS:
            raise RetrievalError(
                RetrievalErrorCode.INVALID_REQUEST, f'Parameter "q" exceeds {MAX_QUERY_CHARS} characters', fields=["q"]
            )
        return query

    @staticmethod
    def _checked(params: dict[str, Any]) -> dict[str, Any]:
        """Strings only, without NUL (a path with one cannot exist; os.path would raise)."""
        for name in ("cwd", "session_id", "source"):
            value = params.get(name)
            if value is not None and (not isinstance(value, str) or "\x00" in value):
                raise RetrievalError(
                    RetrievalErrorCode.INVALID_REQUEST, f'Parameter "{name}" must be a string', fields=[name]
                )
        return params

    @staticmethod
    def _int(params: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
        value = params.get(name, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise RetrievalError(
                RetrievalErrorCode.INVALID_REQUEST,
                f'Parameter "{name}" must be an integer from {low} to {high}',
                fields=[name],
            )
        return value

    @staticmethod
    def _abstain(params: dict[str, Any]) -> bool:
        value = params.get("abstain", False)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise RetrievalError(
                RetrievalErrorCode.INVALID_REQUEST, 'Parameter "abstain" must be a boolean', fields=["abstain"]
            )
        return value

    @staticmethod
    def _session_id(params: dict[str, Any]) -> str:
        sid = params.get("session_id")
        if not isinstance(sid, str) or not sid:
            raise RetrievalError(
                RetrievalErrorCode.INVALID_REQUEST, 'Parameter "session_id" is required', fields=["session_id"]
            )
        return sid

    # -- operations (worker thread) -----------------------------------------------------
    def _list(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        sessions, problems = index.listed(params.get("cwd"), self._source(params))
        items = [index.describe(s) for s in sessions]
        return {"sessions": items, "count": len(items), "problems": problems}

    def _current(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        info, problems = index.current(params.get("cwd"), self._source(params))
        if info is None:
            detail = f" ({'; '.join(problems)})" if problems else ""
            raise SessionNotFound(
                f"No session for {params.get('cwd') or index.workspace}{detail}; pass an explicit session_id"
            )
        return index.describe(info, problems)

    def _status(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("session_id"):
            info, problems = index.find(self._session_id(params), self._source(params))
        else:
            found, problems = index.current(params.get("cwd"), self._source(params))
            if found is None:
                raise SessionNotFound(f"No session for {params.get('cwd') or index.workspace}")
            info = found
        return {"session_id": info.session_id, "source": info.source, **index.status(info, problems)}

    def _search(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        query = self.query(params)
        limit = self._int(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        info = index.resolve(self._session_id(params), self._source(params))
        return self._found(index.search([info.key], query, limit, self._abstain(params)), {})

    def _search_all(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        query = self.query(params)
        limit = self._int(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        keys = index.keys_under(params.get("cwd"))
        source = self._source(params)
        if source:
            keys = [k for k in keys if k.startswith(source + ":")]
        found = index.search(keys, query, limit, self._abstain(params))
        return self._found(found, {"sessions_searched": len(keys)})

    @staticmethod
    def _found(found: SearchOutcome, extra: dict[str, Any]) -> dict[str, Any]:
        """Vapor's `results` and `count`; when the search abstained, why, and the weak candidates."""
        reply: dict[str, Any] = {"results": found.results, "count": len(found.results), **extra}
        if found.abstained:
            reply["abstained"] = found.abstained
            reply["weak_candidates"] = found.weak
        return reply

    def _context(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        query = self.query(params)
        turns = self._int(params, "context_turns", 2, 0, 20)
        limit = self._int(params, "limit", 3, 1, 20)
        info = index.resolve(self._session_id(params), self._source(params))
        results = index.context(info.key, query, turns, limit)
        return {
            "session_id": info.session_id,
            "q": query,
            "context_turns": turns,
            "results": results,
            "count": len(results),
        }

    def _action(self, index: SessionIndex, params: dict[str, Any], action: str) -> dict[str, Any]:
        info, problems = index.find(self._session_id(params), self._source(params))
        try:
            if action == "import":
                outcome = index.import_session(info)
            elif action == "update":
                outcome = index.update_session(info)
            else:
                outcome = index.repair_session(info)
        except SourceError as exc:
            problems = [*problems, str(exc)]
            outcome = {}
        return {"action": action, **outcome, **index.describe(info, problems)}

    def _import(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        return self._action(index, params, "import")

    def _update(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        return self._action(index, params, "update")

    def _repair(self, index: SessionIndex, params: dict[str, Any]) -> dict[str, Any]:
        return self._action(index, params, "repair")

    # -- watcher ----------------------------------------------------------------------
    def watch(self) -> None:
        """Keep the workspace's sessions fresh until close() (FLOWBABY_SESSIONS_WATCH=0 turns it off)."""
        if self.settings.watch and self._watch is None:
            self._watch = asyncio.create_task(self._watch_loop(), name="flowbaby-sessions-watch")

    async def _watch_loop(self) -> None:
        while True:
            try:
                index = await self.index()
                await asyncio.to_thread(self.refresh, index)
            except Exception:  # one bad pass must not stop the watcher
                log.exception("session watch pass failed")
            await asyncio.sleep(self.settings.watch_interval_sec)

    def refresh(self, index: SessionIndex) -> int:
        """One watcher pass: update imported sessions whose source changed (and import new
        top-level sessions with auto_import); returns how many sessions were touched."""
        sessions, _ = index.listed()
        touched = 0
        for info in sessions:
            if index.stopping.is_set():
                break
            record = index.store.imported(info.key)
            if record is None and not (self.settings.auto_import and info.top_level):
                continue
            if record is not None and record.fingerprint == info.fingerprint:
                continue
            try:
                index.update_session(info)
                touched += 1
            except SourceError as exc:
                log.warning("session %s: %s", info.key, exc)
        return touched

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
            self._watch = None
        if self._index is not None:
            await asyncio.to_thread(self._index.close)
            self._index = None
