"""Real Gemini CLI 0.61.0 (`gemini -p`, offline against the loopback Gemini-API fake), configured only
by `flowbaby install --client gemini` in the project (the fake model's key and auth type are the test's
own settings). A running `flowbaby serve` holds two memories: the hooks put them in the model's first
request with no tool call, a tool call the fake scripts stores a memory over MCP, a decision in the
session is captured at its end, and the chat files Gemini wrote are indexed and searchable.

Gemini CLI reads a project's settings only in a trusted folder: GEMINI_CLI_TRUST_WORKSPACE=true stands
in for the user's trust, as its docs say for headless runs; `--yolo` lets the scripted tool call run
without the confirmation a user gives."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.integration.test_http_api import Server
from tests.support.agent_cli import (
    GEMINI,
    STORED_MEMORY,
    WEBHOOKS,
    AgentProject,
    assert_briefed_and_recalled,
    assert_captured_and_searchable,
    until_stored,
)
from tests.support.client_env import isolated_env
from tests.support.fake_gemini_model import FakeGeminiModel

pytestmark = pytest.mark.slow

MODEL = "gemini-2.5-flash"
"""A named model: with the default ("auto") Gemini CLI first asks a routing model, which the fake is not."""


class Gemini(AgentProject[FakeGeminiModel]):
    client, fake = GEMINI, FakeGeminiModel

    def environment(self) -> dict[str, str]:
        env = isolated_env(self.root)
        user = self.root / "home" / ".gemini"
        user.mkdir(parents=True)
        (user / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
        trust = {"GEMINI_CLI_TRUST_WORKSPACE": "true"}
        return env | {"GEMINI_API_KEY": "offline-test", "GOOGLE_GEMINI_BASE_URL": self.model.url} | trust

    def ask(self, message: str, *flags: str) -> None:
        self.run("-m", MODEL, *flags, "-p", message)


@pytest.fixture(scope="module")
def gemini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gemini, Server, dict[str, str]]]:
    with Gemini.serving(tmp_path_factory.mktemp("gemini"), "--client", "gemini") as running:
        yield running


def test_gemini_mcp_list_shows_flowbaby(gemini: tuple[Gemini, Server, dict[str, str]]) -> None:
    client, _, _ = gemini
    # `gemini mcp list` also connects to each server, with a deadline of its own that a loaded machine's
    # `flowbaby mcp` start can pass: up to three tries, as a user would look again
    for _ in range(3):
        done = client.run("mcp", "list")
        listed = done.stdout + done.stderr
        line = next(line for line in listed.splitlines() if "flowbaby" in line)
        assert f"--workspace {client.project}" in line, listed
        if "Connected" in line:
            break
    assert "Connected" in line, listed


def test_stored_memories_reach_the_first_request_without_a_tool_call(
    gemini: tuple[Gemini, Server, dict[str, str]],
) -> None:
    client, _, _ = gemini
    start = len(client.model.with_tools())
    client.ask("When does the staging database password rotate?")
    sent = client.model.with_tools()[start:]
    assert_briefed_and_recalled(json.dumps(sent[0]))
    assert '"functionCall"' not in json.dumps(sent)


def test_a_scripted_tool_call_stores_a_memory(gemini: tuple[Gemini, Server, dict[str, str]]) -> None:
    client, server, headers = gemini
    client.model.script.append(("tool", "flowbaby_storeMemory", STORED_MEMORY))
    client.ask("Store our decision about the ledger export cadence in flowbaby.", "--yolo")
    assert any("operationId" in r for r in client.model.function_responses()), client.model.function_responses()
    until_stored(server, headers, "the memory the tool call stored is retrieved")


def test_the_sessions_decision_is_captured_and_its_chat_searchable(
    gemini: tuple[Gemini, Server, dict[str, str]],
) -> None:
    client, server, headers = gemini
    client.ask(f"{WEBHOOKS} Note it for the team.")
    assert_captured_and_searchable(client, server, headers, "gemini")
