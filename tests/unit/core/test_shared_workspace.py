"""One memory per repository: a linked worktree resolves to the main checkout's workspace (through
git's common directory, read from files), and `flowbaby link` points a clone at another workspace.
The repositories here are laid out by hand as git lays them out (tests/test_shared_workspace.py
uses the git command line)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graph.core.contract import ErrorCode, FlowbabyError
from graph.core.workspace import link_workspace, main_checkout, resolve_workspace


def repository(tmp_path: Path) -> tuple[Path, Path]:
    """main/ with .git/, and wt/, a linked worktree of it (`git worktree add ../wt`)."""
    main, worktree = tmp_path / "main", tmp_path / "wt"
    admin = main / ".git" / "worktrees" / "wt"
    admin.mkdir(parents=True)
    (admin / "commondir").write_text("../..\n")
    (admin / "gitdir").write_text(f"{worktree}/.git\n")
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {admin}\n")
    return main, worktree


def test_a_linked_worktree_shares_the_main_checkouts_workspace(tmp_path: Path) -> None:
    main, worktree = repository(tmp_path)
    assert main_checkout(worktree) == main
    assert resolve_workspace(worktree).root == main
    assert resolve_workspace(main).root == main
    assert not (worktree / ".flowbaby").exists()  # nothing is written into the worktree
    plain = tmp_path / "plain"
    plain.mkdir()
    assert resolve_workspace(plain).root == plain  # not a repository: as before


def test_a_worktree_with_its_own_store_keeps_it_and_a_bare_repository_has_no_main_checkout(tmp_path: Path) -> None:
    main, worktree = repository(tmp_path)
    (worktree / ".flowbaby").mkdir()
    (worktree / ".flowbaby" / "memories.sqlite").write_bytes(b"")
    assert resolve_workspace(worktree).root == worktree
    bare = tmp_path / "repo.git" / "worktrees" / "b"
    bare.mkdir(parents=True)
    (bare / "commondir").write_text("../..\n")
    tree = tmp_path / "b"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {bare}\n")
    assert main_checkout(tree) is None
    assert resolve_workspace(tree).root == tree


def test_link_points_a_clone_at_another_workspace_and_only_a_sealed_link_counts(tmp_path: Path) -> None:
    main, worktree = repository(tmp_path)
    clone = tmp_path / "clone"
    clone.mkdir()
    reply = link_workspace(clone, worktree)  # linked to where the worktree's memory is: the main checkout
    assert reply == {"workspace": str(clone), "linkedTo": str(main)}
    link = clone / ".flowbaby" / "link.json"
    assert json.loads(link.read_text()) == {"workspace": str(main)}
    assert link.stat().st_mode & 0o777 == 0o600
    assert resolve_workspace(clone).root == main
    os.chmod(link, 0o644)  # as a link.json committed to a repository arrives with a clone
    with pytest.raises(FlowbabyError, match="has mode 0644") as shared:
        resolve_workspace(clone)
    assert shared.value.code is ErrorCode.INVALID_WORKSPACE_PATH
    os.chmod(link, 0o600)
    link.write_text(json.dumps({"workspace": str(tmp_path)}))  # as git writes one under umask 077: unsealed
    with pytest.raises(FlowbabyError, match="no valid seal") as unsealed:
        resolve_workspace(clone)
    assert unsealed.value.code is ErrorCode.INVALID_WORKSPACE_PATH
    assert link_workspace(clone, None) == {"workspace": str(clone), "linkedTo": None}
    assert resolve_workspace(clone).root == clone
    with pytest.raises(FlowbabyError) as itself:
        link_workspace(main, worktree)
    assert itself.value.code is ErrorCode.INVALID_WORKSPACE_PATH
    with pytest.raises(FlowbabyError):
        link_workspace(clone, tmp_path / "nowhere")
