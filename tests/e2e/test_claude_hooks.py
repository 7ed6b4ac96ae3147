"""Real Claude Code 2.1.332 (`claude -p`, offline against the loopback Messages-API fake) with the
hooks `flowbaby install --client claude-code` writes, and a running owner (`flowbaby serve`):
a stored memory reaches the model's request with no tool call, an unrelated prompt gets no
recall, and a session where the user states a decision and the agent writes a file becomes a
captured memory that the bridge retrieves."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.client import BridgeClient
from tests.integration.test_http_api import Server
from tests.support.client_env import CLAUDE_CODE, flowbaby_install, isolated_env, run_client
from tests.support.fake_anthropic_model import FakeAnthropicModel

pytestmark = pytest.mark.slow

DECISION = "Retry failed card charges 4 times with exponential backoff starting at 45 seconds"
FACT = "The staging database password rotates every Friday at 17:00 UTC, from the ops vault."
"""A memory with no decisions or next steps: not in the briefing, so only recall can bring it."""


class Setup:
    def __init__(self, root: Path, model: FakeAnthropicModel) -> None:
        self.project, self.model = root / "project", model
        self.project.mkdir()
        (self.project / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")  # nothing here reads the graph
        self.env = isolated_env(root, claude_url=model.url)

    def claude(self, message: str, *flags: str) -> None:
        run_client(CLAUDE_CODE, ["-p", message, *flags], self.project, self.env)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Setup, Server, dict[str, str]]]:
    with FakeAnthropicModel() as model:
        setup = Setup(tmp_path_factory.mktemp("hooks"), model)
        flowbaby_install(setup.project, setup.env, "--client", "claude-code")
        server = Server(
            setup.project,
            "--rate-limit-per-minute",
            "0",
            # The real cache for the model's ONNX export (graph.search.onnx_export), or the server
            # exports it again into the test's HOME (~30 s of CPU).
            env={k: v for k, v in setup.env.items() if k.startswith(("CLAUDE_", "HOME"))}
            | {"XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")},
        )
        server.wait_ready()
        headers = {"Authorization": f"Bearer {(setup.project / '.flowbaby' / 'api_token').read_text().strip()}"}
        stored = httpx.post(
            f"{server.url}/api/agent/memories",
            headers=headers,
            json={
                "topic": "Card charge retry policy",
                "context": "How the billing worker retries failed card charges against the payment provider.",
                "decisions": [DECISION],
                "agentName": "opencode",
            },
            timeout=60,
        )
        assert stored.status_code == 202, stored.text
        fact = {"topic": "Staging database credentials", "context": FACT, "agentName": "opencode"}
        stored = httpx.post(f"{server.url}/api/agent/memories", headers=headers, json=fact, timeout=60)
        assert stored.status_code == 202, stored.text
        _until(lambda: _retrieve(server, headers, "card charge retry policy"), "the memory is searchable")
        _until(lambda: _retrieve(server, headers, "staging database password rotation"), "the memory is searchable")
        yield setup, server, headers
        server.stop()


def _retrieve(server: Server, headers: dict[str, str], query: str) -> list[dict[str, Any]]:
    reply = httpx.post(f"{server.url}/api/agent/retrieve", headers=headers, json={"query": query}, timeout=60)
    entries: list[dict[str, Any]] = reply.json().get("entries", [])
    return entries


def _until(check: Any, what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting until {what}")


def assert_captured(project: Path, env: dict[str, str], client: str) -> None:
    """The session where the user decided to retry webhooks 6 times and the agent wrote
    src/webhooks.py is a captured memory that the bridge retrieves, decision and file included."""
    with BridgeClient(project, env=env, extra_args=["--rate-limit-per-minute", "0"]) as bridge:

        def captured() -> dict[str, Any] | None:
            reply = bridge.result("retrieveForAgent", {"query": "how often do we retry outgoing webhooks"})
            return next((e for e in reply["entries"] if e["topicId"].startswith(f"session-{client}-")), None)

        entry = _until(captured, "the captured session is retrievable through the bridge")
    assert any("retry outgoing webhooks 6 times" in d for d in entry["decisions"])
    assert "src/webhooks.py" in entry["summaryText"]  # the written file, as a reference


def _sent(model: FakeAnthropicModel, start: int) -> str:
    return json.dumps(model.requests[start:])


def test_stored_memories_reach_the_model_without_a_tool_call(setup: tuple[Setup, Server, dict[str, str]]) -> None:
    clients, _, _ = setup
    start = len(clients.model.requests)
    clients.claude("When does the staging database password rotate?")
    first = json.dumps(clients.model.requests[start])
    assert DECISION in first, "the session-start briefing holds the current decision"
    assert "Flowbaby recalled for this prompt" in first and FACT in first, "the prompt's recall holds the fact"
    sent = _sent(clients.model, start)
    assert clients.model.tool_results() == [] and '"tool_use"' not in sent


def test_an_unrelated_prompt_gets_no_recall(setup: tuple[Setup, Server, dict[str, str]]) -> None:
    clients, _, _ = setup
    start = len(clients.model.requests)
    clients.claude("Write a haiku about autumn leaves falling on a quiet pond.")
    sent = _sent(clients.model, start)
    assert "Flowbaby workspace memory" in sent  # the session-start briefing, once per session
    assert "Flowbaby recalled for this prompt" not in sent


def test_a_session_with_a_decision_and_an_edit_is_captured(setup: tuple[Setup, Server, dict[str, str]]) -> None:
    clients, _, _ = setup
    target = clients.project / "src" / "webhooks.py"
    clients.model.script.append(("tool", "Write", {"file_path": str(target), "content": "RETRIES = 6\n"}))
    clients.claude(
        "We decided to retry outgoing webhooks 6 times with jittered backoff capped at 10 minutes. "
        "Create src/webhooks.py with the retry count.",
        "--allowedTools",
        "Write",
    )
    assert target.read_text() == "RETRIES = 6\n"
    assert_captured(clients.project, clients.env, "claude-code")
