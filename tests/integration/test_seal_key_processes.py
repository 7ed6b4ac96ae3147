"""Issue 58, robustness: one user, one seal key, wherever the process was started from; and a refused
workspace reaches the person. A client whose environment sets other XDG folders (Flatpak, Snap, a client
launched with isolated folders) ran real hooks whose service refused the person's own store, and all
they recorded was "the service exited with 3: see service.log"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from graph.core.hook_problems import PROBLEMS_FOLDER, problems_name
from tests.support.commands import run_flowbaby, serve_pids

pytestmark = pytest.mark.slow

DECISION = "Retry failed card charges 4 times with exponential backoff"


def _env(folder: Path, **extra: str) -> dict[str, str]:
    """A client's environment whose home and XDG folders are its own under `folder` (as Flatpak and Snap
    set them); the model cache stays the user's, so no test exports MiniLM again."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_", "XDG_"))}
    (folder / "home").mkdir(parents=True, exist_ok=True)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return {
        **env,
        "HOME": str(folder / "home"),
        "XDG_DATA_HOME": str(folder / "data"),
        "XDG_CONFIG_HOME": str(folder / "config"),
        "XDG_CACHE_HOME": cache,
        "PYTHONPATH": str(PROJECT_ROOT),
        "LLM_PROVIDER": "offline",
        "FLOWBABY_USER_STORE": os.environ["FLOWBABY_USER_STORE"],
        **extra,
    }


def _hook(workspace: Path, event: str, payload: dict[str, Any], env: dict[str, str]) -> str:
    """The hook exactly as `flowbaby install` writes it: `python -S .../flowbaby/hook.py EVENT`."""
    command = [sys.executable, "-S", str(PROJECT_ROOT / "flowbaby" / "hook.py"), event, "--workspace", str(workspace)]
    done = subprocess.run(command, input=json.dumps(payload), env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _stage(workspace: Path, env: dict[str, str]) -> None:
    """A memory staged by a bridge started from `env` that then exits: nothing runs afterwards."""
    workspace.mkdir()
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    fields = {"topic": "Card charge retry policy", "context": "How billing retries failed card charges."}
    with BridgeClient(workspace, env=env) as bridge:
        assert bridge.result("ingestForAgent", {**fields, "decisions": [DECISION], "agentName": "opencode"})["staged"]


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "project"
    yield folder
    for pid in serve_pids(folder):
        os.kill(pid, signal.SIGKILL)


def test_a_hook_from_other_xdg_folders_starts_the_service_and_gets_the_briefing(
    workspace: Path, tmp_path: Path
) -> None:
    """Before: the service refused the store ("no valid seal"), the hook printed nothing."""
    _stage(workspace, _env(tmp_path / "terminal"))
    sandboxed = _env(tmp_path / "flatpak")
    briefing = _hook(workspace, "SessionStart", {"session_id": "s1"}, sandboxed)
    assert DECISION in briefing, (workspace / ".flowbaby" / "logs" / "hooks.log").read_text()
    assert not (tmp_path / "flatpak" / "data" / "flowbaby" / "seal.key").exists()  # one key, not one per sandbox


def test_a_key_kept_under_the_old_xdg_place_moves_and_its_seals_keep_verifying(workspace: Path, tmp_path: Path) -> None:
    """A person whose XDG_DATA_HOME was always another folder kept the key there: the first process of
    this version takes that key as the user's, so the stores it sealed open from any environment."""
    old = tmp_path / "usual" / "data" / "flowbaby" / "seal.key"
    key = tmp_path / "account" / "seal.key"  # stands for ~/.local/share/flowbaby/seal.key, not made yet
    _stage(workspace, _env(tmp_path / "usual", FLOWBABY_SEAL_KEY=str(old)))  # sealed as before: under $XDG_DATA_HOME
    assert old.exists() and not key.exists()
    assert DECISION in _hook(
        workspace, "SessionStart", {"session_id": "a"}, _env(tmp_path / "usual", FLOWBABY_SEAL_KEY=str(key))
    )
    assert key.read_text() == old.read_text()
    for pid in serve_pids(workspace):
        os.kill(pid, signal.SIGTERM)
    elsewhere = _env(tmp_path / "snap", FLOWBABY_SEAL_KEY=str(key))
    assert DECISION in _hook(workspace, "SessionStart", {"session_id": "b"}, elsewhere)


def test_a_refused_store_reaches_the_hook_output_status_and_start(workspace: Path, tmp_path: Path) -> None:
    """Before: no hook output, "see service.log" from `flowbaby start`, exit 1."""
    env = _env(tmp_path / "terminal")
    _stage(workspace, env)
    (workspace / ".flowbaby" / "memories.sqlite.seal").write_text("0" * 64 + "\n")  # tampered
    said = f"Refusing the memory store {workspace / '.flowbaby' / 'memories.sqlite'}"
    out = _hook(workspace, "SessionStart", {"session_id": "s1", "hook_event_name": "SessionStart"}, env)
    reply = json.loads(out)  # Claude Code shows `systemMessage` to the person, the context to the agent
    assert said in reply["systemMessage"] and "INVALID_WORKSPACE_PATH" in reply["systemMessage"], out
    assert reply["hookSpecificOutput"]["additionalContext"] == reply["systemMessage"]
    prompt = {"session_id": "s1", "prompt": "card charge retries", "hook_event_name": "UserPromptSubmit"}
    assert _hook(workspace, "UserPromptSubmit", prompt, env) == ""  # told once per session
    codex = [sys.executable, "-S", str(PROJECT_ROOT / "flowbaby" / "hook.py"), "SessionStart"]
    done = subprocess.run(
        [*codex, "--workspace", str(workspace), "--client", "codex"],
        input="{}",
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert said in done.stdout and not done.stdout.startswith("{"), done.stdout  # Codex: plain text
    status = run_flowbaby("status", "--workspace", str(workspace), env=env, timeout=120)
    assert status.returncode == 3 and said in status.stderr, (status.stdout, status.stderr)
    record = Path(env["HOME"], ".local", "state", *PROBLEMS_FOLDER, problems_name(os.path.realpath(workspace)))
    problems = json.loads(record.read_text())["problems"]  # the hooks' record in the state folder (17)
    assert said in problems[-1]["reason"], problems  # what `status` lists and health.hookProblems carries to VS Code
    start = run_flowbaby("start", "--workspace", str(workspace), env=env, timeout=120)
    assert start.returncode == 3, (start.stdout, start.stderr)
    assert said in start.stderr and "service.log" not in start.stderr, start.stderr
    ui = run_flowbaby("ui", "--no-open", "--workspace", str(workspace), env=env, timeout=120)
    assert ui.returncode == 3 and said in ui.stderr, ui.stderr
