"""What every source adapter yields: sessions, and messages made of typed blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from graph.core.contract import storable
from graph.core.redaction import clean

BlockKind = Literal["text", "reasoning", "tool_call", "tool_result"]
Role = Literal["user", "assistant", "tool", "system"]
SOURCES = ("opencode", "claude-code", "codex", "gemini")


class SourceError(Exception):
    """A source that cannot be read now (missing, locked, unreadable, unknown schema): reported as
    a status message, never as a server error."""


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str
    tool: str = ""

    def __post_init__(self) -> None:
        # A tool's binary output may hold NUL, a transcript's JSON a lone surrogate: every reader of a
        # turn (chunks on either store, capture's summaries) gets text that can be stored.
        object.__setattr__(self, "text", storable(self.text))
        object.__setattr__(self, "tool", storable(self.tool))


@dataclass
class Message:
    message_id: str
    role: Role
    order: int
    """Position in the session that survives incremental reads (seq, creation ms or file offset)."""
    created_ms: int
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class SessionInfo:
    source: str
    session_id: str
    title: str
    directory: str
    updated_ms: int
    message_count: int
    top_level: bool = True
    archived: bool = False
    fingerprint: str = ""
    """Changes whenever the session gains or changes turns (time_updated/seq, file size and mtime)."""

    def __post_init__(self) -> None:
        # The title (often the first user line) is served by list, current and import answers, and
        # stored: it is cleaned like the chunks (private spans, secrets), whatever source or record it came from.
        object.__setattr__(self, "title", clean(storable(self.title))[0])

    @property
    def key(self) -> str:
        return f"{self.source}:{self.session_id}"

    @property
    def updated_at(self) -> str:
        return iso_ms(self.updated_ms)


@dataclass
class Batch:
    """Messages read from a source since a watermark, and the watermark to keep for next time."""

    messages: list[Message]
    watermark: dict[str, Any]
    full: bool
    """True when the batch is the whole session (import, or a source that was rewritten)."""


class Source(Protocol):
    name: str
    problems: list[str]
    """Parts the last sessions() call could not read (one database or transcript each)."""

    def sessions(self, workspace: str) -> list[SessionInfo]:
        """The workspace's sessions (directory is the workspace or inside it) from every part
        that could be read; raises SourceError when the source as a whole cannot be."""
        ...

    def read(self, session: SessionInfo, watermark: dict[str, Any] | None) -> Batch:
        """All messages (watermark None) or those new or changed since the watermark."""
        ...


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if ms else ""


def within(directory: str, root: str) -> bool:
    """Whether `directory` is `root` or lies inside it (both absolute, normalised)."""
    return directory == root or directory.startswith(root.rstrip("/") + "/")
