"""The client hooks' requests and replies: session-start briefing, per-prompt recall and session capture."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from graph.core.contract.base import MAX_QUERY_CHARS, _absent, _stamp, _Strict


class BriefingRequest(_Strict):
    agentName: str | None = Field(default=None, max_length=256)
    since: str | None = None
    """This agent's last session start: memories other agents stored after it are listed."""
    maxTokens: int = Field(default=800, ge=50, le=20_000)
    scope: Literal["project", "all"] | None = None
    """`project`: without the user's preferences (a server started with --allow-remote); default both."""

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


class BriefingResponse(BaseModel):
    """The session-start briefing (17.1): one line per memory within the budget, and what each line is."""

    text: str
    items: list[dict[str, Any]]
    tokens: int
    memories: int


class RecallResponse(BaseModel):
    """Per-prompt recall (17.2): compact lines, each line's topicId and scope, or the abstention."""

    text: str
    topicIds: list[str]
    items: list[dict[str, Any]] = Field(default_factory=list)
    tokens: int
    abstained: bool
    abstainReason: str | None
    userNotSearched: str | None = Field(default=None, exclude_if=_absent)
    """The retrieval's note when the user store was stuck or skipped (docs/contract/21-user-scope.md)."""


class CaptureResponse(BaseModel):
    """A session capture (17.3): whether it stored a version of the session's topic, and why not; the fields
    of the steps it took (the turns read, the preferences stored, the distiller, the staged version)."""

    captured: bool
    reason: str
    topicId: str
    turns: int | None = Field(default=None, exclude_if=_absent)
    preferences: dict[str, Any] | None = Field(default=None, exclude_if=_absent)
    distiller: str | None = Field(default=None, exclude_if=_absent)
    llmFallback: str | None = Field(default=None, exclude_if=_absent)
    operationId: str | None = Field(default=None, exclude_if=_absent)
    memoryId: str | None = Field(default=None, exclude_if=_absent)
    version: int | None = Field(default=None, exclude_if=_absent)
    decisions: int | None = Field(default=None, exclude_if=_absent)
    references: int | None = Field(default=None, exclude_if=_absent)
