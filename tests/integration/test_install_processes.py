"""`flowbaby install` as a real subprocess on a cloned repository that plants symlinks: a committed
temp-file link, a symlinked config or skill folder, and a user-scope config at mode 0600 (fake HOME).
Nothing outside the config files is written, nothing is read through a link, and modes are kept."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT

BASHRC = "# the user's shell start-up file\nexport PATH=$HOME/bin:$PATH\n"
PRIVATE = '{"mcpServers": {"db": {"command": "psql", "env": {"PGPASSWORD": "hunter2-private"}}}}\n'


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, repo = tmp_path / "home", tmp_path / "home" / "repo"
    repo.mkdir(parents=True)
    return home, repo


def _install(repo: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR")}
    return subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "install", "--client", "claude-code", *args],
        cwd=repo,
        env={**env, "HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_committed_temp_file_link_is_never_written_through(dirs: tuple[Path, Path]) -> None:
    home, repo = dirs
    bashrc = home / ".bashrc"
    bashrc.write_text(BASHRC)
    (repo / ".mcp.json.flowbaby-tmp").symlink_to(bashrc)
    done = _install(repo, home)
    assert done.returncode == 0, done.stderr
    assert bashrc.read_text() == BASHRC
    assert (repo / ".mcp.json.flowbaby-tmp").is_symlink()
    config = repo / ".mcp.json"
    assert not config.is_symlink() and "flowbaby" in json.loads(config.read_text())["mcpServers"]
    assert not [p for p in repo.rglob("*tmp") if not p.is_symlink()]  # no temp file left


@pytest.mark.parametrize("link", [".mcp.json", ".claude", ".claude/skills/flowbaby-memory/SKILL.md"])
def test_a_symlinked_config_or_folder_in_the_repo_is_refused(dirs: tuple[Path, Path], link: str) -> None:
    home, repo = dirs
    private = home / "private"
    private.mkdir()
    (private / "skills" / "flowbaby-memory").mkdir(parents=True)
    secret = private / "claude.json"
    secret.write_text(PRIVATE)
    secret.chmod(0o600)
    target = {".mcp.json": secret, ".claude": private}.get(link, secret)
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(target)
    done = _install(repo, home)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is a symlink" in done.stderr and "hunter2" not in done.stdout + done.stderr
    assert secret.read_text() == PRIVATE and stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert not (private / "skills" / "flowbaby-memory" / "SKILL.md").exists()
    assert (repo / link).is_symlink()
    assert not (repo / ".mcp.json").exists() or (repo / ".mcp.json").is_symlink()  # refused before any write


def test_user_scope_keeps_a_private_config_private(dirs: tuple[Path, Path]) -> None:
    home, repo = dirs
    config = home / ".claude.json"
    config.write_text(PRIVATE)
    config.chmod(0o600)
    done = _install(repo, home, "--scope", "user")
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    servers = json.loads(config.read_text())["mcpServers"]
    assert servers["db"]["env"]["PGPASSWORD"] == "hunter2-private" and "flowbaby" in servers
    skill = home / ".claude" / "skills" / "flowbaby-memory" / "SKILL.md"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(skill.stat().st_mode) == 0o666 & ~umask  # a new file: the user's usual mode


def test_user_scope_refuses_a_symlinked_config(dirs: tuple[Path, Path]) -> None:
    home, repo = dirs
    real = home / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text(PRIVATE)
    (home / ".claude.json").symlink_to(real)
    done = _install(repo, home, "--scope", "user")
    assert done.returncode == 2 and "is a symlink" in done.stderr
    assert real.read_text() == PRIVATE and (home / ".claude.json").is_symlink()
