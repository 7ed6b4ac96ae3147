"""Gemini CLI's chat files, read-only: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`,
the project's folder named by `~/.gemini/tmp/<project>/.project_root`.

The first record is the session's header (`sessionId`, `startTime`); then messages (`id`, `type`
user/gemini/info/error, `content`, a gemini message's `toolCalls`) and `{"$set": ...}` updates, where
`$set.messages` replaces the list. Only user and gemini messages are conversation: the harness's
`<session_context>` block and the `<hook_context>` blocks hooks add (flowbaby's briefing and recall
among them) are dropped. A session is read whole each time.

A user message's `content` is what the CLI sent, not what the person typed: an `@file` reference inlines
the file (`--- Content from referenced files ---` ... `--- End of content ---`) and a custom command its
expanded prompt, while `displayContent` keeps the typed text; shell mode (`!cmd`) records the command and
its output as a user message ("I ran the following shell command: ..."). Only the typed text is the
person's words: the rest is a tool's result here, so capture, preferences and the briefing's decisions
never take a repository file's text (or a command's output) as what the person said.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from graph.core.bounded_read import read_prefix
from graph.core.environment import Environment
from graph.sessions.chunking import short_input
from graph.sessions.model import Block, Message, SessionInfo, within
from graph.sessions.sources.jsonl_files import Header, WholeFileSessions, first_user_title, ms, records

HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)
REFERENCED = "--- Content from referenced files ---"
"""Where Gemini CLI's `@file` processing starts the inlined files (packages/core/src/utils/constants.ts)."""
SHELL_MODE = re.compile(
    r"\AI ran the following shell command:\n```sh\n(?P<command>.*?)\n```\n\n"
    r"This produced the following result:\n```\n(?P<output>.*)\n```\Z",
    re.DOTALL,
)
"""A shell-mode command the CLI put in the history as a user message (useExecutionLifecycle.ts)."""


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
            named = read_prefix(marker, root, 4096)  # a folder's path, not a file to read whole
            cwd = os.path.normpath((named or b"").decode("utf-8", errors="replace").strip())
            if not os.path.isabs(cwd) or not within(cwd, workspace):
                continue
            chats = (marker.parent / "chats").glob("session-*.jsonl")
            found.extend(self._info(path, header, cwd) for path, header in self._with_headers(chats))
        return found

    def _parse_header(self, path: Path) -> Header | None:
        lines = records(path, self.folder)
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


def _parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text")]
    return []


def _text(content: Any) -> str:
    return "\n".join(_parts(content))


def _user_blocks(message: dict[str, Any]) -> list[Block]:
    """A user message as the person's typed text and, apart, what the CLI inlined into it (a tool's result)."""
    parts = _parts(message.get("content"))
    if message.get("displayContent"):
        shown = _parts(message.get("displayContent"))
        typed, inlined = "\n".join(shown), "".join(p for p in parts if p not in shown)
    else:  # recorded without it (the typed text was all that was sent, or an older CLI): split at the marker
        typed, _, rest = "\n".join(parts).partition(REFERENCED)
        inlined = REFERENCED + rest if rest else ""
    text = HOOK_CONTEXT.sub("", typed).strip()
    shell = SHELL_MODE.match(text)
    if shell:
        return [Block("tool_call", shell["command"][:300], "shell"), Block("tool_result", shell["output"], "shell")]
    blocks = [Block("text", text)] if text else []
    inlined = HOOK_CONTEXT.sub("", inlined).strip()
    return [*blocks, Block("tool_result", inlined, "read_many_files")] if inlined else blocks


def conversation(lines: list[dict[str, Any]]) -> list[Message]:
    """The session's user and gemini turns, with each gemini turn's tool calls and their results."""
    found: list[Message] = []
    for order, message in enumerate(_messages(lines)):
        role = {"user": "user", "gemini": "assistant"}.get(str(message.get("type")))
        if role is None:
            continue
        if role == "user":
            blocks = _user_blocks(message)
            if blocks and blocks[0].text.startswith("<session_context>"):
                continue
        else:
            text = HOOK_CONTEXT.sub("", _text(message.get("content"))).strip()
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
