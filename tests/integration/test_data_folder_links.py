"""A repository that commits links inside `.flowbaby/` (INGEST_CONTRACT.md 9.1): real processes, and
a file standing for ~/.bashrc that must stay exactly as it was.

- a real bridge on a workspace whose `.flowbaby/logs/flowbaby.log` (or the audit log, or the whole
  `cognee/` folder) is a link refuses the workspace before it writes anything: before, the rotating
  log handler appended its start-up lines to the link's target;
- a real `flowbaby hook` (no owner running, so it logs why it injected nothing) never appends to a
  linked `logs/hooks.log`, nor writes its state through a linked `hooks/` folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT
from tests.support.commands import run_bridge_to_exit

pytestmark = pytest.mark.slow

BASHRC = b"# ~/.bashrc of the user\nexport PATH=$HOME/bin:$PATH\n"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {**env, "PYTHONPATH": str(PROJECT_ROOT), "LLM_PROVIDER": "offline"}


def _home(tmp_path: Path) -> tuple[Path, Path]:
    """A folder standing for the user's home, with a `.bashrc` and a `.config/`."""
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    bashrc = home / ".bashrc"
    bashrc.write_bytes(BASHRC)
    os.utime(bashrc, (1_000_000_000, 1_000_000_000))
    return bashrc, home / ".config"


def _untouched(bashrc: Path, config: Path) -> None:
    assert bashrc.read_bytes() == BASHRC
    assert bashrc.stat().st_mtime == 1_000_000_000
    assert list(config.iterdir()) == []


@pytest.mark.parametrize("linked", ["logs/flowbaby.log", "agent_audit.log", "cognee"])
def test_a_bridge_refuses_a_data_folder_holding_a_link(workspace: Path, tmp_path: Path, linked: str) -> None:
    bashrc, config = _home(tmp_path)
    link = workspace / ".flowbaby" / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(config if linked == "cognee" else bashrc)
    done = run_bridge_to_exit(workspace, _env())
    _untouched(bashrc, config)
    assert done.returncode == 3, done.stderr[-2000:]
    first = json.loads(done.stdout.splitlines()[0])
    assert first["method"] == "bridgeUnavailable", first
    assert first["params"]["errorCode"] == "INVALID_WORKSPACE_PATH", first
    assert f"{link} is a symlink" in first["params"]["error"], first
    assert b"Traceback" not in done.stderr
    assert link.is_symlink()  # left for the user to look at, never followed


def test_a_hook_never_writes_through_a_link(workspace: Path, tmp_path: Path) -> None:
    bashrc, config = _home(tmp_path)
    data = workspace / ".flowbaby"
    (data / "logs").mkdir(parents=True)
    (data / "logs" / "hooks.log").symlink_to(bashrc)
    (data / "hooks").symlink_to(config)
    for event, payload in [
        ("SessionStart", {"session_id": "s1", "cwd": str(workspace)}),
        ("UserPromptSubmit", {"session_id": "s1", "prompt": "where is the cache?", "cwd": str(workspace)}),
    ]:
        done = subprocess.run(
            [sys.executable, "-c", "from flowbaby.cli import main; main()", "hook", event]
            + ["--workspace", str(workspace)],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=_env(),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        if done.stdout:  # what the person sees is the refusal itself (section 9.2), nothing else
            said = json.loads(done.stdout)["systemMessage"]
            assert "Refusing the workspace's data folder" in said, said
    _untouched(bashrc, config)
