"""Issue 46 from where a new user starts: real Claude Code 2.1.332 (`claude -p`) and OpenCode 1.18.33
(`opencode run`), configured only by `flowbaby install`, in a project whose memories were stored by a
process that then exited, so NOTHING runs when the client starts. The hooks start the workspace's
service themselves: the stored decision (briefing) and fact (recall) reach the first model request,
and both clients started at once make one service."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.client import BridgeClient
from tests.support.agent_cli import DECISION, FACT
from tests.support.client_env import (
    CLAUDE_CODE,
    OPENCODE,
    flowbaby_install,
    isolated_env,
    opencode_config,
    run_client,
)
from tests.support.commands import serve_pids
from tests.support.fake_agent_model import FakeAgentModel
from tests.support.fake_anthropic_model import FakeAnthropicModel

pytestmark = pytest.mark.slow


class Project:
    """A project set up as the README says, its memories stored by a bridge that has exited."""

    def __init__(self, root: Path, claude: FakeAnthropicModel, opencode: FakeAgentModel) -> None:
        self.root = root / "project"
        self.root.mkdir()
        (self.root / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")  # nothing here reads the graph
        self.env = isolated_env(root, claude_url=claude.url)
        opencode_config(self.root, opencode.url)
        flowbaby_install(self.root, self.env, "--client", "claude-code")
        flowbaby_install(self.root, self.env, "--client", "opencode")
        memories = (
            {"topic": "Card charge retry policy", "context": "Billing worker retries.", "decisions": [DECISION]},
            {"topic": "Staging database credentials", "context": FACT},
        )
        with BridgeClient(self.root, env=self.env) as bridge:
            for memory in memories:
                assert bridge.result("storeMemory", {**memory, "agentName": "architect"})["success"]
            found = bridge.result("retrieveForAgent", {"query": "staging database password rotation"})
            assert any(FACT in json.dumps(entry) for entry in found["entries"])
        assert not serve_pids(self.root), "nothing may run when the client starts"
        assert not (self.root / ".flowbaby" / "owner.json").exists()

    def stop(self) -> None:
        subprocess.run(
            [sys.executable, "-c", "from flowbaby.cli import main; main()", "stop", "--workspace", str(self.root)],
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        for pid in serve_pids(self.root):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Project, FakeAnthropicModel, FakeAgentModel]]:
    with FakeAnthropicModel() as claude, FakeAgentModel() as opencode:
        setup = Project(tmp_path, claude, opencode)
        try:
            yield setup, claude, opencode
        finally:
            setup.stop()


def _first_opencode_request(model: FakeAgentModel) -> str:
    return json.dumps(next(body for body in model.requests if body.get("tools")))


def test_claude_code_from_nothing_running(project: tuple[Project, FakeAnthropicModel, FakeAgentModel]) -> None:
    """Before: hooks.log said `nothing injected (no owner endpoint ...)` and the model got neither."""
    setup, claude, _ = project
    run_client(CLAUDE_CODE, ["-p", "When does the staging database password rotate?"], setup.root, setup.env)
    first = json.dumps(claude.requests[0])
    assert DECISION in first, "the session-start briefing holds the current decision"
    assert "Flowbaby recalled for this prompt" in first and FACT in first, "the first prompt's recall holds the fact"
    assert len(serve_pids(setup.root)) == 1  # the service the hook started stays for the next session


def test_opencode_from_nothing_running(project: tuple[Project, FakeAnthropicModel, FakeAgentModel]) -> None:
    setup, _, opencode = project
    run_client(OPENCODE, ["run", "When does the staging database password rotate?"], setup.root, setup.env)
    first = _first_opencode_request(opencode)
    assert DECISION in first, "the session-start briefing holds the current decision"
    assert "Flowbaby recalled for this prompt" in first and FACT in first, "the first prompt's recall holds the fact"
    assert len(serve_pids(setup.root)) == 1


def test_both_clients_at_once_make_one_service(project: tuple[Project, FakeAnthropicModel, FakeAgentModel]) -> None:
    setup, claude, opencode = project
    runs: list[Any] = [
        (CLAUDE_CODE, ["-p", "When does the staging database password rotate?"]),
        (OPENCODE, ["run", "When does the staging database password rotate?"]),
    ]
    failures: list[BaseException] = []

    def client(which: Any, args: list[str]) -> None:
        try:
            run_client(which, args, setup.root, setup.env)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=client, args=run) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert DECISION in json.dumps(claude.requests[0]) and DECISION in _first_opencode_request(opencode)
    record = json.loads((setup.root / ".flowbaby" / "service.json").read_text())
    assert serve_pids(setup.root) == [record["pid"]]
