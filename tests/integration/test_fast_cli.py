"""The command line as a user runs it, issue 46: `flowbaby search`, `memories` and `status` answered
by a running bridge over its socket without loading the engine, a forget that does not wait for a
cold cognee worker, hook problems that `flowbaby status` and `health` show, and `make install` on a
fresh HOME. Real subprocesses throughout; one bridge owns the module's workspace."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.integration.test_memories_cli import store_three
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

ENGINE = ("graph.api", "graph.engine", "pydantic", "numpy", "networkx")
"""What a command answered by the owner never imports (python -X importtime lists every import)."""


@pytest.fixture(scope="module")
def owned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, BridgeClient]]:
    """A workspace with three memories and their graph, owned by a bridge."""
    root = tmp_path_factory.mktemp("fastcli") / "ws"
    root.mkdir()
    log = open(root.parent / "bridge.stderr", "wb")  # noqa: SIM115 (closed below)
    client = BridgeClient(root, extra_args=["--shutdown-grace", "2"], stderr=log)
    store_three(client)
    yield root, client
    client.close()
    log.close()


def _traced(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`flowbaby <args>` under -X importtime: the result (importtime lines removed from stderr) and
    the modules it imported."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from flowbaby.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    done.stderr = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
    return done, imported


def test_search_answers_through_the_owner_with_the_agents_retrieval(owned: tuple[Path, BridgeClient]) -> None:
    root, client = owned
    question = "which cache keeps the sessions and for how long"
    done, imported = _traced("search", question, "--workspace", str(root), "--json")
    assert done.returncode == 0, done.stderr
    assert not imported & set(ENGINE), sorted(imported & set(ENGINE))
    reply = json.loads(done.stdout)
    agents = client.result("retrieveForAgent", {"query": question, "maxResults": 5, "maxTokens": 20000})
    assert [e["topicId"] for e in reply["entries"]] == [e["topicId"] for e in agents["entries"]]
    assert reply["entries"][0]["topicId"] == "redis-cache"
    text = run_flowbaby("search", question, "--workspace", str(root), "--limit", "1")
    assert text.returncode == 0, text.stderr
    assert "redis-cache" in text.stdout and "frontend-build" not in text.stdout
    assert "15 minute TTL" in text.stdout  # the decision, for people
    nothing = run_flowbaby("search", "kubernetes helm chart rollout", "--workspace", str(root))
    assert nothing.returncode == 0 and "nothing found" in nothing.stdout, nothing.stdout
    bad = run_flowbaby("search", " ", "--workspace", str(root))
    assert bad.returncode == 1 and "flowbaby search: INVALID_REQUEST" in bad.stderr, bad.stderr


def test_memories_list_show_and_status_go_through_the_owner(owned: tuple[Path, BridgeClient]) -> None:
    root, _ = owned
    for args in (("memories", "list", "--json"), ("memories", "show", "frontend-build"), ("status", "--json")):
        done, imported = _traced(*args, "--workspace", str(root))
        assert done.returncode == 0, done.stderr
        assert "working through the workspace's running owner" in done.stderr
        assert not imported & set(ENGINE), (args, sorted(imported & set(ENGINE)))
        reply = json.loads(done.stdout)
        if args[0] == "status":
            assert reply["index"]["counts"]["memories"] >= 2 and "hooks" in reply
        elif args[1] == "list":
            assert {"redis-cache", "frontend-build"} <= {m["topicId"] for m in reply["memories"]}
        else:
            assert reply["latest"]["topic"] == "Frontend build"
    missing = run_flowbaby("memories", "show", "no-such-topic", "--workspace", str(root))
    assert missing.returncode == 1 and json.loads(missing.stderr.split("\n", 1)[1])["errorCode"] == "NOT_FOUND"


def test_forget_through_the_owner_does_not_wait_for_the_graph_unless_asked(owned: tuple[Path, BridgeClient]) -> None:
    root, client = owned
    quick = run_flowbaby("memories", "forget", "scratch/a", "--workspace", str(root), "--yes")
    assert quick.returncode == 0, quick.stderr
    reply = json.loads(quick.stdout)
    assert reply["versions"] == 1 and set(reply["pending"]) <= {"graph", "vectors"}
    assert client.result("getMemory", {"topicId": "scratch/a"})["errorCode"] == "NOT_FOUND"
    found = client.result("retrieveForAgent", {"query": "scratch note", "abstain": False})
    assert "scratch/a" not in [e["topicId"] for e in found["entries"]]
    waited = run_flowbaby("memories", "forget", "frontend-build", "--workspace", str(root), "--yes", "--wait")
    assert waited.returncode == 0, waited.stderr
    assert json.loads(waited.stdout)["pending"] == []  # --wait: the vector and graph steps are done too
    journal = sqlite3.connect(f"file:{root / '.flowbaby' / 'memories.sqlite'}?mode=ro", uri=True)
    deadline = time.monotonic() + 120
    while journal.execute("SELECT count(*) FROM forget_journal").fetchone()[0] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert journal.execute("SELECT count(*) FROM forget_journal").fetchone()[0] == 0  # the owner finished it
    journal.close()


def _hook(workspace: Path, event: str, payload: dict[str, str], **env: str) -> subprocess.CompletedProcess[str]:
    hook = PROJECT_ROOT / "flowbaby" / "hook.py"
    return subprocess.run(
        [sys.executable, "-S", str(hook), event, "--workspace", str(workspace)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FLOWBABY_HOOK_TIMEOUT_SEC": "60", **env},  # a first recall waits for the warm-up
    )


def test_status_and_health_show_a_hook_that_injected_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".flowbaby").mkdir(parents=True, mode=0o700)
    prompt = {"prompt": "what did we decide about the cache", "session_id": "s1", "cwd": str(root)}
    # The service may not be started (FLOWBABY_HOOK_START_SEC=0) and none runs: nothing injected, exit 0.
    assert _hook(root, "UserPromptSubmit", prompt, FLOWBABY_HOOK_START_SEC="0").stdout == ""
    status = run_flowbaby("status", "--workspace", str(root))
    assert status.returncode == 0, status.stderr
    assert "hook problems (current" in status.stdout and "UserPromptSubmit (claude-code): nothing injected" in (
        status.stdout
    )
    client = BridgeClient(root, extra_args=["--shutdown-grace", "2"])
    try:
        problems = client.result("health")["hookProblems"]
        assert problems["current"] and problems["problems"][-1]["event"] == "UserPromptSubmit"
        assert _hook(root, "UserPromptSubmit", prompt).returncode == 0  # the owner answers (nothing matched)
        after = client.result("health")["hookProblems"]
        assert not after["current"] and after["problems"] == problems["problems"]
        shown = json.loads(run_flowbaby("status", "--workspace", str(root), "--json").stdout)
        assert shown["hooks"]["current"] is False
    finally:
        client.close()


def test_make_install_puts_flowbaby_on_a_fresh_homes_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "MAKEFLAGS": ""}
    env.pop("PREFIX", None)
    env.pop("BINDIR", None)

    def make(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["make", "-s", *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)

    first = make("install")
    assert first.returncode == 0, first.stderr
    launcher = home / ".local" / "bin" / "flowbaby"
    version = subprocess.run([str(launcher), "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("flowbaby "), version
    assert "is not on your PATH" in first.stdout
    again = make("install")
    assert again.returncode == 0 and "already installed" in again.stdout, again
    assert make("uninstall").returncode == 0 and not os.path.lexists(launcher)
    launcher.write_text("#!/bin/sh\necho mine\n")
    refused = make("install")
    assert refused.returncode != 0 and "left alone" in refused.stderr
    assert launcher.read_text() == "#!/bin/sh\necho mine\n"
