"""The client hooks' requests: session-start briefing, per-prompt recall and session capture."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from graph.core.contract.base import MAX_QUERY_CHARS, _stamp, _Strict


class BriefingRequest(_Strict):
    agentName: str | None = Field(default=None, max_length=256)
    since: str | None = None
    """This agent's last session start: memories other agents stored after it are listed."""
    maxTokens: int = Field(default=800, ge=50, le=20_000)

    @field_validator("since")
    @classmethod
    def _since(cls, value: str | None) -> str | None:
        return None if value is None else _stamp(value)


class RecallRequest(_Strict):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    maxTokens: int = Field(default=400, ge=50, le=20_000)
    maxResults: int = Field(default=3, ge=1, le=10)
    exclude: list[str] = Field(default_factory=list, max_length=2_000)
    """topicIds already injected in this session: never injected again."""
    agentName: str | None = Field(default=None, max_length=256)


class CaptureRequest(_Strict):
    source: Literal["claude-code", "opencode", "codex", "gemini"]
    sessionId: str = Field(min_length=1, max_length=256)
    transcriptPath: str | None = Field(default=None, max_length=4_096)
    """Claude Code's transcript (the hook's transcript_path); else the session is found in the index's sources."""
    agentName: str | None = Field(default=None, max_length=256)
    reason: str = Field(default="manual", max_length=64)
