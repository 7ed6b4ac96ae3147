"""Turns become chunks with Vapor's ids, `turn:<session>:<message>:<n>`.

A message's blocks (text, tool calls, tool results and, when enabled, reasoning) are rendered
as short lines, `<private>` spans dropped and secrets redacted, and packed into chunks of at most
CHUNK_CHARS: about 120 word pieces of English, the length all-MiniLM-L6-v2 was trained at (128),
so each chunk is read whole, one topic per vector, and attention (quadratic in length) stays cheap.
"""

from __future__ import annotations

import json
from typing import Any

from graph.core.redaction import MARK, clean
from graph.core.session_chunk import TurnChunk
from graph.sessions.model import Block, Message

CHUNK_CHARS = 480
"""Longest chunk; about 120 word pieces of English (dense code or logs stay under MiniLM's 256)."""
TOOL_INPUT_CHARS = 300
"""A tool call is indexed as its name and this much of its input."""
TOOL_RESULT_CHARS = 2000
"""A tool result is indexed up to this many characters; the rest is dropped with a marker."""
OWN_TOOLS = frozenset(
    {
        "flowbaby_storeMemory",
        "flowbaby_retrieveMemory",
        "flowbaby_backgroundStatus",
        "flowbaby_indexStatus",
        "flowbaby_searchSessions",
    }
)
"""flowbaby's own tools (api/mcp_tools.py, the VS Code LM tools). A call of one is indexed as a short
marker and its result not at all: their payloads are memories, which session search would only echo."""
OWN_TOPIC_CHARS = 120
"""The marker keeps this much of the call's topic or query."""


def own_tool(name: str) -> str | None:
    """The flowbaby tool a client's tool name stands for: `mcp__flowbaby__flowbaby_storeMemory`
    (Claude Code), `flowbaby_flowbaby_storeMemory` (OpenCode), `flowbaby_storeMemory`; else None."""
    for tool in OWN_TOOLS:
        if name == tool or name.endswith("_" + tool):
            return tool
    return None


def short_input(value: Any, tool: str = "") -> str:
    """A tool's input in one line: the command, path or query when there is one, else compact JSON.
    For flowbaby's own tools, only the topic or query (never the summary it stores)."""
    if own_tool(tool):
        topic = value.get("topic") or value.get("query") if isinstance(value, dict) else None
        return topic[:OWN_TOPIC_CHARS] if isinstance(topic, str) else ""
    if isinstance(value, dict):
        for key in ("command", "cmd", "filePath", "file_path", "path", "pattern", "query", "url", "description"):
            if isinstance(value.get(key), str):
                return str(value[key])[:TOOL_INPUT_CHARS]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text[:TOOL_INPUT_CHARS]


def render(block: Block) -> str:
    own = own_tool(block.tool) if block.kind in ("tool_call", "tool_result") else None
    if own:  # a marker of the call; the result (stored or retrieved memories) is not indexed
        return "" if block.kind == "tool_result" else f"[flowbaby {own}] {block.text[:OWN_TOPIC_CHARS]}".strip()
    if block.kind == "tool_call":
        return f"[tool {block.tool}] {block.text}".strip()
    if block.kind == "tool_result":
        text = block.text
        if len(text) > TOOL_RESULT_CHARS:
            text = text[:TOOL_RESULT_CHARS] + f" … [{len(block.text) - TOOL_RESULT_CHARS} more characters not indexed]"
        return f"[result {block.tool}] {text}".strip() if block.tool else text
    if block.kind == "reasoning":
        return f"[reasoning] {block.text}"
    return block.text


def _pieces(text: str) -> list[str]:
    """Cut a long text at line, then word boundaries into pieces of at most CHUNK_CHARS."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        while len(line) > CHUNK_CHARS:
            cut = line.rfind(" ", 0, CHUNK_CHARS)
            cut = cut if cut > CHUNK_CHARS // 2 else CHUNK_CHARS
            out.append(line[:cut])
            line = line[cut:].lstrip()
        if line.strip():
            out.append(line)
    return out


def message_chunks(session_id: str, message: Message, reasoning: bool) -> list[TurnChunk]:
    texts: list[str] = []
    current = ""
    for block in message.blocks:
        if block.kind == "reasoning" and not reasoning:
            continue
        text, _ = clean(render(block))
        for piece in _pieces(text):
            if current and len(current) + 1 + len(piece) > CHUNK_CHARS:
                texts.append(current)
                current = ""
            current = f"{current}\n{piece}" if current else piece
    if current:
        texts.append(current)
    return [
        TurnChunk(
            embedding_id=f"turn:{session_id}:{message.message_id}:{n}",
            message_id=message.message_id,
            chunk_index=n,
            order=message.order,
            role=message.role,
            created_ms=message.created_ms,
            text=text,
            redacted=MARK in text,
        )
        for n, text in enumerate(texts)
    ]
