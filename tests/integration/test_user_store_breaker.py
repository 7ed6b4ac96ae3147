"""Issue 58, robustness: one stuck process that owns the user store blanked recall in every project
(each call waited 10 s for it). After a timeout the user store is skipped for a back-off
(FLOWBABY_USER_SKIP_SEC), the reply saying so; once its owner answers again, user memories come back."""

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

from bridge.client import PROJECT_ROOT
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

PREFERENCE = "Deploy billing services with blue green releases, never in place"
PROJECT = "Deploy billing workers with blue green releases behind the queue drain"


def _retrieve(bridge: Any) -> dict[str, Any]:
    return dict(bridge.result("retrieveForAgent", {"query": "how do we deploy billing with blue green releases"}))


def _texts(reply: dict[str, Any]) -> str:
    return json.dumps(reply["entries"])


def _recall(workspace: Path, env: dict[str, str]) -> str:
    """The real per-prompt hook, asking the running owner only (no service started), waiting 5 s at most."""
    hook = [sys.executable, "-S", str(PROJECT_ROOT / "flowbaby" / "hook.py"), "UserPromptSubmit"]
    payload = {"session_id": f"s{time.monotonic_ns()}", "prompt": "how do we deploy billing with blue green releases"}
    limits = {"FLOWBABY_HOOK_START_SEC": "0", "FLOWBABY_HOOK_TIMEOUT_SEC": "5"}
    done = subprocess.run(
        [*hook, "--workspace", str(workspace)],
        input=json.dumps(payload),
        env={**env, **limits},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout


def test_a_stopped_user_store_owner_is_skipped_then_asked_again(spawn, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env = {
        **os.environ,
        "FLOWBABY_USER_STORE": str(tmp_path / "user"),
        "FLOWBABY_BUILD_GRAPH": "0",
        "FLOWBABY_USER_SKIP_SEC": "3",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    owner = spawn(a, env=env)
    owner.result("health", {})
    added = run_flowbaby(
        *("memories", "add", "--workspace", str(a), "--scope", "user", "--topic", "Billing deploys"),
        *("--context", "How I deploy billing services.", "--decision", PREFERENCE),
        env=env,
    )
    assert added.returncode == 0, added.stderr
    assert json.loads((tmp_path / "user" / ".flowbaby" / "owner.json").read_text())  # A's bridge owns it now
    project = spawn(b, env=env)
    project.result("ingestForAgent", {"topic": "Worker deploys", "context": "Billing workers.", "decisions": [PROJECT]})
    assert PREFERENCE in _texts(_retrieve(project))  # the user store answers through A
    os.kill(owner.proc.pid, signal.SIGSTOP)
    try:
        first = _retrieve(project)  # waits USER_WAIT_SEC (10 s) once
        assert PROJECT in _texts(first) and PREFERENCE not in _texts(first)
        assert "user store was not searched" in first["userNotSearched"], first
        started = time.monotonic()
        second = _retrieve(project)
        assert time.monotonic() - started < 8.0, "the second retrieval waited for the stuck owner again"
        assert PROJECT in _texts(second) and "skipped" in second["userNotSearched"], second
        assert PROJECT in _recall(b, env)  # the hook's recall answers within its 5 s
    finally:
        os.kill(owner.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 60
    while True:
        time.sleep(1.0)
        again = _retrieve(project)
        if PREFERENCE in _texts(again):
            break
        assert time.monotonic() < deadline, again
    assert PROJECT in _texts(again) and "userNotSearched" not in again
