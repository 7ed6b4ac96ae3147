"""Real Claude Code (`@anthropic-ai/claude-code` from npm): after `flowbaby install --client
claude-code`, `claude mcp list` (offline, temporary CLAUDE_CONFIG_DIR) health-checks the
user-scope server as connected, and lists the project-scope one, which waits for approval."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT
from tests.support.npm_tools import npm_tool

pytestmark = pytest.mark.slow


def test_claude_code_connects_to_flowbaby(tmp_path: Path) -> None:
    claude = npm_tool("@anthropic-ai/claude-code", "2.1.332", "claude")
    project, home, config = tmp_path / "project", tmp_path / "home", tmp_path / "claude"
    for folder in (project, home, config):
        folder.mkdir()
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config), "PWD": str(project)}
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
