"""Codex CLI's rollout files, read-only: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`
(CODEX_HOME defaults to ~/.codex). The first record, `session_meta`, names the session and its cwd.

Only `response_item` records are conversation: user and assistant messages, function and custom
tool calls with their outputs, reasoning summaries. Developer messages (system text, and the
context hooks inject, flowbaby's briefing among it) and the harness's own user blocks
(`<environment_context>`, AGENTS.md instructions) are skipped. A session is read whole each time
(its file is small next to the encoder's work); a last line without its newline is left for later.
A shell command the person ran (`!cmd`) is recorded as a user message (`<user_shell_command>` with its
`<command>` and `<result>`): it is read as a tool's call and result, so its output is never taken for the
person's words.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from graph.core.environment import Environment
from graph.sessions.chunking import short_input
from graph.sessions.model import Block, Message, Role, SessionInfo, within
from graph.sessions.sources.jsonl_files import Header, WholeFileSessions, first_user_title, ms, records

HARNESS_PREFIXES = ("<environment_context", "<user_instructions", "# AGENTS.md instructions", "<skills_")
USER_SHELL = re.compile(
    r"\A<user_shell_command>\s*(?:<command>\n?(?P<command>.*?)\n?</command>)?\s*"
    r"(?:<result>\n?(?P<result>.*?)\n?</result>)?\s*(?:</user_shell_command>)?\Z",
    re.DOTALL,
)
"""Codex's record of a command the person ran in its shell mode (core/src/user_shell_command.rs)."""


def default_folder() -> Path:
    return Environment.read().codex_home()


class CodexSource(WholeFileSessions):
    name = "codex"
    root = "sessions"
    what = "Codex rollout"
    whole = "Codex sessions"

    def _list(self, root: Path, workspace: str) -> list[SessionInfo]:
        return [
            self._info(path, header, header.cwd)
            for path, header in self._with_headers(root.glob("*/*/*/rollout-*.jsonl"))
            if within(header.cwd, workspace)
        ]

    def _parse_header(self, path: Path) -> Header | None:
        lines = records(path, self.folder)
        meta = next((r.get("payload") for r in lines if r.get("type") == "session_meta"), None)
        if not isinstance(meta, dict) or not meta.get("cwd") or not meta.get("id"):
            return None
        messages = conversation(lines)
        updated = max((ms(r.get("timestamp")) for r in lines), default=0)
        return Header(
            str(meta["id"]), os.path.normpath(str(meta["cwd"])), first_user_title(messages), len(messages), updated
        )

    @staticmethod
    def conversation(lines: list[dict[str, Any]]) -> list[Message]:
        return conversation(lines)


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
        kind, stamp = item.get("type"), ms(record.get("timestamp"))
        role: Role
        if kind == "message" and item.get("role") in ("user", "assistant"):
            text = _text(item.get("content")).strip()
            if not text or (item["role"] == "user" and text.startswith(HARNESS_PREFIXES)):
                continue
            shell = USER_SHELL.match(text) if item["role"] == "user" else None
            if shell:
                key = str(item.get("id") or f"line-{order}")
                ran = [Block("tool_call", (shell["command"] or "")[:300], "shell")]
                ran += [Block("tool_result", shell["result"], "shell")] if shell["result"] else []
                messages.append(Message(key, "tool", order, stamp, ran))
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
