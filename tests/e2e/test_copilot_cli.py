"""Real GitHub Copilot CLI 1.0.102 reads the MCP server `flowbaby install --client copilot --scope user`
wrote (its COPILOT_HOME is the test's own), and `uninstall` takes it out. No conversation: Copilot CLI
needs a GitHub sign-in to reach its models, which a test cannot fake offline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.agent_cli import COPILOT
from tests.support.client_env import flowbaby_install, isolated_env
from tests.support.npm_tools import npm_tool

pytestmark = pytest.mark.slow


def _copilot(project: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(npm_tool(*COPILOT)), *args],
        cwd=project,
        env={**env, "PWD": str(project)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_copilot_cli_lists_the_installed_server(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = isolated_env(tmp_path) | {"COPILOT_HOME": str(tmp_path / "copilot")}
    flowbaby_install(project, env, "--client", "copilot", "--scope", "user")
    shown = _copilot(project, env, "mcp", "get", "flowbaby")
    assert f"mcp --workspace {project}" in shown and "Source: User" in shown, shown
    assert "flowbaby (local)" in _copilot(project, env, "mcp", "list")

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from flowbaby.cli import main; main()",
            "uninstall",
            "--client",
            "copilot",
            "--scope",
            "user",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "flowbaby" not in _copilot(project, env, "mcp", "list")
