"""One memory per repository, with the git command line: a second worktree made with `git worktree
add` sees the main checkout's memories and stores into the same memory (through the owner while the
main checkout's bridge runs), and a clone elsewhere joins after `flowbaby link`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.conftest import summary

pytestmark = pytest.mark.slow
UNTHROTTLED = ["--rate-limit-per-minute", "0"]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def memory(topic_id: str, topic: str, context: str) -> dict[str, object]:
    return summary(topic_id, topic=topic, context=context, decisions=[], rationale=[], openQuestions=[], nextSteps=[])


def topics(client: BridgeClient, query: str) -> list[str]:
    reply = client.result("retrieveForAgent", {"query": query, "maxResults": 5, "abstain": False})
    assert reply["success"], reply
    return [entry["topicId"] for entry in reply["entries"]]


def test_worktrees_and_a_linked_clone_share_one_memory(spawn: Callable[..., BridgeClient], tmp_path: Path) -> None:
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
    worktree = tmp_path / "feature"

    first = spawn(main, *UNTHROTTLED)
    assert first.result(
        "ingestForAgent",
        memory("ledger-lock", "Ledger lock", "The ledger lock is a Postgres advisory lock per account."),
    )["success"]
    second = spawn(worktree, *UNTHROTTLED)  # the worktree's bridge: the main checkout's workspace, via its owner
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
        [sys.executable, "-c", "from bridge.cli import main; main()", "link", str(main), "--workspace", str(clone)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(linked.stdout) == {"success": True, "workspace": str(clone), "linkedTo": str(main)}
    third = spawn(clone, *UNTHROTTLED)
    assert third.result("health")["workspace"] == str(main)
    assert set(topics(third, "ledger lock and retries")) >= {"ledger-lock", "retry-policy"}
