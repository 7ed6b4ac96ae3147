"""Gemini CLI's chat files, read-only: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`,
the project's folder named by `~/.gemini/tmp/<project>/.project_root`.

The first record is the session's header (`sessionId`, `startTime`); then messages (`id`, `type`
user/gemini/info/error, `content`, a gemini message's `toolCalls`) and `{"$set": ...}` updates, where
`$set.messages` replaces the list. Only user and gemini messages are conversation: the harness's
`<session_context>` block and the `<hook_context>` blocks hooks add (flowbaby's briefing and recall
among them) are dropped. A session is read whole each time.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graph.core.environment import Environment
from graph.core.redaction import clean
from graph.sessions.chunking import short_input
from graph.sessions.model import Batch, Block, Message, SessionInfo, SourceError, within
from graph.sessions.sources.claude_code import _ms
from graph.sessions.sources.codex import records

HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)


def default_folder() -> Path:
    return Environment.read().gemini_home()


@dataclass
class _Header:
    stamp: tuple[int, int]
    session_id: str
    title: str
    count: int
    updated_ms: int


class GeminiSource:
    name = "gemini"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.problems: list[str] = []
        self._headers: dict[Path, _Header] = {}

    def sessions(self, workspace: str) -> list[SessionInfo]:
        root = self.folder / "tmp"
        if not root.is_dir():
            return []
        self.problems = []
        found = []
        try:
            for marker in root.glob("*/.project_root"):
                cwd = os.path.normpath(marker.read_text(encoding="utf-8").strip())
                if not os.path.isabs(cwd) or not within(cwd, workspace):
                    continue
                for path in (marker.parent / "chats").glob("session-*.jsonl"):
                    try:
                        header = self._header(path)
                    except OSError as exc:
                        self.problems.append(f"Gemini CLI chat {path} cannot be read: {exc}")
                        continue
                    if header is None:
                        continue
                    info = path.stat()
                    found.append(
                        SessionInfo(
                            source=self.name,
                            session_id=header.session_id,
                            title=header.title,
                            directory=cwd,
                            updated_ms=max(header.updated_ms, int(info.st_mtime * 1000)),
                            message_count=header.count,
                            fingerprint=f"{path}|{info.st_size}:{info.st_mtime_ns}",
                        )
                    )
        except OSError as exc:
            raise SourceError(f"Gemini CLI chats under {root} cannot be read: {exc}") from None
        return found

    def _header(self, path: Path) -> _Header | None:
        info = path.stat()
        stamp = (info.st_size, info.st_mtime_ns)
        cached = self._headers.get(path)
        if cached is not None and cached.stamp == stamp:
            return cached
        lines = records(path)
        if not lines or not lines[0].get("sessionId"):
            return None
        messages = conversation(lines)
        first = next((b.text for m in messages if m.role == "user" for b in m.blocks if b.kind == "text"), "")
        updated = max([_ms(m.get("timestamp")) for m in _messages(lines)] + [_ms(lines[0].get("startTime"))])
        header = _Header(stamp, str(lines[0]["sessionId"]), clean(first)[0][:80], len(messages), updated)
        self._headers[path] = header
        return header

    def read(self, session: SessionInfo, watermark: dict[str, Any] | None) -> Batch:
        path = Path(session.fingerprint.split("|", 1)[0])
        try:
            messages = conversation(records(path))
        except OSError as exc:
            raise SourceError(f"Gemini CLI chat {path} cannot be read: {exc}") from None
        return Batch(messages, {"fingerprint": session.fingerprint}, True)


def _messages(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat's messages after every record and `$set` is applied, in order (a message written again
    under the same id replaces the earlier one)."""
    by_id: dict[str, dict[str, Any]] = {}
    for record in lines[1:]:
        update = record.get("$set")
        if isinstance(update, dict) and isinstance(update.get("messages"), list):
            by_id = {str(m.get("id")): m for m in update["messages"] if isinstance(m, dict)}
        elif record.get("id") and record.get("type"):
            by_id[str(record["id"])] = record
    return list(by_id.values())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("text"))
    return ""


def conversation(lines: list[dict[str, Any]]) -> list[Message]:
    """The session's user and gemini turns, with each gemini turn's tool calls and their results."""
    found: list[Message] = []
    for order, message in enumerate(_messages(lines)):
        role = {"user": "user", "gemini": "assistant"}.get(str(message.get("type")))
        if role is None:
            continue
        text = HOOK_CONTEXT.sub("", _text(message.get("content"))).strip()
        if role == "user" and text.startswith("<session_context>"):
            continue
        blocks = [Block("text", text)] if text else []
        for call in message.get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            name = str(call.get("name") or "tool")
            blocks.append(Block("tool_call", short_input(call.get("args"), name), name))
            result = call.get("resultDisplay") or call.get("result")
            if result:
                blocks.append(Block("tool_result", result if isinstance(result, str) else json.dumps(result), name))
        if blocks:
            stamp = _ms(message.get("timestamp"))
            found.append(Message(str(message.get("id") or f"message-{order}"), role, order, stamp, blocks))  # type: ignore[arg-type]
    return found
