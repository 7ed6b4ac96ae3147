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
from pathlib import Path
from typing import Any

from graph.core.environment import Environment
from graph.sessions.chunking import short_input
from graph.sessions.model import Block, Message, SessionInfo, within
from graph.sessions.sources.jsonl_files import Header, WholeFileSessions, first_user_title, ms, records

HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)


def default_folder() -> Path:
    return Environment.read().gemini_home()


class GeminiSource(WholeFileSessions):
    name = "gemini"
    root = "tmp"
    what = "Gemini CLI chat"
    whole = "Gemini CLI chats"

    def _list(self, root: Path, workspace: str) -> list[SessionInfo]:
        found: list[SessionInfo] = []
        for marker in root.glob("*/.project_root"):
            cwd = os.path.normpath(marker.read_text(encoding="utf-8").strip())
            if not os.path.isabs(cwd) or not within(cwd, workspace):
                continue
            chats = (marker.parent / "chats").glob("session-*.jsonl")
            found.extend(self._info(path, header, cwd) for path, header in self._with_headers(chats))
        return found

    def _parse_header(self, path: Path) -> Header | None:
        lines = records(path)
        if not lines or not lines[0].get("sessionId"):
            return None
        messages = conversation(lines)
        updated = max([ms(m.get("timestamp")) for m in _messages(lines)] + [ms(lines[0].get("startTime"))])
        return Header(str(lines[0]["sessionId"]), "", first_user_title(messages), len(messages), updated)

    @staticmethod
    def conversation(lines: list[dict[str, Any]]) -> list[Message]:
        return conversation(lines)


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
            stamp = ms(message.get("timestamp"))
            found.append(Message(str(message.get("id") or f"message-{order}"), role, order, stamp, blocks))  # type: ignore[arg-type]
    return found
