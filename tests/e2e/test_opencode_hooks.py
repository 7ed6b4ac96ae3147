"""Real OpenCode 1.18.33 (`opencode run`, offline against the loopback OpenAI fake) with the plugin
`flowbaby install --client opencode` writes, and a running owner (`flowbaby serve`): stored
memories reach the model's request with no tool call, an unrelated prompt gets no recall, and a
session where the user states a decision and the agent writes a file becomes a captured memory
that the bridge retrieves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.test_claude_hooks import assert_captured
from tests.integration.test_http_api import Server
from tests.support.agent_cli import DECISION, FACT, AgentProject, retrieve, until
from tests.support.client_env import OPENCODE, flowbaby_install, isolated_env, opencode_config
from tests.support.fake_agent_model import FakeAgentModel

pytestmark = pytest.mark.slow


class Setup(AgentProject[FakeAgentModel]):
    client, fake = OPENCODE, FakeAgentModel

    def environment(self) -> dict[str, str]:
        opencode_config(self.project, self.model.url)
        return isolated_env(self.root)

    def opencode(self, message: str) -> None:
        self.run("run", message)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with FakeAgentModel() as model:
        setup = Setup(tmp_path_factory.mktemp("ochooks"), model)
        flowbaby_install(setup.project, setup.env, "--client", "opencode")
        assert (setup.project / ".opencode" / "plugin" / "flowbaby.js").is_file()
        server = Server(
            setup.project,
            "--rate-limit-per-minute",
            "0",
            env={k: v for k, v in setup.env.items() if k.startswith(("XDG_", "HOME"))},
        )
        server.wait_ready()
        headers = {"Authorization": f"Bearer {(setup.project / '.flowbaby' / 'api_token').read_text().strip()}"}
        for memory in (
            {"topic": "Card charge retry policy", "context": "Billing worker retries.", "decisions": [DECISION]},
            {"topic": "Staging database credentials", "context": FACT},
        ):
            stored = httpx.post(
                f"{server.url}/api/agent/memories", headers=headers, json={**memory, "agentName": "claude-code"}
            )
            assert stored.status_code == 202, stored.text
        until(lambda: retrieve(server, headers, "staging database password rotation"), "the memory is searchable")
        yield setup
        server.stop()


def _main_requests(model: FakeAgentModel, start: int) -> list[dict[str, Any]]:
    """The agent's requests (they list tools), not the title requests."""
    return [body for body in model.requests[start:] if body.get("tools")]


def test_stored_memories_reach_the_model_without_a_tool_call(setup: Setup) -> None:
    start = len(setup.model.requests)
    setup.opencode("When does the staging database password rotate?")
    first = json.dumps(_main_requests(setup.model, start)[0])
    assert DECISION in first, "the session-start briefing holds the current decision"
    assert "Flowbaby recalled for this prompt" in first and FACT in first
    assert not setup.model.tool_messages()


def test_an_unrelated_prompt_gets_no_recall(setup: Setup) -> None:
    start = len(setup.model.requests)
    setup.opencode("Write a haiku about autumn leaves falling on a quiet pond.")
    sent = json.dumps(_main_requests(setup.model, start))
    assert "Flowbaby workspace memory" in sent
    assert "Flowbaby recalled for this prompt" not in sent


def test_a_session_with_a_decision_and_an_edit_is_captured(setup: Setup) -> None:
    target = setup.project / "src" / "webhooks.py"
    setup.model.script.append(("write", {"filePath": str(target), "content": "RETRIES = 6\n"}))
    setup.opencode(
        "We decided to retry outgoing webhooks 6 times with jittered backoff capped at 10 minutes. "
        "Create src/webhooks.py with the retry count."
    )
    assert target.read_text() == "RETRIES = 6\n"
    assert_captured(setup.project, setup.env, "opencode")
