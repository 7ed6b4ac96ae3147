"""One memory per repository, with the git command line: a second worktree made with `git worktree
add` sees the main checkout's memories and stores into the same memory (through the owner while the
main checkout's bridge runs), a clone elsewhere joins after `flowbaby link`, and a memory made on a
branch not merged into the reader's is marked and ranks lower until it is merged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from graph.code.branches import Ancestry, checkout
from graph.core.contract import FlowbabyContextRequest
from graph.search.catalog import Catalog
from graph.search.retrieval import Retriever
from tests.conftest import summary
from tests.support.fakes import FakeChunkIndex, FakeEncoder, FakeGraph, chunk_vector
from tests.support.fakes import memory as fake_memory
from tests.support.store_only import store_only_env

pytestmark = pytest.mark.slow
UNTHROTTLED = ["--rate-limit-per-minute", "0"]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def repository(tmp_path: Path) -> tuple[Path, Path]:
    """main/ with one commit and feature/, a worktree on branch `feature` (`git worktree add`)."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    git(main, "config", "user.email", "dev@example.com")
    git(main, "config", "user.name", "Dev")
    (main / ".gitignore").write_text(".flowbaby/\n")
    (main / "ledger.py").write_text("class LedgerLock:\n    pass\n")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "initial")
    git(main, "worktree", "add", "-q", str(tmp_path / "feature"), "-b", "feature")
    return main, tmp_path / "feature"


def memory(topic_id: str, topic: str, context: str) -> dict[str, object]:
    return summary(topic_id, topic=topic, context=context, decisions=[], rationale=[], openQuestions=[], nextSteps=[])


def topics(client: BridgeClient, query: str) -> list[str]:
    reply = client.result("retrieveForAgent", {"query": query, "maxResults": 5, "abstain": False})
    assert reply["success"], reply
    return [entry["topicId"] for entry in reply["entries"]]


def test_worktrees_and_a_linked_clone_share_one_memory(spawn: Callable[..., BridgeClient], tmp_path: Path) -> None:
    main, worktree = repository(tmp_path)
    first = spawn(main, *UNTHROTTLED, env=store_only_env())  # reads no graph
    assert first.result(
        "ingestForAgent",
        memory("ledger-lock", "Ledger lock", "The ledger lock is a Postgres advisory lock per account."),
    )["success"]
    # the worktree's bridge: the main checkout's workspace, via its owner
    second = spawn(worktree, *UNTHROTTLED, env=store_only_env())
    health = second.result("health")
    assert (health["workspace"], health["pid"]) == (str(main), first.result("health")["pid"])
    assert topics(second, "How is the ledger locked?")[0] == "ledger-lock"
    assert second.result(
        "ingestForAgent", memory("retry-policy", "Retry policy", "Ledger writes retry three times with jitter.")
    )["success"]
    assert topics(first, "How often do ledger writes retry?")[0] == "retry-policy"
    assert not (worktree / ".flowbaby").exists()
    first.close()
    second.close()

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(main), str(clone))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    linked = subprocess.run(
        [sys.executable, "-c", "from flowbaby.cli import main; main()", "link", str(main), "--workspace", str(clone)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(linked.stdout) == {"success": True, "workspace": str(clone), "linkedTo": str(main)}
    third = spawn(clone, *UNTHROTTLED, env=store_only_env())
    assert third.result("health")["workspace"] == str(main)
    assert set(topics(third, "ledger lock and retries")) >= {"ledger-lock", "retry-policy"}


def test_memories_record_their_branch_and_another_branchs_are_marked_until_merged(
    spawn: Callable[..., BridgeClient], tmp_path: Path
) -> None:
    main, worktree = repository(tmp_path)
    (worktree / "feature.py").write_text("FLAG = True\n")
    git(worktree, "add", "-A")
    git(worktree, "commit", "-qm", "feature work")
    on_main = spawn(main, *UNTHROTTLED, env=store_only_env())  # reads no graph: branches and freshness
    on_feature = spawn(worktree, *UNTHROTTLED, env=store_only_env())  # through the main checkout's owner
    rollout = memory("flag-rollout", "Flag rollout", "The checkout flag rolls out to ten percent first.")
    assert on_feature.result("ingestForAgent", {**rollout, "references": ["feature.py"]})["success"]
    assert on_main.result(
        "ingestForAgent", memory("flag-cleanup", "Flag cleanup", "Old checkout flags are removed after a month.")
    )["success"]
    query = {"query": "How do checkout flags roll out and get cleaned up?", "maxResults": 5, "abstain": False}

    def seen(client: BridgeClient) -> dict[str, tuple[str | None, bool]]:
        reply = client.result("retrieveMemory", query)
        assert reply["success"], reply
        return {e["topicId"]: (e["branch"], e["unmerged"]) for e in reply["entries"]}

    from_main = on_main.result("retrieveMemory", query)
    assert {e["topicId"]: (e["branch"], e["unmerged"]) for e in from_main["entries"]} == {
        "flag-rollout": ("feature", True),
        "flag-cleanup": ("main", False),
    }
    assert "**Branch:** made on `feature` at " in from_main["markdown"]
    # each reader checks code references against its own checkout: feature.py is only on the branch
    rollout_seen = next(e for e in from_main["entries"] if e["topicId"] == "flag-rollout")
    assert rollout_seen["freshness"]["references"][0]["state"] == "missing"
    on_branch = on_feature.result("retrieveForAgent", query)["entries"]
    found = next(e for e in on_branch if e["topicId"] == "flag-rollout")["freshness"]["references"][0]
    # the commit the memory was made at changed feature.py, but does not make it stale (issue 50 item 5)
    assert (found["state"], found["commits"]) == ("current", 0)
    (worktree / "feature.py").write_text("FLAG = False\n")
    git(worktree, "commit", "-qam", "flag off")
    on_branch = on_feature.result("retrieveForAgent", query)["entries"]
    found = next(e for e in on_branch if e["topicId"] == "flag-rollout")["freshness"]["references"][0]
    assert (found["state"], found["commits"]) == ("changed", 1)  # a later commit does
    assert "not merged into the current branch" in from_main["markdown"]
    assert seen(on_feature) == {"flag-rollout": ("feature", False), "flag-cleanup": ("main", False)}
    git(main, "merge", "-q", "--no-edit", "feature")
    assert seen(on_main) == {"flag-rollout": ("feature", False), "flag-cleanup": ("main", False)}


def test_an_unmerged_memory_ranks_below_an_equal_one_of_the_current_branch(tmp_path: Path) -> None:
    main, worktree = repository(tmp_path)
    (worktree / "feature.py").write_text("FLAG = True\n")
    git(worktree, "add", "-A")
    git(worktree, "commit", "-qm", "feature work")
    here, there = checkout(main), checkout(worktree)
    assert here is not None and there is not None and (here.branch, there.branch) == ("main", "feature")
    text = {"context": "The invoice export runs nightly"}
    elsewhere = replace(fake_memory("a-feature", **text), branch="feature", commit=there.commit)  # type: ignore[arg-type]
    current = replace(fake_memory("b-main", **text), branch="main", commit=here.commit)  # type: ignore[arg-type]
    index = FakeChunkIndex({"a-feature": [chunk_vector(0.8)], "b-main": [chunk_vector(0.8)]})
    ret = Retriever(Catalog([elsewhere, current]), FakeEncoder("invoice export"), FakeGraph(), lambda: index)
    ret.ancestry = Ancestry()
    request = FlowbabyContextRequest(query="invoice export", maxResults=5, abstain=False)
    assert [e.memoryId for e in ret.retrieve(request).entries] == ["a-feature", "b-main"]  # no reader: id order
    read_on_main = ret.retrieve(request, reader=here).entries
    assert [(e.memoryId, e.unmerged) for e in read_on_main] == [("b-main", False), ("a-feature", True)]
    read_on_feature = ret.retrieve(request, reader=there).entries
    assert [(e.memoryId, e.unmerged) for e in read_on_feature] == [("a-feature", False), ("b-main", False)]
