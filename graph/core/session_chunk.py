"""One chunk of a session's turn, as graph.sessions.chunking cuts it and every backend's session
store keeps it (graph.backends.sessions): here so the stores need nothing from graph.sessions."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TurnChunk:
    embedding_id: str
    message_id: str
    chunk_index: int
    order: int
    role: str
    created_ms: int
    text: str
    redacted: bool
