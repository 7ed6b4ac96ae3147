"""What the real-client tests share: an isolated home for OpenCode and Claude Code, their run
commands, and `flowbaby install` as a user runs it (never configured by hand)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from bridge.client import PROJECT_ROOT
from tests.support.npm_tools import TOOLS, npm_tool

CLAUDE_CODE = ("@anthropic-ai/claude-code", "2.1.332", "claude")
OPENCODE = ("opencode-ai", "1.18.33", "opencode")


CLIENT_CACHE = TOOLS / "opencode-cache"
"""XDG_CACHE_HOME of the clients' isolated environments (OpenCode keeps its providers there)."""


def client_cache() -> str:
    """CLIENT_CACHE, with its flowbaby/onnx linked to the user's (`make setup` exported MiniLM and
    derived the session encoder there): a flowbaby process a client starts would otherwise export
    both again into a fresh clone's .tools (~22 CPU-s)."""
    onnx = CLIENT_CACHE / "flowbaby" / "onnx"
    if not onnx.exists():
        onnx.parent.mkdir(parents=True, exist_ok=True)
        user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flowbaby" / "onnx"
        user.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another test process linked it first
            onnx.symlink_to(user, target_is_directory=True)
    return str(CLIENT_CACHE)


def isolated_env(root: Path, *, claude_url: str | None = None) -> dict[str, str]:
    """The process environment with a home, XDG folders and (with `claude_url`) a Claude Code
    config folder of the test's own under `root`; the npm clients' caches stay shared."""
    for folder in ("home", "claude"):
        (root / folder).mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CACHE_HOME": client_cache(),
        "npm_config_cache": str(TOOLS / "npm-cache"),
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    if claude_url is not None:
        env |= {
            "CLAUDE_CONFIG_DIR": str(root / "claude"),
            "ANTHROPIC_BASE_URL": claude_url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-test",
        }
    return env


def opencode_config(project: Path, model_url: str) -> None:
    """OpenCode's project config naming the loopback OpenAI-compatible fake as its only model."""
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": model_url, "apiKey": "x"},
        "models": {"fake-model": {"name": "Fake"}},
    }
    (project / "opencode.json").write_text(json.dumps({"provider": {"fake": provider}, "model": "fake/fake-model"}))


def run_client(
    client: tuple[str, str, str], args: list[str], project: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """One non-interactive run of a real client in `project`; it must succeed."""
    command = [str(npm_tool(*client)), *args]
    result = subprocess.run(
        command, cwd=project, env={**env, "PWD": str(project)}, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def flowbaby_install(project: Path, env: dict[str, str], *args: str) -> None:
    """`flowbaby install ARGS` run in the project, as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "install", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
