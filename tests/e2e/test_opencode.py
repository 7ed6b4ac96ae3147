"""Real OpenCode (`opencode-ai` from npm) against a loopback scripted model, configured by
`flowbaby install --client opencode`: it starts `flowbaby mcp`, calls the Flowbaby tools the model
asks for, and sends their results back to the model. Offline but for npm itself: OpenCode and the
provider package it loads are installed once into the ignored `.tools/` folder (tests/support/npm_tools.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT
from tests.support.client_env import client_cache
from tests.support.fake_agent_model import FakeAgentModel
from tests.support.npm_tools import TOOLS, npm_tool

pytestmark = pytest.mark.slow

CONTEXT = (
    "The ZEBRA-4471 rollout of the billing service was paused because the ledger migration locked the "
    "reconcile table for eleven minutes; we will re-run it behind the feature flag on Tuesday."
)


def _run(project: Path, env: dict[str, str], message: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(npm_tool("opencode-ai", "1.18.33", "opencode")), "run", message],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_opencode_uses_flowbaby_tools(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = {
        **os.environ,
        "PWD": str(project),  # OpenCode takes its directory from $PWD, not the cwd
        "HOME": str(home),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": client_cache(),
        "npm_config_cache": str(TOOLS / "npm-cache"),
        "FLOWBABY_BUILD_GRAPH": "0",  # reads no graph: no cognee worker
    }
    with FakeAgentModel() as model:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": model.url, "apiKey": "x"},
            "models": {"fake-model": {"name": "Fake"}},
        }
        config = project / "opencode.json"
        config.write_text(json.dumps({"provider": {"fake": provider}, "model": "fake/fake-model"}))
        install = subprocess.run(
            [sys.executable, "-c", "from flowbaby.cli import main; main()", "install", "--client", "opencode"],
            cwd=project,
            env={**env, "PYTHONPATH": str(PROJECT_ROOT)},
            capture_output=True,
            text=True,
        )
        assert install.returncode == 0, install.stderr
        entry = json.loads(config.read_text())["mcp"]["flowbaby"]
        assert entry["type"] == "local" and entry["command"][-2:] == ["--workspace", str(project)]
        assert json.loads(config.read_text())["provider"]["fake"] == provider  # merged, not clobbered

        model.script.append(
            (
                "flowbaby_storeMemory",
                {"topic": "ZEBRA-4471 rollout paused", "context": CONTEXT, "metadata": {"topicId": "zebra-4471"}},
            )
        )
        _run(project, env, "Remember why the rollout was paused")
        assert not model.script, "OpenCode never offered the store tool"
        stored = json.loads(model.tool_messages()[-1])
        assert stored["success"] is True and stored["summary_id"] == "zebra-4471"

        model.script.append(("flowbaby_retrieveMemory", {"query": "Why was the ZEBRA-4471 rollout paused?"}))
        _run(project, env, "Why was the rollout paused?")
        assert not model.script, "OpenCode never offered the retrieve tool"
        retrieved = model.tool_messages()[-1]
        assert "eleven minutes" in retrieved and "ZEBRA-4471" in retrieved  # the memory's text reached the model

        assert {"flowbaby_flowbaby_storeMemory", "flowbaby_flowbaby_retrieveMemory"} <= model.tool_names()

    audit = [json.loads(line) for line in (project / ".flowbaby" / "agent_audit.log").read_text().splitlines()]
    assert {a["agentName"] for a in audit} == {"opencode"}
    tools = [a["command"] for a in audit if a["result"] == "success" and a["command"] != "retrieveForAgent"]
    assert tools == ["storeMemory", "retrieveMemory"]  # retrieveForAgent: the plugin's per-prompt recall
    assert {a["errorCode"] for a in audit} <= {None, "NOT_INITIALIZED"}  # a cold start on a busy machine
