"""Client hooks in process: the installed Claude Code hooks and OpenCode plugin, the briefing's
ranking and budget, compact recall, the offline distillation, and a hook with no owner."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowbaby import hook, install
from flowbaby.hook_install import is_ours
from graph.capture.distil import distil
from graph.core.contract import FlowbabyIngestRequest, MemoryStatus, validate_request
from graph.core.memories import Memory
from graph.search.briefing import build_briefing, compact_recall, score
from graph.search.token_budget import count_tokens
from graph.sessions.model import Block, Message
from tests.support.fakes import memory as fake_memory


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, workspace = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    workspace.mkdir()
    return home, workspace


def _settings(workspace: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((workspace / ".claude" / "settings.json").read_text())
    return data


def test_claude_hooks_merge_with_the_users_and_uninstall_removes_only_ours(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    (workspace / ".claude").mkdir()
    mine = {"type": "command", "command": "echo my-own-hook"}
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [mine]}]}, "permissions": {"allow": ["Bash"]}})
    )
    install.apply(install.plan("claude-code", "project", workspace, home=home))
    data = _settings(workspace)
    hooks = data["hooks"]
    assert isinstance(hooks, dict)
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    assert hooks["Stop"][0] == {"hooks": [mine]} and data["permissions"] == {"allow": ["Bash"]}
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert "UserPromptSubmit" in command and f"--workspace {workspace}" in command and is_ours(command)
    assert not is_ours(mine["command"])
    assert not any(c.changed for c in install.plan("claude-code", "project", workspace, home=home))

    install.apply(install.plan("claude-code", "project", workspace, home=home, remove=True))
    assert _settings(workspace) == {"hooks": {"Stop": [{"hooks": [mine]}]}, "permissions": {"allow": ["Bash"]}}


def test_no_hooks_installs_the_server_alone_and_takes_ours_out(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    install.apply(install.plan("claude-code", "project", workspace, home=home))
    assert (workspace / ".claude" / "settings.json").is_file()
    install.apply(install.plan("claude-code", "project", workspace, home=home, hooks=False))
    assert not (workspace / ".claude" / "settings.json").exists()
    assert "flowbaby" in json.loads((workspace / ".mcp.json").read_text())["mcpServers"]


def test_user_scope_hooks_go_to_the_claude_config_dir(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    home, workspace = dirs
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "cfg"))
    install.apply(install.plan("claude-code", "user", workspace, home=home))
    assert "SessionStart" in json.loads((home / "cfg" / "settings.json").read_text())["hooks"]


def test_opencode_plugin_is_written_and_removed(dirs: tuple[Path, Path]) -> None:
    home, workspace = dirs
    install.apply(install.plan("opencode", "project", workspace, home=home))
    plugin = workspace / ".opencode" / "plugin" / "flowbaby.js"
    text = plugin.read_text()
    assert "experimental.chat.system.transform" in text and "chat.message" in text and "session.idle" in text
    assert json.dumps(str(workspace)) in text
    install.apply(install.plan("opencode", "project", workspace, home=home, remove=True))
    assert not plugin.exists()


def _memory(
    topic: str,
    *,
    status: MemoryStatus = MemoryStatus.ACTIVE,
    days: float = 0,
    version: int = 1,
    decisions: list[str] | None = None,
    agent: str = "opencode",
    topic_id: str | None = None,
    next_steps: list[str] | None = None,
) -> Memory:
    when = (datetime.now(UTC) - timedelta(days=days)).isoformat().replace("+00:00", "Z")
    return fake_memory(
        f"{topic}-{version}",
        topic_id=topic_id or topic,
        version=version,
        status=status,
        topic=topic,
        context="ctx",
        decisions=decisions if decisions is not None else [f"decision about {topic}"],
        created=when,
        next_steps=next_steps or [],
        agent_name=agent,
        staged_at=when,
    )


def test_briefing_hides_superseded_keeps_newest_and_ranks_by_the_documented_score() -> None:
    now = datetime.now(UTC)
    old = _memory("db", version=1, decisions=["use MySQL"], topic_id="t-db")
    new = _memory("db", version=2, decisions=["use Postgres"], topic_id="t-db")
    gone = _memory("cache", status=MemoryStatus.SUPERSEDED)
    record = _memory("auth", status=MemoryStatus.DECISION_RECORD, days=30)
    stale = _memory("css", days=60)
    brief = build_briefing([old, new, gone, record, stale], agent_name="claude-code", since=None, recalls={})
    text = brief["text"]
    assert "use Postgres" in text and "use MySQL" not in text and "cache" not in text
    order = [item["topicId"] for item in brief["items"] if item["section"] == "decisions"]
    assert order == ["t-db", "auth", "css"]  # recency 1.0+0.6 > DecisionRecord 1.0+0.23 > 0.6+0.05
    assert score(stale, now, 99) > score(stale, now, 0)  # retrievals count


def test_briefing_stays_within_its_budget_and_lists_other_agents_news() -> None:
    memories = [_memory(f"topic {i}", decisions=[f"long decision {i} " + "word " * 40]) for i in range(60)]
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    brief = build_briefing(memories, agent_name="claude-code", since=since, recalls={}, max_tokens=300)
    assert 0 < brief["tokens"] <= 300 and count_tokens(brief["text"]) == brief["tokens"]
    assert "(new, by opencode)" in brief["text"]
    mine = build_briefing([_memory("x", agent="claude-code")], agent_name="claude-code", since=since, recalls={})
    assert "new, by" not in mine["text"]


def test_compact_recall_skips_what_was_injected_and_keeps_the_budget() -> None:
    entries: list[dict[str, Any]] = [
        {"topicId": f"t{i}", "topic": f"topic {i}", "decisions": ["x " * 60], "updatedAt": "2026-01-01T00:00:00Z"}
        for i in range(5)
    ]
    reply = compact_recall(entries, {"t0"}, max_tokens=200, limit=3)
    assert "t0" not in reply["topicIds"] and reply["tokens"] <= 200 and reply["topicIds"]
    assert compact_recall(entries, {str(e["topicId"]) for e in entries})["text"] == ""


def _turn(role: str, text: str = "", tool: str = "", arg: str = "") -> Message:
    blocks = [Block("text", text)] if text else []
    if tool:
        blocks.append(Block("tool_call", arg, tool))
    return Message(str(id(blocks)), role, 0, 0, blocks)  # type: ignore[arg-type]


def test_distil_keeps_decisions_and_edited_files_drops_private_and_secrets(tmp_path: Path) -> None:
    token = "ghp_" + "A1" * 18
    turns = [
        _turn("user", "Let's use Postgres for the ledger instead of SQLite. Is this fast enough?"),
        _turn("user", f"<private>my salary is 90k</private> The deploy token is {token}."),
        _turn("assistant", "Done.", "Write", str(tmp_path / "src" / "ledger.py")),
        _turn("assistant", "", "Edit", "docs/notes.md"),
        _turn("assistant", "Next step: we need to add a migration for the ledger table."),
    ]
    got = distil(turns, workspace=str(tmp_path), agent="claude-code")
    assert got.decisions == ["Let's use Postgres for the ledger instead of SQLite."]
    assert got.edited == ["src/ledger.py", "docs/notes.md"]
    assert got.next_steps and "migration" in got.next_steps[0]
    everything = json.dumps(got.__dict__)
    assert "salary" not in everything and token not in everything and got.redactions == 1
    kept = distil([_turn("user", f"We decided to rotate {token} weekly.")], workspace="/")
    assert kept.decisions == ["We decided to rotate [redacted] weekly."]
    odd = distil(
        [_turn("user", "We decided to store the dump\x00 header as \ud800 hex.", "Edit", "a\x00.py")], workspace="/"
    )
    assert odd.decisions == ["We decided to store the dump\ufffd header as \ufffd hex."]
    validate_request(FlowbabyIngestRequest, {"topic": odd.topic, "context": odd.context, "decisions": odd.decisions})


def test_a_hook_with_no_owner_answers_at_once_with_nothing(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With FLOWBABY_HOOK_START_SEC=0 (the hooks start no service; tests/integration starts one)."""
    _, workspace = dirs
    monkeypatch.setenv("FLOWBABY_HOOK_START_SEC", "0")
    (workspace / ".flowbaby").mkdir()
    for event, payload in (
        ("SessionStart", {"session_id": "s", "source": "startup"}),
        ("UserPromptSubmit", {"session_id": "s", "prompt": "what did we decide about the ledger?"}),
        ("NotAnEvent", {}),
    ):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
        started = time.monotonic()
        assert hook.main([event, "--workspace", str(workspace)]) == 0
        assert time.monotonic() - started < 1.0
        assert capsys.readouterr().out == ""
    log = (workspace / ".flowbaby" / "logs" / "hooks.log").read_text()
    assert "nothing injected (no owner endpoint" in log and "unknown hook event 'NotAnEvent'" in log


def test_a_hook_on_a_broken_payload_or_outside_a_workspace_is_silent(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, workspace = dirs
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"{not json")))
    assert hook.main(["UserPromptSubmit", "--workspace", str(workspace)]) == 0
    assert capsys.readouterr().out == "" and not (workspace / ".flowbaby").exists()


def test_the_hook_starts_the_same_service_command_as_flowbaby_start(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One service command line: the hook (stdlib only) builds what graph.owner.service_record runs."""
    from graph.api import WorkspacePaths
    from graph.owner import service_record

    _, workspace = dirs
    (workspace / ".flowbaby").mkdir()
    started: list[list[str]] = []
    monkeypatch.setattr(hook, "_detached", lambda root, args, log: started.append(args))
    monkeypatch.setenv("FLOWBABY_IDLE_EXIT_SEC", "42")
    hook._start_service(str(workspace), "no owner")
    expected = service_record.command(WorkspacePaths(workspace).root, service_record.idle_exit_sec())
    assert started and [sys.executable, "-P", *started[0]] == expected
    lock = workspace / ".flowbaby" / "service.lock"
    lock.write_text(str(os.getpid()))  # a live process, but not a `flowbaby serve`: not a service starting
    os.chmod(lock, 0o600)
    hook._start_service(str(workspace), "no owner")
    assert len(started) == 2


def test_gemini_gets_its_json_and_its_prompt_without_the_hook_context() -> None:
    payload = {"hook_event_name": "BeforeAgent"}
    assert hook.output("recalled", "claude-code", payload) == "recalled"  # Claude Code and Codex: plain stdout
    assert json.loads(hook.output("recalled", "gemini", payload)) == {
        "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "recalled"}
    }
    prompt = "<hook_context>Flowbaby workspace memory ...</hook_context>\n\nwhen does staging rotate?"
    assert hook._without_hook_context(prompt).strip() == "when does staging rotate?"
