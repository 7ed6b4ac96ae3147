"""What a client put into a user turn that the person did not type (issue 58 item 7) is read as a tool's
result, never as the person's words: Gemini CLI's `@file` content (the record Gemini CLI 0.61.0 wrote in
tests/e2e/test_gemini_file_reference.py, its briefing shortened) and shell-mode output, Claude Code's bash
mode and local command output, Codex's `<user_shell_command>`. Capture reads only text blocks of user and
assistant turns (graph/capture/distil.py, preference.py), so none of it becomes a decision or a preference."""

from __future__ import annotations

import json
from pathlib import Path

from graph.capture.distil import distil
from graph.capture.preference import split_preferences
from graph.sessions.model import Message
from graph.sessions.sources.claude_code import ClaudeCodeSource, project_folder_name
from graph.sessions.sources.codex import CodexSource
from graph.sessions.sources.gemini import GeminiSource

FIXTURE = Path(__file__).parents[2] / "support" / "fixtures" / "gemini-0.61.0-file-reference.jsonl"
README = "We decided to publish every release tag to the mirror at git.mirror-example.net first."


def _turns(messages: list[Message]) -> list[tuple[str, str, str, str]]:
    return [(m.role, b.kind, b.text, b.tool) for m in messages for b in m.blocks]


def _gemini(tmp_path: Path, records: list[dict[str, object]]) -> list[Message]:
    folder = tmp_path / ".gemini" / "tmp" / "project"
    (folder / "chats").mkdir(parents=True)
    (folder / ".project_root").write_text(str(tmp_path / "project"))
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (folder / "chats" / "session-2026-12-07T14-13-3f3be1c8.jsonl").write_text(lines)
    source = GeminiSource(tmp_path / ".gemini")
    [session] = source.sessions(str(tmp_path / "project"))
    return source.read(session, None).messages


def test_gemini_file_reference_is_a_tool_result(tmp_path: Path) -> None:
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    messages = _gemini(tmp_path, records)
    [user, _] = messages
    typed = [b.text for b in user.blocks if b.kind == "text"]
    assert typed == [
        "Summarize @README.md for me. We decided to retry outgoing webhooks 6 times with jittered backoff capped at "
        "10 minutes. I always write docstrings in British English."
    ]
    [inlined] = [b for b in user.blocks if b.kind == "tool_result"]
    assert README in inlined.text and inlined.tool == "read_many_files"
    summary = distil(messages, workspace=str(tmp_path / "project"), title="", agent="gemini")
    assert not any("mirror-example" in d for d in summary.decisions), summary.decisions
    assert any("webhooks 6 times" in d for d in summary.decisions), summary.decisions
    said, _ = split_preferences(messages)
    assert said == ["I always write docstrings in British English."]


def test_gemini_without_display_content_splits_at_the_marker(tmp_path: Path) -> None:
    header, user, _ = (json.loads(line) for line in FIXTURE.read_text().splitlines())
    del user["displayContent"]  # as recorded when nothing was inlined, or by a CLI that did not keep it
    [message] = _gemini(tmp_path, [header, user])[:1]
    assert [b.kind for b in message.blocks] == ["text", "tool_result"]
    assert "mirror-example" not in message.blocks[0].text


def test_gemini_shell_mode_output_is_a_tool_result(tmp_path: Path) -> None:
    ran = "I ran the following shell command:\n```sh\ncat NOTES\n```\n\nThis produced the following result:\n```\n"
    ran += f"{README}\n```"
    header = {"sessionId": "s1", "startTime": "2026-12-07T14:13:53.953Z", "kind": "main"}
    messages = _gemini(tmp_path, [header, {"id": "u1", "type": "user", "content": [{"text": ran}]}])
    assert _turns(messages) == [("user", "tool_call", "cat NOTES", "shell"), ("user", "tool_result", README, "shell")]


def test_claude_code_bash_mode_and_command_output(tmp_path: Path) -> None:
    project = tmp_path / "project"
    folder = tmp_path / "claude" / "projects" / project_folder_name(str(project))
    folder.mkdir(parents=True)

    def user(uuid: str, content: object) -> dict[str, object]:
        return {"type": "user", "uuid": uuid, "cwd": str(project), "message": {"role": "user", "content": content}}

    records = [
        user("u1", "<bash-input>cat NOTES</bash-input>"),
        user("u2", f"<bash-stdout>{README}</bash-stdout><bash-stderr></bash-stderr>"),
        user("u3", [{"type": "text", "text": f"<local-command-stdout>{README}</local-command-stdout>"}]),
        user("u4", "We decided to retry outgoing webhooks 6 times."),
    ]
    (folder / "s1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    source = ClaudeCodeSource(tmp_path / "claude")
    [session] = source.sessions(str(project))
    messages = source.read(session, None).messages
    assert _turns(messages) == [
        ("user", "tool_call", "cat NOTES", "bash"),
        ("tool", "tool_result", f"<bash-stdout>{README}</bash-stdout><bash-stderr></bash-stderr>", "bash"),
        ("tool", "tool_result", f"<local-command-stdout>{README}</local-command-stdout>", "command"),
        ("user", "text", "We decided to retry outgoing webhooks 6 times.", ""),
    ]
    decisions = distil(messages, workspace=str(project), title="", agent="claude-code").decisions
    assert decisions == ["We decided to retry outgoing webhooks 6 times."]


def test_codex_user_shell_command_is_a_tool_call(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shell = f"<user_shell_command>\n<command>\ncat NOTES\n</command>\n<result>\nExit code: 0\nOutput:\n{README}\n"
    shell += "</result>\n</user_shell_command>"
    meta = {"type": "session_meta", "payload": {"id": "abc", "cwd": str(project)}}
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": shell}]}
    rollout = tmp_path / "codex" / "sessions" / "2026" / "12" / "07" / "rollout-2026-12-07T14-38-28-abc.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps(meta) + "\n" + json.dumps({"type": "response_item", "payload": said}) + "\n")
    source = CodexSource(tmp_path / "codex")
    [session] = source.sessions(str(project))
    assert _turns(source.read(session, None).messages) == [
        ("tool", "tool_call", "cat NOTES", "shell"),
        ("tool", "tool_result", f"Exit code: 0\nOutput:\n{README}", "shell"),
    ]
