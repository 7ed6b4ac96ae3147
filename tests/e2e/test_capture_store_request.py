"""Issue 50 item 4 from where a user starts: real Claude Code 2.1.332 (`claude -p`), configured only by
`flowbaby install --client claude-code --allow-tools`, and real OpenCode 1.18.33 (`opencode run`, by
`flowbaby install --client opencode`), with NOTHING running. The user states a decision and asks to
store it; the agent stores it with flowbaby_storeMemory and says so. The session ends (the client's
hooks capture it): the workspace holds exactly one memory with the decision, and no memory holds the
request or the acknowledgement."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.client import BridgeClient
from tests.support.client_env import CLAUDE_CODE, OPENCODE, flowbaby_install, isolated_env, opencode_config, run_client
from tests.support.commands import serve_pids
from tests.support.fake_agent_model import FakeAgentModel
from tests.support.fake_anthropic_model import FakeAnthropicModel

pytestmark = pytest.mark.slow

REQUEST = "Store what we decided in flowbaby."
ACK = "Stored the decision in flowbaby."
DECISION = "Cap the help output at 100 columns instead of 80"
PROMPT = f"We decided to cap the help output at 100 columns instead of 80. {REQUEST}"
SUMMARY = {
    "topic": "Help text width",
    "context": "How wide the command line's help output may be.",
    "decisions": [DECISION],
}


def _stop(project: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "stop", "--workspace", str(project)],
        env=env,
        capture_output=True,
        timeout=60,
    )
    for pid in serve_pids(project):
        os.kill(pid, signal.SIGKILL)


def test_a_decision_the_agent_stored_is_one_memory_without_chatter(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")  # nothing here reads the graph
    with FakeAnthropicModel() as model:
        env = isolated_env(tmp_path, claude_url=model.url) | {"MCP_TIMEOUT": "120000"}
        flowbaby_install(project, env, "--client", "claude-code")
        # The user trusts the folder in Claude Code's first interactive start (its trust dialog).
        config = Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
        settings = json.loads(config.read_text()) if config.is_file() else {}
        settings.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True}
        config.write_text(json.dumps(settings))
        flowbaby_install(project, env, "--client", "claude-code", "--allow-tools")
        assert not serve_pids(project), "nothing may run when the client starts"
        model.script.append(("tool", "mcp__flowbaby__flowbaby_storeMemory", SUMMARY))
        model.after_tool = ACK
        try:
            run_client(CLAUDE_CODE, ["-p", PROMPT], project, env)
            stored = [r for r in model.tool_results() if "summary_id" in r]
            assert stored, f"the agent's store call did not succeed: {model.tool_results()}"
            memories = _memories_after_capture(project, env)
        finally:
            _stop(project, env)
    _one_memory_without_chatter(memories)


def _memories_after_capture(project: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """Every memory of the workspace once the session's end was captured (the hooks hand the capture to
    detached processes), each as getMemory returns it."""
    captures = project / ".flowbaby" / "captures.json"
    deadline = time.monotonic() + 120
    while not (captures.is_file() and json.loads(captures.read_text() or "{}")):
        assert time.monotonic() < deadline, "the session end was never captured"
        time.sleep(0.5)
    time.sleep(2)  # a second capture event (SessionEnd after Stop, idle after idle) may still be running
    with BridgeClient(project, env=env, extra_args=["--rate-limit-per-minute", "0"]) as bridge:
        listed = bridge.result("listMemories", {"limit": 100})
        return [bridge.result("getMemory", {"topicId": m["topicId"]}) for m in listed["memories"]]


def _one_memory_without_chatter(memories: list[dict[str, Any]]) -> None:
    text = json.dumps(memories)
    holding = [m for m in memories if "100 columns" in json.dumps(m)]
    assert len(holding) == 1, f"one memory of the decision, found {len(holding)}: {text[:3000]}"
    assert REQUEST not in text and ACK not in text, "no memory holds the request to store or its acknowledgement"


def test_opencode_a_decision_the_agent_stored_is_one_memory_without_chatter(tmp_path: Path) -> None:
    """The same with real OpenCode 1.18.33 (`opencode run`), its plugin and MCP server from `flowbaby install`."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    with FakeAgentModel() as model:
        env = isolated_env(tmp_path)
        opencode_config(project, model.url)
        flowbaby_install(project, env, "--client", "opencode")
        assert not serve_pids(project), "nothing may run when the client starts"
        model.script.append(("flowbaby_storeMemory", SUMMARY))
        model.after_tool = ACK
        try:
            run_client(OPENCODE, ["run", PROMPT], project, env)
            assert not model.script, "OpenCode never offered the store tool"
            assert any("summary_id" in m for m in model.tool_messages()), model.tool_messages()
            memories = _memories_after_capture(project, env)
        finally:
            _stop(project, env)
    _one_memory_without_chatter(memories)
