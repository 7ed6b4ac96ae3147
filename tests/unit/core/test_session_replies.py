"""The sessions operations' reply models (graph/core/contract/sessions.py) write Vapor's objects as the
session memory answers them: the same keys, in the same order, a field left out still left out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from graph.core.contract import SESSION_REPLIES, SessionsResponse
from graph.core.service_protocol import operation_models

STATUS = {
    "status": "ready",
    "can_search": True,
    "needs_update": False,
    "needs_repair": False,
    "chunks": 4,
    "vectors": 4,
    "coverage": 1.0,
    "model": "MiniLM all-MiniLM-L6-v2",
    "message": "Search is ready.",
}
SESSION = {
    "source": "opencode",
    "session_id": "ses_1",
    "title": "Fix the export",
    "directory": "/ws",
    "updated_at": "2026-01-01T00:00:00Z",
    "message_count": 3,
    "index_status": STATUS,
}
HIT = {"embedding_id": "e1", "distance": 0.2, "chunk_text": "why", "score": 0.8, "lanes": ["vector"]}
REPLIES: list[tuple[str, dict[str, Any]]] = [
    ("list", {"sessions": [SESSION], "count": 1, "problems": ["claude-code: unreadable"]}),
    ("current", SESSION),
    ("status", {"session_id": "ses_1", "source": "opencode", **STATUS}),
    ("search", {"results": [HIT], "count": 1}),
    ("search", {"results": [], "count": 0, "abstained": "no turn is close", "weak_candidates": [HIT]}),
    ("search_all", {"results": [HIT], "count": 1, "sessions_searched": 2}),
    ("context", {"session_id": "ses_1", "q": "why", "context_turns": 2, "results": [HIT], "count": 1}),
    ("import", {"action": "import", "messages": 3, "chunks": 4, "embedded": 4, **SESSION}),
    ("repair", {"action": "repair", "embedded": 0, **SESSION}),
    ("update", {"action": "update", **SESSION}),  # the source could not be read: no counts
]


@pytest.mark.parametrize(("op", "reply"), REPLIES)
def test_each_reply_model_writes_the_session_memorys_object_byte_for_byte(op: str, reply: dict[str, Any]) -> None:
    model = SESSION_REPLIES[op].model_validate(reply)  # type: ignore[index]
    assert json.dumps(model.model_dump(mode="json")) == json.dumps(reply)
    rebuilt: SessionsResponse = operation_models("sessions")[1].validate_python(reply, strict=False)  # type: ignore[union-attr]
    assert type(rebuilt) is type(model)  # the owner client rebuilds the op's model from the union
