"""Codex CLI rollouts and Gemini CLI chats read as conversation: the records each 0.169.0 / 0.61.0
wrote in the real-client tests (trimmed), the harness's and the hooks' injected text left out."""

from __future__ import annotations

import json
from pathlib import Path

from graph.sessions.sources.codex import CodexSource
from graph.sessions.sources.gemini import GeminiSource


def _lines(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"cut": ')  # a last line being written


def _item(payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": "2026-12-04T14:38:28.639Z", "type": "response_item", "payload": payload}


def test_codex_rollout(tmp_path: Path) -> None:
    project = tmp_path / "project"
    rollout = tmp_path / "codex" / "sessions" / "2026" / "12" / "04" / "rollout-2026-12-04T14-38-28-abc.jsonl"
    _lines(
        rollout,
        [
            {"type": "session_meta", "payload": {"id": "abc", "cwd": str(project), "timestamp": "2026-12-04T14:38Z"}},
            _item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "BRIEFING"}]}),
            _item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "<environment_context>x"}],
                }
            ),
            _item(
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Retry webhooks 6 times"}],
                }
            ),
            _item({"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls"}', "call_id": "c1"}),
            _item({"type": "function_call_output", "call_id": "c1", "output": "README.md"}),
            _item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
        ],
    )
    source = CodexSource(tmp_path / "codex")
    assert source.sessions(str(tmp_path / "elsewhere")) == []
    [session] = source.sessions(str(project))
    assert (session.session_id, session.title, session.message_count) == ("abc", "Retry webhooks 6 times", 4)
    turns = [(m.role, b.kind, b.text, b.tool) for m in source.read(session, None).messages for b in m.blocks]
    assert turns == [
        ("user", "text", "Retry webhooks 6 times", ""),
        ("assistant", "tool_call", "ls", "exec_command"),
        ("tool", "tool_result", "README.md", "exec_command"),
        ("assistant", "text", "Done.", ""),
    ]


def test_gemini_chat(tmp_path: Path) -> None:
    project = tmp_path / "project"
    folder = tmp_path / ".gemini" / "tmp" / "project"
    folder.mkdir(parents=True)
    (folder / ".project_root").write_text(str(project))
    context = {"id": "m0", "type": "user", "content": [{"text": "<session_context>\nThis is the Gemini CLI."}]}
    _lines(
        folder / "chats" / "session-2026-12-04T14-42-b0759c42.jsonl",
        [
            {"sessionId": "b0759c42", "projectHash": "d7", "startTime": "2026-12-04T14:42:07.143Z", "kind": "main"},
            {"$set": {"messages": [context]}},
            {
                "id": "m1",
                "timestamp": "2026-12-04T14:42:07.310Z",
                "type": "user",
                "content": [{"text": "<hook_context>BRIEFING</hook_context>\n\nRetry webhooks 6 times"}],
            },
            {"$set": {"lastUpdated": "2026-12-04T14:42:07.334Z"}},
            {
                "id": "m2",
                "type": "gemini",
                "content": "Stored.",
                "toolCalls": [{"name": "flowbaby_storeMemory", "args": {"topic": "Webhooks"}, "result": "ok"}],
            },
            {"id": "m3", "type": "info", "content": "not conversation"},
        ],
    )
    source = GeminiSource(tmp_path / ".gemini")
    [session] = source.sessions(str(project))
    assert (session.session_id, session.title, session.directory) == (
        "b0759c42",
        "Retry webhooks 6 times",
        str(project),
    )
    turns = [(m.role, b.kind, b.text) for m in source.read(session, None).messages for b in m.blocks]
    assert turns == [
        ("user", "text", "Retry webhooks 6 times"),
        ("assistant", "text", "Stored."),
        ("assistant", "tool_call", "Webhooks"),
        ("assistant", "tool_result", "ok"),
    ]
