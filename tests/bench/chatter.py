"""Capture without chatter (issue 50, item 4), measured on tests/bench/chatter_set.py.

For every session, one capture is planned as the service plans it (graph.capture.session_capture
`plan_capture`, offline distiller), the memories the session stored itself already in the store:
- chatter kept: labelled chatter lines that became decisions of the capture;
- stored repeated: decisions the session stored through storeMemory that the capture repeats;
- decisions kept: labelled decisions the capture holds (it must not lose them).
`python -m tests.bench.chatter` prints the numbers as JSON.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from graph.capture import session_capture
from graph.capture.distil import normal
from graph.core.contract import CaptureRequest, MemoryStatus
from graph.core.memories import Memory
from graph.sessions.model import Block, Message, SessionInfo
from tests.bench.chatter_set import SESSIONS, ChatterSession, StoreCall

WORKSPACE = Path("/nonexistent/chatter-ws")


def messages(session: ChatterSession) -> list[Message]:
    """The session's turns as a source adapter yields them (a store call: its topic and its reply)."""
    found = []
    for order, turn in enumerate(session.turns):
        if isinstance(turn, StoreCall):
            reply = json.dumps({"success": True, "summary_id": turn.topic_id, "operationId": "op"})
            blocks = [
                Block("tool_call", turn.summary["topic"], turn.tool),
                Block("tool_result", reply, turn.tool),
            ]
            found.append(Message(f"m{order}", "assistant", order, order, blocks))
        else:
            role, text = turn
            speaker = "user" if role == "user" else "assistant"
            found.append(Message(f"m{order}", speaker, order, order, [Block("text", text)]))
    return found


def stored_memories(session: ChatterSession) -> list[Memory]:
    """The memories the session's own storeMemory calls made."""
    return [
        Memory(
            memory_id=f"mem-{call.topic_id}",
            topic_id=call.topic_id,
            version=1,
            status=MemoryStatus.ACTIVE,
            topic=call.summary["topic"],
            context=call.summary.get("context", ""),
            decisions=list(call.summary.get("decisions", [])),
            rationale=[],
            open_questions=[],
            next_steps=[],
            references=[],
            time_scope=None,
            agent_name="claude-code",
            session_id=None,
            plan_id=None,
            created_at="2026-12-04T10:00:00Z",
            updated_at="2026-12-04T10:00:00Z",
        )  # fmt: skip
        for call in session.turns
        if isinstance(call, StoreCall)
    ]


def _holds(captured: list[str], label: str) -> bool:
    key = normal(label)
    return any(key and (key in text or text in key) for text in captured)


def plan(session: ChatterSession) -> list[str]:
    """The decisions one capture of the session would store (normalised)."""
    request = CaptureRequest.model_validate({"source": "claude-code", "sessionId": "s-" + session.name[:20]})
    info = SessionInfo("claude-code", request.sessionId, session.name, str(WORKSPACE), 1, len(session.turns))
    stored = stored_memories(session)
    known = {normal(d) for m in stored for d in m.decisions}
    extra: dict[str, Any] = {}
    if "stored" in inspect.signature(session_capture.plan_capture).parameters:
        extra["stored"] = lambda topic_ids, topics: [m for m in stored if m.topic_id in topic_ids or m.topic in topics]
    params, _, _ = session_capture.plan_capture(request, info, messages(session), 0, None, known, WORKSPACE, **extra)
    return [normal(d) for d in (params or {}).get("decisions", [])]


def run() -> dict[str, Any]:
    chatter = chatter_kept = stored = stored_repeated = decisions = decisions_kept = 0
    misses: list[str] = []
    for session in SESSIONS:
        captured = plan(session)
        for line in session.chatter:
            chatter += 1
            if _holds(captured, line):
                chatter_kept += 1
                misses.append(f"chatter kept: {line}")
        for line in session.stored:
            stored += 1
            if _holds(captured, line):
                stored_repeated += 1
                misses.append(f"stored decision repeated: {line}")
        for line in session.decisions:
            decisions += 1
            if _holds(captured, line):
                decisions_kept += 1
            else:
                misses.append(f"decision lost: {line}")
    return {
        "sessions": len(SESSIONS),
        "chatterLines": chatter,
        "chatterKeptAsDecisions": chatter_kept,
        "storedDecisions": stored,
        "storedDecisionsRepeated": stored_repeated,
        "decisions": decisions,
        "decisionsKept": decisions_kept,
        "misses": misses,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
