"""Real Claude Code (`@anthropic-ai/claude-code` from npm): after `flowbaby install --client
claude-code`, `claude mcp list` (offline, temporary CLAUDE_CONFIG_DIR) health-checks the
user-scope server as connected, and lists the project-scope one, which waits for approval;
`claude -p` against a loopback model runs the tools once `--allow-tools` was given, and its
model reads the retrieve tool's markdown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.support.fake_anthropic_model import FakeAnthropicModel
from tests.support.npm_tools import npm_tool

pytestmark = pytest.mark.slow


def test_claude_code_connects_to_flowbaby(tmp_path: Path) -> None:
    claude = npm_tool("@anthropic-ai/claude-code", "2.1.332", "claude")
    project, home, config = tmp_path / "project", tmp_path / "home", tmp_path / "claude"
    for folder in (project, home, config):
        folder.mkdir()
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "PWD": str(project)}
    # The user's model cache (as below): `claude mcp list` ends a session, whose SessionEnd hook starts a detached
    # capture that would otherwise export the ONNX model again into this home (~22 CPU-s, after the test ended).
    env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    for scope in ("user", "project"):
        install = subprocess.run(
            [sys.executable, "-c", "from flowbaby.cli import main; main()", "install", "--client", "claude-code"]
            + ["--scope", scope],
            cwd=project,
            env={**env, "PYTHONPATH": str(PROJECT_ROOT)},
            capture_output=True,
            text=True,
        )
        assert install.returncode == 0, install.stderr
    assert (config / ".claude.json").is_file() and (project / ".mcp.json").is_file()
    assert (config / "skills" / "flowbaby-memory" / "SKILL.md").is_file()

    listing = subprocess.run(
        [str(claude), "mcp", "list"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 0, listing.stderr
    lines = [line for line in listing.stdout.splitlines() if line.startswith("flowbaby:")]
    assert lines and f"mcp --workspace {project}" in lines[0]
    assert "Connected" in lines[0], listing.stdout


def _tool_result_texts(model: FakeAnthropicModel) -> list[str]:
    """The text of every tool result Claude Code sent the model, as the model reads it."""
    texts = []
    for body in model.requests:
        for message in body.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    parts = inner if isinstance(inner, list) else [{"type": "text", "text": inner}]
                    texts.append("\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)))
    return texts


def test_allowed_tools_run_and_the_model_reads_the_retrieve_markdown(tmp_path: Path) -> None:
    """Install with --allow-tools, then real `claude -p` sessions against a loopback model: the
    store call is not refused for permission, and the retrieve answer reaches the model as the
    markdown narrative (Claude Code 2.1.332 passes only structuredContent when a result has any)."""
    claude = npm_tool("@anthropic-ai/claude-code", "2.1.332", "claude")
    project, home, config = tmp_path / "project", tmp_path / "home", tmp_path / "claude"
    for folder in (project, home, config):
        folder.mkdir()
    flowbaby = [str(Path(sys.executable).parent / "flowbaby"), "install", "--client", "claude-code"]
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "PWD": str(project)}
    env |= {"PYTHONPATH": str(PROJECT_ROOT), "ANTHROPIC_API_KEY": "sk-ant-offline-test", "MCP_TIMEOUT": "120000"}
    env["FLOWBABY_BUILD_GRAPH"] = "0"  # reads no graph: no cognee worker
    # The model's ONNX export is cached per user (graph.search.onnx_export): keep the real cache, or the
    # owner exports it again inside this test (minutes on 2 loaded cores: "never loaded its search index").
    env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    topic = "Session cache moved to Redis"
    context = (
        "We moved the session cache from Memcached to Redis because billing/reconcile.py kept failing with "
        "E_LEDGER_LOCK when sessions were evicted under load."
    )

    def run(model: FakeAnthropicModel, prompt: str) -> None:
        done = subprocess.run(
            [str(claude), "-p", prompt],
            cwd=project,
            env={**env, "ANTHROPIC_BASE_URL": model.url},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]

    # A bridge owns the workspace, as the VS Code extension's would: each short `claude -p` session's
    # MCP server works through it (section 9.1) instead of loading the search index cold.
    owner = BridgeClient(project, env=env, stderr=subprocess.DEVNULL)
    with owner, FakeAnthropicModel() as model:
        deadline = time.monotonic() + 240
        while not owner.result("health")["embedderLoaded"]:
            assert time.monotonic() < deadline, "the bridge never loaded its search index"
            time.sleep(0.2)
        assert subprocess.run(flowbaby, cwd=project, env=env, capture_output=True).returncode == 0
        # The user trusts the folder in Claude Code's first interactive start (its trust dialog);
        # Claude Code ignores a project's permissions.allow until then.
        (config / ".claude.json").write_text(json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": True}}}))
        model.script.append(("tool", "mcp__flowbaby__flowbaby_storeMemory", {"topic": topic, "context": context}))
        run(model, "Remember why the session cache moved")
        refused = _tool_result_texts(model)[-1]
        assert "haven't granted it yet" in refused  # without the user's consent, Claude Code refuses

        installed = subprocess.run([*flowbaby, "--allow-tools"], cwd=project, env=env, capture_output=True, text=True)
        assert installed.returncode == 0 and "mcp__flowbaby__*" in installed.stdout
        model.script.append(("tool", "mcp__flowbaby__flowbaby_storeMemory", {"topic": topic, "context": context}))
        run(model, "Remember why the session cache moved")
        stored = json.loads(_tool_result_texts(model)[-1])
        assert stored["success"] is True, stored

        model.script.append(("tool", "mcp__flowbaby__flowbaby_retrieveMemory", {"query": "why did the cache move"}))
        run(model, "Why did the session cache move?")
        seen = _tool_result_texts(model)[-1]
    assert seen.startswith("Flowbaby memory, best first ("), seen[:500]
    # the index line, as markdown, not escaped JSON, and no second copy of the entries
    assert f"1. {topic}: {context} [topicId {stored['summary_id']}, Active, " in seen and '"topicId"' not in seen
