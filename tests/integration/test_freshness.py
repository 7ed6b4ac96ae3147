"""Freshness of memories' code references on real git repositories (the git command line in a
temp folder): edits, `git mv`, `git rm`, a removed symbol, the mtime basis, a hostile repository,
the cache, and the ranking of a memory whose every reference is gone."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bridge.client import BridgeClient
from graph.code.freshness import FreshnessChecker, describe
from graph.core.contract import FlowbabyContextRequest, Freshness
from graph.search.catalog import Catalog
from graph.search.markdown import render_markdown
from graph.search.retrieval import Retriever
from tests.conftest import summary
from tests.support.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, chunk_vector, memory
from tests.support.store_only import store_only_env

WRITTEN = "2026-01-10T12:00:00.000Z"
"""The memories' updatedAt: commits dated before it are history, after it are changes."""


class Git:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self("init", "-q", "-b", "main")
        self("config", "user.email", "dev@example.com")
        self("config", "user.name", "Dev")

    def __call__(self, *args: str, date: str = "2026-01-01T10:00:00Z") -> str:
        env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        return subprocess.run(["git", *args], cwd=self.root, env=env, check=True, capture_output=True, text=True).stdout

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str, date: str) -> str:
        self("add", "-A", date=date)
        self("commit", "-q", "-m", message, date=date)
        return self("rev-parse", "HEAD").strip()


RECONCILE = "def reconcile_batch(rows):\n    return rows\n\n\ndef reconcile_all():\n    pass\n"
LOCK = "class LedgerLock:\n    def acquire(self):\n        return True\n"


@pytest.fixture
def repo(tmp_path: Path) -> Git:
    """billing/ with two files, committed before the memories were written."""
    git = Git(tmp_path / "repo")
    git.write("billing/reconcile.py", RECONCILE)
    git.write("billing/ledger.py", LOCK)
    git.write("billing/export.py", "EXPORT = 1\n")
    git.write("README.md", "# repo\n")
    git.commit("Initial billing", "2026-01-01T10:00:00Z")
    return git


def check(checker: FreshnessChecker, *refs: str, written: str = WRITTEN) -> Freshness:
    return checker.check_many([(list(refs), written)])[0]


def test_untouched_references_are_current_and_prose_is_not_a_reference(repo: Git) -> None:
    fresh = check(
        FreshnessChecker(repo.root),
        "billing/reconcile.py",
        "billing/",
        "billing/reconcile.py:reconcile_batch",
        "LedgerLock.acquire",
        "PLAT-2291",
        "https://example.com/billing/reconcile.py",
        "the nightly run",
    )
    assert fresh.basis == "git"
    assert fresh.state == "current"
    by_ref = {r.reference: r for r in fresh.references}
    assert set(by_ref) == {
        "billing/reconcile.py",
        "billing/",
        "billing/reconcile.py:reconcile_batch",
        "LedgerLock.acquire",
    }
    assert [by_ref["billing/"].kind, by_ref["LedgerLock.acquire"].kind] == ["folder", "symbol"]
    assert by_ref["LedgerLock.acquire"].path == "billing/ledger.py"  # found in the tree
    assert all(r.state == "current" and r.commits == 0 for r in fresh.references)


def test_a_file_edited_in_commits_since_is_changed_with_count_and_newest(repo: Git) -> None:
    repo.write("billing/reconcile.py", RECONCILE + "# one\n")
    repo.commit("Touch reconcile before the memory", "2026-01-05T10:00:00Z")  # before: not counted
    repo.write("billing/reconcile.py", RECONCILE + "# two\n")
    repo.commit("Tune reconcile", "2026-02-01T10:00:00Z")
    repo.write("README.md", "# other file\n")
    repo.commit("Docs only", "2026-02-02T10:00:00Z")  # another file: not counted
    repo.write("billing/reconcile.py", RECONCILE + "# three\n")
    newest = repo.commit("Split reconcile into batches", "2026-02-03T10:00:00Z")
    fresh = check(FreshnessChecker(repo.root), "billing/reconcile.py", "billing/export.py")
    assert fresh.state == "changed"
    edited, untouched = fresh.references
    assert (edited.state, edited.commits) == ("changed", 2)
    assert edited.newest is not None
    assert newest.startswith(edited.newest.id)
    assert edited.newest.subject == "Split reconcile into batches"
    assert edited.newest.date.startswith("2026-02-03")
    assert (untouched.state, untouched.commits) == ("current", 0)
    line = describe(fresh)
    assert line == (
        f"**References:** `billing/reconcile.py` changed in 2 commits since (newest {newest[:7]}, 2026-02-03, "
        "'Split reconcile into batches'); `billing/export.py` current"
    )
    # the folder holding it changed too
    folder = check(FreshnessChecker(repo.root), "billing/").references[0]
    assert (folder.state, folder.commits) == ("changed", 2)


def test_git_mv_is_followed_to_the_new_path(repo: Git) -> None:
    (repo.root / "billing/reconcile").mkdir()
    repo("mv", "billing/reconcile.py", "billing/reconcile/batch.py")
    repo.commit("Move reconcile into a package", "2026-02-01T10:00:00Z")
    repo.write("billing/reconcile/batch.py", RECONCILE + "# after the move\n")
    repo.commit("Edit after the move", "2026-02-02T10:00:00Z")
    fresh = check(FreshnessChecker(repo.root), "billing/reconcile.py:reconcile_batch")
    ref = fresh.references[0]
    assert (ref.state, ref.movedTo, ref.commits) == ("moved", "billing/reconcile/batch.py", 2)
    assert fresh.state == "changed"
    assert "moved to `billing/reconcile/batch.py`" in (describe(fresh) or "")


def test_git_rm_is_missing_and_a_memory_of_only_gone_code_is_missing(repo: Git) -> None:
    repo("rm", "-q", "billing/export.py")
    gone = repo.commit("Drop the export", "2026-02-01T10:00:00Z")
    fresh = check(FreshnessChecker(repo.root), "billing/export.py")
    ref = fresh.references[0]
    assert (ref.state, ref.reason, fresh.state) == ("missing", "deleted", "missing")
    assert ref.newest is not None and gone.startswith(ref.newest.id)
    assert (
        describe(fresh)
        == f"**References:** `billing/export.py` missing (deleted, newest {gone[:7]}, 2026-02-01, 'Drop the export')"
    )


def test_a_symbol_removed_from_its_file_is_missing_while_the_file_stays(repo: Git) -> None:
    repo.write("billing/reconcile.py", "def reconcile_all():\n    pass\n")
    repo.write("billing/ledger.py", "class LedgerLock:\n    def release(self):\n        return True\n")
    repo.commit("Remove the batch path and acquire", "2026-02-01T10:00:00Z")
    fresh = check(
        FreshnessChecker(repo.root),
        "billing/reconcile.py:reconcile_batch",
        "billing/reconcile.py:reconcile_all",
        "LedgerLock.acquire",
    )
    batch, kept, bare = fresh.references
    assert (batch.state, batch.reason) == ("missing", "symbol not found in billing/reconcile.py")
    assert (kept.state, kept.commits) == ("changed", 1)
    assert (bare.state, bare.path) == ("missing", None)
    assert fresh.state == "changed"


def test_uncommitted_deletion_counts_and_a_path_outside_the_repository_is_unknown(repo: Git, tmp_path: Path) -> None:
    (repo.root / "billing/ledger.py").unlink()
    (tmp_path / "elsewhere.py").write_text("x = 1\n")
    fresh = check(FreshnessChecker(repo.root), "billing/ledger.py", "../elsewhere.py")
    ledger, outside = fresh.references
    assert (ledger.state, ledger.reason) == ("missing", "not found")
    assert (outside.state, outside.reason) == ("unknown", "outside the workspace's repository")
    assert fresh.state == "missing"  # every reference that could be checked is gone


def test_without_a_repository_modification_times_stand_in(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "src").mkdir(parents=True)
    old, new = root / "src/old.py", root / "src/new.py"
    old.write_text("def keep():\n    pass\n")
    new.write_text("def keep():\n    pass\n")
    os.utime(old, (1767000000, 1767000000))  # 2025-12-29, before WRITTEN
    os.utime(new, (1770000000, 1770000000))  # 2026-02-02, after
    checker = FreshnessChecker(root)
    assert checker.repo is None
    fresh = check(checker, "src/old.py:keep", "src/new.py", "src/gone.py", "LedgerLock.acquire")
    assert fresh.basis == "mtime"
    states = [(r.state, r.commits) for r in fresh.references]
    assert states == [("current", None), ("changed", None), ("missing", None), ("unknown", None)]
    assert checker.git_calls == 0
    assert "`src/new.py` modified since (2026-02-02)" in (describe(fresh) or "")
    off = FreshnessChecker(root, enabled=False).check_many([(["src/new.py"], WRITTEN)])[0]
    assert (off.basis, off.state, off.references[0].state) == ("off", "unknown", "unknown")


def test_warm_checks_start_no_git_and_a_new_head_refreshes(repo: Git) -> None:
    checker = FreshnessChecker(repo.root)
    refs = (["billing/reconcile.py", "LedgerLock.acquire"], WRITTEN)
    first = checker.check_many([refs] * 10)
    calls = checker.git_calls
    assert calls == 2  # one log for all ten memories, one grep for the bare symbol
    assert checker.check_many([refs] * 10) == first
    assert checker.git_calls == calls
    repo.write("billing/reconcile.py", RECONCILE + "# later\n")
    repo.commit("Later edit", "2026-03-01T10:00:00Z")
    again = checker.check_many([refs])[0]
    assert again.references[0].state == "changed"
    assert checker.git_calls > calls


def test_a_hostile_repository_runs_none_of_its_programs(repo: Git, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho ran >> {marker}\ncat\n")
    script.chmod(0o755)
    hooks = repo.root / ".git/hooks"
    for name in ("post-checkout", "pre-commit", "reference-transaction", "post-index-change"):
        (hooks / name).write_text(script.read_text())
        (hooks / name).chmod(0o755)
    repo("config", "core.fsmonitor", str(script))
    repo("config", "core.pager", str(script))
    repo("config", "diff.external", str(script))
    repo("config", "log.showSignature", "true")
    repo("config", "gpg.program", str(script))
    repo("config", "core.hooksPath", str(hooks))
    (repo.root / ".gitattributes").write_text("*.py diff=evil\n")
    repo("config", "diff.evil.textconv", str(script))
    marker.unlink(missing_ok=True)
    # committing above may legitimately have run the hooks; from here on nothing may
    repo.write("billing/reconcile.py", RECONCILE + "# x\n")
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "commit", "-qam", "edit"],
        cwd=repo.root,
        check=True,
        env={**os.environ, "GIT_COMMITTER_DATE": "2026-02-01T10:00:00Z", "GIT_AUTHOR_DATE": "2026-02-01T10:00:00Z"},
    )
    marker.unlink(missing_ok=True)
    fresh = check(FreshnessChecker(repo.root), "billing/reconcile.py", "LedgerLock.acquire")
    assert [r.state for r in fresh.references] == ["changed", "current"]
    assert not marker.exists()


def test_a_memory_whose_every_reference_is_gone_ranks_below_an_equal_current_one(repo: Git) -> None:
    repo("rm", "-q", "billing/ledger.py")
    repo.commit("Drop the ledger", "2026-02-01T10:00:00Z")
    text = {"context": "The invoice export runs nightly", "created": WRITTEN}
    gone = replace(memory("gone", **text), references=["billing/ledger.py"])  # type: ignore[arg-type]
    held = replace(memory("held", **text), references=["billing/reconcile.py"])  # type: ignore[arg-type]
    index = FakeChunkIndex({"gone": [chunk_vector(0.8)], "held": [chunk_vector(0.8)]})

    def ranked(checker: FreshnessChecker | None) -> list[tuple[str, float, str]]:
        ret = Retriever(Catalog([gone, held]), FakeEncoder("invoice export"), FakeGraph(), lambda: index)
        ret.freshness = checker
        entries = ret.retrieve(FlowbabyContextRequest(query="invoice export", maxResults=5, abstain=False)).entries
        return [(e.memoryId, e.score, e.freshness.state) for e in entries]

    before = ranked(None)
    assert [m for m, _, _ in before] == ["gone", "held"]  # equal: memoryId order puts "gone" first
    assert before[0][1] == before[1][1]
    after = ranked(FreshnessChecker(repo.root))
    assert [(m, state) for m, _, state in after] == [("held", "current"), ("gone", "missing")]  # shown, lower
    assert after[1][1] < after[0][1]
    ret = Retriever(Catalog([gone]), FakeEncoder("invoice export"), FakeGraph(), lambda: index)
    ret.freshness = FreshnessChecker(repo.root)
    entries = ret.retrieve(FlowbabyContextRequest(query="invoice export", abstain=False)).entries
    assert "**References:** `billing/ledger.py` missing (deleted" in render_markdown(entries)


def reconcile_batches(*references: str) -> dict[str, Any]:
    """The memory the bridge tests store, written at WRITTEN: reconcile ledger rows in batches of 500."""
    return summary(
        "reconcile-batches",
        topic="Reconcile in batches",
        context="The nightly reconcile job processes ledger rows in batches of 500.",
        decisions=["Reconcile ledger rows in batches of 500"],
        references=list(references),
        metadata={"topicId": "reconcile-batches", "createdAt": WRITTEN, "updatedAt": WRITTEN},
    )


@pytest.mark.slow
def test_a_real_bridge_on_a_repository_reports_freshness(spawn: Callable[..., BridgeClient], repo: Git) -> None:
    """The service wires the checker to its workspace: a bridge on a git work tree answers on the git basis."""
    (repo.root / ".gitignore").write_text(".flowbaby/\n")
    client = spawn(repo.root, "--rate-limit-per-minute", "0", env=store_only_env())  # reads no graph
    staged = client.result(
        "ingestForAgent", reconcile_batches("billing/reconcile.py:reconcile_batch", "billing/export.py")
    )
    assert staged["success"], staged
    repo.write("billing/reconcile.py", RECONCILE + "# split\n")  # after the memory was made (item 5 of issue 50)
    newest = repo.commit("Split reconcile into batches", "2026-02-03T10:00:00Z")
    reply = client.result("retrieveMemory", {"query": "How does the nightly reconcile job batch ledger rows?"})
    entry = reply["entries"][0]
    assert entry["freshness"]["basis"] == "git"
    assert [(r["state"], r["commits"]) for r in entry["freshness"]["references"]] == [("changed", 1), ("current", 0)]
    assert (
        f"**References:** `billing/reconcile.py:reconcile_batch` changed in 1 commit since (newest {newest[:7]}, "
        "2026-02-03, 'Split reconcile into batches'); `billing/export.py` current"
    ) in reply["markdown"]


def test_the_commit_a_memory_was_made_at_does_not_make_it_stale_a_later_one_does(
    spawn: Callable[..., BridgeClient], repo: Git
) -> None:
    """Issue 50 item 5: the memory is stored at the commit that implemented its decision (dated after the
    memory's updatedAt, as when a decision is recorded with the time it was taken): that commit and its
    ancestors do not count, in retrieval or in the briefing; a commit made after it does."""
    (repo.root / ".gitignore").write_text(".flowbaby/\n")
    repo.write("billing/reconcile.py", RECONCILE + "BATCH = 500\n")
    implementing = repo.commit("Reconcile in batches of 500", "2026-02-03T10:00:00Z")
    client = spawn(repo.root, "--rate-limit-per-minute", "0", env=store_only_env())  # reads no graph
    staged = client.result("ingestForAgent", reconcile_batches("billing/reconcile.py"))
    assert staged["success"], staged
    query = {"query": "How does the nightly reconcile job batch ledger rows?"}

    def states() -> tuple[list[tuple[str, int]], str]:
        entry = client.result("retrieveForAgent", query)["entries"][0]
        brief = client.result("briefing", {"agentName": "claude-code"})["text"]
        return [(r["state"], r["commits"]) for r in entry["freshness"]["references"]], brief

    found, brief = states()
    assert found == [("current", 0)], f"the implementing commit {implementing[:7]} marked the memory stale"
    assert "Reconcile ledger rows in batches of 500" in brief and "stale" not in brief

    repo.write("billing/reconcile.py", RECONCILE + "BATCH = 250\n")
    later = repo.commit("Halve the batch", "2026-02-10T10:00:00Z")
    found, brief = states()
    assert found == [("changed", 1)], "a commit after the memory's own counts"
    assert "(stale: billing/reconcile.py changed)" in brief
    entry = client.result("retrieveForAgent", query)["entries"][0]
    assert entry["freshness"]["references"][0]["newest"]["id"] == later[:12]
