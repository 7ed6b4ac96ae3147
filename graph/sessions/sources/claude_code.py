"""Claude Code transcripts, read-only: `<config>/projects/<cwd with every non-alphanumeric as
'-'>/<sessionId>.jsonl`, plus `<sessionId>/subagents/*.jsonl` as part of the same session.

Only `user` and `assistant` records are conversation; the rest (api-request-blob with its
system prompts, attachments, queue operations...) is skipped. One assistant message may span
several records: they are merged by `message.id`. A last line without its newline is still
being written and is read next time.

Bash mode (`!cmd`) and local slash commands record their output as user records
(`<bash-stdout>`/`<bash-stderr>`, `<local-command-stdout>`/`<local-command-stderr>`) and the command as
`<bash-input>`: these are a tool's call and result, not the person's words, so capture never takes a
command's output for what the person said. An `@file`'s content comes as an `attachment` record (skipped).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from graph.core.environment import Environment
from graph.core.redaction import clean
from graph.sessions.chunking import short_input
from graph.sessions.model import Batch, Block, Message, SessionInfo, SourceError, within
from graph.sessions.sources.jsonl_files import Header, JsonlSessions, ms, whole_lines

CLIENT_OUTPUT = ("<bash-stdout", "<bash-stderr", "<local-command-stdout", "<local-command-stderr")
"""How Claude Code marks a command's output it recorded as a user record."""
BASH_INPUT = re.compile(r"\A<bash-input>(.*)</bash-input>\Z", re.DOTALL)
HEADER_LINES = 200
"""Records read to find a transcript's cwd and title without parsing it whole."""


def default_folder() -> Path:
    return Environment.read().claude_home()


def project_folder_name(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class ClaudeCodeSource(JsonlSessions):
    name = "claude-code"
    root = "projects"
    what = "Claude Code transcript"
    whole = "Claude Code transcripts"

    def _files(self, main: Path) -> list[Path]:
        subagents = main.with_suffix("") / "subagents"
        return [main, *sorted(subagents.glob("*.jsonl"))] if subagents.is_dir() else [main]

    def _list(self, root: Path, workspace: str) -> list[SessionInfo]:
        prefix = project_folder_name(workspace)
        folders = [p for p in root.iterdir() if p.name == prefix or p.name.startswith(prefix + "-")]
        return [
            self._info(main, header, header.cwd, self._files(main))
            for folder in folders
            for main, header in self._with_headers(folder.glob("*.jsonl"))
            if within(header.cwd, workspace)
        ]

    def _parse_header(self, path: Path) -> Header | None:
        """cwd, title and message count of a transcript."""
        cwd, title, last = "", "", 0
        keys: set[str] = set()
        for number, (_, line) in enumerate(whole_lines(path, self.folder)):
            record = _record(line) if line is not None else None
            if record is None:
                continue
            cwd = cwd or str(record.get("cwd") or "")
            if record.get("type") in ("summary", "custom-title", "ai-title") and not title:
                title = str(record.get("summary") or record.get("customTitle") or record.get("title") or "")
            if record.get("type") in ("user", "assistant"):
                keys.add(_key(record))
                last = max(last, ms(record.get("timestamp")))
                if not title and record.get("type") == "user" and number < HEADER_LINES:
                    first = next((b.text for b in _blocks(record, {}) if b.kind == "text"), "")
                    title = clean(first)[0][:80]  # before the cut, which could leave a secret unmatched
        if not cwd:
            return None
        return Header(path.stem, os.path.normpath(cwd), title.strip(), len(keys), last)

    def read(self, session: SessionInfo, watermark: dict[str, Any] | None) -> Batch:
        main = Path(session.fingerprint.split("|", 1)[0])
        offsets: dict[str, int] = dict((watermark or {}).get("offsets", {}))
        messages: dict[str, Message] = {}
        tools: dict[str, str] = {}
        full = not watermark
        try:
            for path in self._files(main):
                start = offsets.get(str(path), 0)
                if start > path.stat().st_size:  # rewritten: read the session again from the top
                    return self.read(session, None)
                offsets[str(path)] = self._read_file(path, start, messages, tools)
        except OSError as exc:
            raise SourceError(f"Claude Code transcript {main} cannot be read: {exc}") from None
        return Batch(sorted(messages.values(), key=lambda m: (m.order, m.message_id)), {"offsets": offsets}, full)

    def _read_file(self, path: Path, start: int, messages: dict[str, Message], tools: dict[str, str]) -> int:
        """Merge the file's records from `start` into `messages`; returns the offset to resume at:
        the first record of the last message (it may still grow), or the end of the last whole line."""
        resume = start
        last_start: dict[str, int] = {}
        last_key: str | None = None
        after = start
        for offset, line in whole_lines(path, self.folder, start):  # a line cut mid-write is read next time
            at, after = after, offset
            resume = offset
            record = _record(line) if line is not None else None
            if record is None or record.get("type") not in ("user", "assistant"):
                continue
            key = _key(record)
            last_start.setdefault(key, at)
            blocks = _blocks(record, tools)
            message = messages.get(key)
            if message is None:
                role = record["type"]
                if role == "user" and blocks and all(b.kind == "tool_result" for b in blocks):
                    role = "tool"
                stamp = ms(record.get("timestamp"))
                message = messages[key] = Message(key, role, stamp, stamp)
            for block in blocks:
                if block not in message.blocks:  # a record repeated with the same block
                    message.blocks.append(block)
            last_key = key
        if last_key is not None and messages[last_key].role == "assistant":
            resume = last_start[last_key]
        return resume


def _record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _key(record: dict[str, Any]) -> str:
    message = record.get("message") or {}
    if record.get("type") == "assistant" and isinstance(message, dict) and message.get("id"):
        return str(message["id"])
    return str(record.get("uuid") or "")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v.get("text", "") if isinstance(v, dict) else v) for v in value)
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _blocks(record: dict[str, Any], tools: dict[str, str]) -> list[Block]:
    message = record.get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [_typed(content)] if not record.get("isMeta") else []
    blocks: list[Block] = []
    for item in content or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text" and not record.get("isMeta"):
            blocks.append(_typed(_text(item.get("text"))))
        elif kind == "thinking":
            blocks.append(Block("reasoning", _text(item.get("thinking"))))
        elif kind == "tool_use":
            name = str(item.get("name") or "tool")
            tools[str(item.get("id"))] = name
            blocks.append(Block("tool_call", short_input(item.get("input"), name), name))
        elif kind == "tool_result":
            blocks.append(Block("tool_result", _text(item.get("content")), tools.get(str(item.get("tool_use_id")), "")))
    return blocks


def _typed(text: str) -> Block:
    """A user or assistant text, or the command and output the client recorded as one (see the module)."""
    stripped = text.strip()
    if stripped.startswith(CLIENT_OUTPUT):
        return Block("tool_result", stripped, "bash" if stripped.startswith("<bash") else "command")
    command = BASH_INPUT.match(stripped)
    return Block("tool_call", command[1][:300], "bash") if command else Block("text", text)
