"""The agents' own session memory (graph/sessions) as engine operations."""

from __future__ import annotations

from graph.core.contract import SESSION_REPLIES, SessionsRequest, SessionsResponse, WatchingSessions
from graph.engine.state import EngineState
from graph.sessions.agent_api import THROTTLED_SESSION_OPS, SessionMemory, SessionOp


class Sessions(EngineState):
    """sessions (Vapor's API) and session watching."""

    async def sessions(self, op: SessionOp, request: SessionsRequest) -> SessionsResponse:
        """The agents' own sessions: list, current, status, search, search_all, context,
        import, update, repair (graph.sessions.agent_api, which checks what each needs). The searches
        (search, search_all, context) pass the retrieval throttle as memory searches do (section 14.5)."""
        arguments = request.model_dump()
        if op in THROTTLED_SESSION_OPS:
            SessionMemory.query(arguments)  # validation first: a call without `q` spends no admission
            async with self.throttle.admit():
                reply = await self.session_memory.call(op, arguments)
        else:
            reply = await self.session_memory.call(op, arguments)
        return SESSION_REPLIES[op].model_validate(reply)  # type: ignore[return-value]

    async def watch_sessions(self) -> WatchingSessions:
        """Keep the workspace's sessions fresh while this process owns it (serve, bridge)."""
        self.session_memory.watch()
        return WatchingSessions(watching=self.session_memory.settings.watch)
