"""Real Claude Code 2.1.332 (`claude -p`, offline against the loopback Messages-API fake) with the
hooks `flowbaby install --client claude-code` writes, and a running owner (`flowbaby serve`):
a stored memory reaches the model's request with no tool call, an unrelated prompt gets no
recall, and a session where the user states a decision and the agent writes a file becomes a
captured memory that the bridge retrieves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_http_api import Server
from tests.support.agent_cli import AgentProject, assert_briefed_and_recalled, captured
from tests.support.client_env import CLAUDE_CODE, isolated_env
from tests.support.fake_anthropic_model import FakeAnthropicModel

pytestmark = pytest.mark.slow


class Setup(AgentProject[FakeAnthropicModel]):
    client, fake = CLAUDE_CODE, FakeAnthropicModel

    def environment(self) -> dict[str, str]:
        return isolated_env(self.root, claude_url=self.model.url)

    def claude(self, message: str, *flags: str) -> None:
        self.run("-p", message, *flags)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Setup, Server, dict[str, str]]]:
    with Setup.serving(tmp_path_factory.mktemp("hooks"), "--client", "claude-code") as running:
        yield running


def assert_captured(project: Path, env: dict[str, str], client: str) -> None:
    """The session where the user decided to retry webhooks 6 times and the agent wrote
    src/webhooks.py is a captured memory that the bridge retrieves, decision and file included."""
    entry = captured(project, env, client)
    assert any("retry outgoing webhooks 6 times" in d for d in entry["decisions"])
    assert "src/webhooks.py" in entry["summaryText"]  # the written file, as a reference


def _sent(model: FakeAnthropicModel, start: int) -> str:
    return json.dumps(model.requests[start:])


def test_stored_memories_reach_the_model_without_a_tool_call(setup: tuple[Setup, Server, dict[str, str]]) -> None:
    clients, _, _ = setup
    start = len(clients.model.requests)
    clients.claude("When does the staging database password rotate?")
    assert_briefed_and_recalled(json.dumps(clients.model.requests[start]))
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
