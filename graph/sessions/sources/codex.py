"""Codex CLI's rollout files, read-only: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`
(CODEX_HOME defaults to ~/.codex). The first record, `session_meta`, names the session and its cwd.

Only `response_item` records are conversation: user and assistant messages, function and custom
tool calls with their outputs, reasoning summaries. Developer messages (system text, and the
context hooks inject, flowbaby's briefing among it) and the harness's own user blocks
(`<environment_context>`, AGENTS.md instructions) are skipped. A session is read whole each time
(its file is small next to the encoder's work); a last line without its newline is left for later.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.core.environment import Environment
from graph.core.redaction import clean
from graph.sessions.chunking import short_input
from graph.sessions.model import Batch, Block, Message, Role, SessionInfo, SourceError, within
from graph.sessions.sources.claude_code import _ms

HARNESS_PREFIXES = ("<environment_context", "<user_instructions", "# AGENTS.md instructions", "<skills_")


def default_folder() -> Path:
    return Environment.read().codex_home()


def records(path: Path) -> list[dict[str, Any]]:
    """The file's whole lines as JSON objects (a line being written, or not JSON, is skipped)."""
    found = []
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                found.append(record)
    return found


@dataclass
class _Header:
    stamp: tuple[int, int]
    session_id: str
    cwd: str
    title: str
    count: int
    updated_ms: int


class CodexSource:
    name = "codex"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[str] = []
        self._headers: dict[Path, _Header] = {}

    def sessions(self, workspace: str) -> list[SessionInfo]:
        root = self.folder / "sessions"
        if not root.is_dir():
            return []
        self.problems = []
        found = []
        try:
            for path in root.glob("*/*/*/rollout-*.jsonl"):
                try:
                    header = self._header(path)
                except OSError as exc:
                    self.problems.append(f"Codex rollout {path} cannot be read: {exc}")
                    continue
                if header is None or not within(header.cwd, workspace):
                    continue
                info = path.stat()
                found.append(
                    SessionInfo(
                        source=self.name,
                        session_id=header.session_id,
                        title=header.title,
                        directory=header.cwd,
                        updated_ms=max(header.updated_ms, int(info.st_mtime * 1000)),
                        message_count=header.count,
                        fingerprint=f"{path}|{info.st_size}:{info.st_mtime_ns}",
                    )
                )
        except OSError as exc:
            raise SourceError(f"Codex sessions under {root} cannot be read: {exc}") from None
        return found

    def _header(self, path: Path) -> _Header | None:
        info = path.stat()
        stamp = (info.st_size, info.st_mtime_ns)
        cached = self._headers.get(path)
        if cached is not None and cached.stamp == stamp:
            return cached
        lines = records(path)
        meta = next((r.get("payload") for r in lines if r.get("type") == "session_meta"), None)
        if not isinstance(meta, dict) or not meta.get("cwd") or not meta.get("id"):
            return None
        messages = conversation(lines)
        first = next((b.text for m in messages if m.role == "user" for b in m.blocks if b.kind == "text"), "")
        updated = max((_ms(r.get("timestamp")) for r in lines), default=0)
        header = _Header(
            stamp, str(meta["id"]), os.path.normpath(str(meta["cwd"])), clean(first)[0][:80], len(messages), updated
        )
        self._headers[path] = header
        return header

    def read(self, session: SessionInfo, watermark: dict[str, Any] | None) -> Batch:
        path = Path(session.fingerprint.split("|", 1)[0])
        try:
            messages = conversation(records(path))
        except OSError as exc:
            raise SourceError(f"Codex rollout {path} cannot be read: {exc}") from None
        return Batch(messages, {"fingerprint": session.fingerprint}, True)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text") or "") for c in content if isinstance(c, dict) and c.get("text"))
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _input(arguments: Any) -> Any:
    try:
        return json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return arguments


def conversation(lines: list[dict[str, Any]]) -> list[Message]:
    """The session's turns, in file order."""
    messages: list[Message] = []
    tools: dict[str, str] = {}
    for order, record in enumerate(lines):
        item = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(item, dict):
            continue
        kind, stamp = item.get("type"), _ms(record.get("timestamp"))
        role: Role
        if kind == "message" and item.get("role") in ("user", "assistant"):
            text = _text(item.get("content")).strip()
            if not text or (item["role"] == "user" and text.startswith(HARNESS_PREFIXES)):
                continue
            role, block = item["role"], Block("text", text)
        elif kind in ("function_call", "custom_tool_call"):
            name = str(item.get("name") or "tool")
            tools[str(item.get("call_id"))] = name
            arguments = _input(item.get("arguments", item.get("input")))
            role, block = "assistant", Block("tool_call", short_input(arguments, name), name)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            role = "tool"
            block = Block("tool_result", _text(item.get("output")), tools.get(str(item.get("call_id")), ""))
        elif kind == "reasoning":
            text = "\n".join(str(s.get("text") or "") for s in item.get("summary") or [] if isinstance(s, dict))
            if not text.strip():
                continue
            role, block = "assistant", Block("reasoning", text)
        else:
            continue
        key = f"out-{item.get('call_id')}" if role == "tool" else str(item.get("id") or item.get("call_id") or "")
        messages.append(Message(key or f"line-{order}", role, order, stamp, [block]))
    return messages
