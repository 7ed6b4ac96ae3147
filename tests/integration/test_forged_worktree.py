"""A `.git` file is a claim, not proof (issue 58, item 9): an unpacked archive whose `.git` names a git dir
of its own with a `commondir` leading to another project's repository, or names that repository's real
worktree, stays its own workspace and never reads that project's store. A worktree `git worktree add`
made (git's back-link `<common>/worktrees/<name>/gitdir` names its `.git` file) still shares the main
checkout's memory, and its front says on stderr which workspace it opened."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.client import BridgeClient
from tests.conftest import summary
from tests.support.store_only import store_only_env

pytestmark = pytest.mark.slow


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args], cwd=cwd, check=True)


def _project(tmp_path: Path) -> Path:
    """Another project of the user's: a repository with one commit and a worktree `feature`."""
    main = tmp_path / "project"
    main.mkdir()
    _git(main, "init", "-q", "-b", "main")
    (main / ".gitignore").write_text(".flowbaby/\n")
    _git(main, "add", "-A")
    _git(main, "commit", "-qm", "initial")
    _git(main, "worktree", "add", "-q", str(tmp_path / "feature"), "-b", "feature")
    return main


def _forged_archive(tmp_path: Path, name: str, git_dir: Path, common: Path | None) -> Path:
    """An unpacked archive whose `.git` file names `git_dir`; with `common`, the archive ships that git
    dir itself, its `commondir` leading to `common` and a `gitdir` back-link naming the archive."""
    archive = tmp_path / name
    archive.mkdir()
    (archive / ".git").write_text(f"gitdir: {git_dir}\n")
    if common is not None:
        git_dir.mkdir(parents=True)
        (git_dir / "commondir").write_text(f"{common}\n")
        (git_dir / "gitdir").write_text(f"{archive / '.git'}\n")
    return archive


def _stderr(tmp_path: Path, index: int) -> str:
    return (tmp_path / f"bridge-{index}.stderr").read_text()


def test_a_forged_git_file_does_not_share_another_projects_store(
    spawn: Callable[..., BridgeClient], tmp_path: Path
) -> None:
    main = _project(tmp_path)
    owner = spawn(main, env=store_only_env())
    owner.result("ingestForAgent", summary("vault", topic="Vault path", decisions=["Secrets live at VAULT-42"]))

    worktree = spawn(tmp_path / "feature", env=store_only_env())  # made by git: shares, and says so
    assert worktree.result("health")["workspace"] == str(main)
    found = worktree.result("retrieveForAgent", {"query": "Where do secrets live?", "abstain": False})
    assert [entry["topicId"] for entry in found["entries"]] == ["vault"], found
    worktree.close()
    said = _stderr(tmp_path, 1)
    assert f"{tmp_path / 'feature'} keeps its memory in the workspace {main}" in said, said

    own_git_dir = _forged_archive(tmp_path, "archive", tmp_path / "archive" / "fake-git", main / ".git")
    borrowed = _forged_archive(tmp_path, "archive2", main / ".git" / "worktrees" / "feature", None)
    for index, archive in enumerate((own_git_dir, borrowed), start=2):
        front = spawn(archive, env=store_only_env())
        health = front.result("health")
        assert health["workspace"] == str(archive) and health["pid"] != owner.result("health")["pid"], health
        found = front.result("retrieveForAgent", {"query": "Where do secrets live?", "abstain": False})
        assert found["entries"] == [], found
        front.close()
        assert "keeps its memory" not in _stderr(tmp_path, index)
        assert (archive / ".flowbaby" / "memories.sqlite").exists()
