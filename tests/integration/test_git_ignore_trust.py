"""Issue 58 item 3: a repository that commits its own `.flowbaby/.gitignore` (one that does not say `*`,
or re-includes files with `!`, with a root `.gitignore` and a subfolder's own helping) never makes the
store, the API token, the audit log or the session index committable, and `flowbaby install` says what
git itself answers for those files (INGEST_CONTRACT.md 9; docs/contract/09-workspace-files.md).

Real git, a real `git clone`, the real `flowbaby install`, a real bridge (the store, the audit log, the
session index, the logs) and a real `flowbaby serve` (the API token).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.conftest import summary
from tests.integration.test_cloned_data_files import clone_with
from tests.integration.test_http_api import Server
from tests.support.commands import run_flowbaby

DATA_FILES = [
    ".flowbaby/memories.sqlite",
    ".flowbaby/api_token",
    ".flowbaby/agent_audit.log",
    ".flowbaby/sessions/index.sqlite",
    ".flowbaby/logs/flowbaby.log",
]
HOSTILE = {
    "says-something-else": {".flowbaby/.gitignore": b"logs/\n"},
    "re-includes": {".flowbaby/.gitignore": b"*\n!memories.sqlite\n!api_token\n!agent_audit.log\n!sessions/\n"},
    "helped-from-above-and-below": {
        ".flowbaby/.gitignore": b"!*\n",
        ".flowbaby/sessions/.gitignore": b"!*\n",
        ".flowbaby/logs/.gitignore": b"!*\n",
        ".gitignore": b"!.flowbaby/\n!.flowbaby/**\n",
    },
}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_", "GIT_"))}
    return {
        **env,
        "PYTHONPATH": str(PROJECT_ROOT),
        "HOME": str(tmp_path / "home"),
        "FLOWBABY_BUILD_GRAPH": "0",
        "FLOWBABY_FINISH_SEC": "0",
    }


def _git(repo: Path, *args: str) -> list[str]:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.splitlines()


def _install(clone: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (clone.parent / "home").mkdir(exist_ok=True)
    done = run_flowbaby("install", "--client", "claude-code", "--workspace", str(clone), env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def _make_data(clone: Path, env: dict[str, str]) -> None:
    """Every data file: a memory through a real bridge, then a real `serve`, which makes the API token."""
    client = BridgeClient(clone, env=env, stderr=open(clone.parent / "bridge.stderr", "wb"))  # noqa: SIM115
    try:
        assert client.result("ingestForAgent", summary())["success"] is True
    finally:
        client.close(timeout=60)
    server = Server(clone, env=env)
    try:
        server.wait_ready()
    finally:
        server.stop()
    for name in DATA_FILES:
        assert (clone / name).is_file(), name


@pytest.mark.parametrize("planted", sorted(HOSTILE))
def test_a_committed_gitignore_never_makes_the_data_committable(tmp_path: Path, planted: str) -> None:
    clone = clone_with(tmp_path, HOSTILE[planted])
    env = _env(tmp_path)
    installed = _install(clone, env)
    assert f"ignored by git: {clone / '.flowbaby'}/" in installed.stdout, installed.stdout + installed.stderr
    assert "NOT ignored" not in installed.stderr
    _make_data(clone, env)

    staged = _git(clone, "add", "-A", "--dry-run")
    assert not [line for line in staged if any(name in line for name in DATA_FILES)], staged
    listed = _git(clone, "status", "--porcelain", "--ignored", "--untracked-files=all")
    shown = [line for line in listed if any(line.endswith(name) for name in DATA_FILES)]
    assert shown and all(line.startswith("!! ") for line in shown), listed  # each there, and ignored
    assert _git(clone, "check-ignore", *DATA_FILES) == DATA_FILES
    assert "NOT ignored" not in _install(clone, env).stderr  # install says again what git says now


def test_install_names_a_data_file_git_tracks(tmp_path: Path) -> None:
    """A repository that commits the audit log: no ignore rule covers a tracked file, so git would
    commit every line appended to it, and install says so instead of "ignored by git"."""
    clone = clone_with(tmp_path, {".flowbaby/agent_audit.log": b""})
    installed = _install(clone, _env(tmp_path))
    assert "NOT ignored by git: .flowbaby/agent_audit.log" in installed.stderr, installed.stdout + installed.stderr
    assert "ignored by git: " + str(clone / ".flowbaby") not in installed.stdout
    assert _git(clone, "ls-files", ".flowbaby/agent_audit.log") == [".flowbaby/agent_audit.log"]


def test_install_outside_git_claims_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    installed = _install(folder, _env(tmp_path))
    assert "not in a git work tree" in installed.stdout and "ignored by git:" not in installed.stdout
