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
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_http_api import Server
from tests.support.agent_cli import (
    DECISION,
    FACT,
    GEMINI,
    STORED_DECISION,
    STORED_TOPIC,
    WEBHOOKS,
    captured,
    retrieve,
    served,
    session_search,
    until,
)
from tests.support.client_env import flowbaby_install, isolated_env
from tests.support.fake_gemini_model import FakeGeminiModel
from tests.support.npm_tools import npm_tool

pytestmark = pytest.mark.slow

MODEL = "gemini-2.5-flash"
"""A named model: with the default ("auto") Gemini CLI first asks a routing model, which the fake is not."""


class Gemini:
    def __init__(self, root: Path, model: FakeGeminiModel) -> None:
        self.project, self.model = root / "project", model
        self.project.mkdir()
        (self.project / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")  # nothing here reads the graph
        self.env = isolated_env(root) | {
            "GEMINI_API_KEY": "offline-test",
            "GOOGLE_GEMINI_BASE_URL": model.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }
        user = root / "home" / ".gemini"
        user.mkdir(parents=True)
        (user / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [str(npm_tool(*GEMINI)), *args],
            cwd=self.project,
            env={**self.env, "PWD": str(self.project)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout + done.stderr

    def ask(self, message: str, *flags: str) -> None:
        self.run("-m", MODEL, *flags, "-p", message)


@pytest.fixture(scope="module")
def gemini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Gemini, Server, dict[str, str]]]:
    with FakeGeminiModel() as model:
        gemini = Gemini(tmp_path_factory.mktemp("gemini"), model)
        flowbaby_install(gemini.project, gemini.env, "--client", "gemini")
        with served(gemini.project, gemini.env) as (server, headers):
            yield gemini, server, headers


def test_gemini_mcp_list_shows_flowbaby(gemini: tuple[Gemini, Server, dict[str, str]]) -> None:
    client, _, _ = gemini
    # `gemini mcp list` also connects to each server, with a deadline of its own that a loaded machine's
    # `flowbaby mcp` start can pass: up to three tries, as a user would look again
    for _ in range(3):
        listed = client.run("mcp", "list")
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
    first = json.dumps(sent[0])
    assert DECISION in first, "the session-start briefing holds the current decision"
    assert "Flowbaby recalled for this prompt" in first and FACT in first, "the prompt's recall holds the fact"
    assert '"functionCall"' not in json.dumps(sent)


def test_a_scripted_tool_call_stores_a_memory(gemini: tuple[Gemini, Server, dict[str, str]]) -> None:
    client, server, headers = gemini
    memory = {
        "topic": STORED_TOPIC,
        "context": "The finance team needs fresher numbers than the hourly export gave them during close.",
        "decisions": [STORED_DECISION],
    }
    client.model.script.append(("tool", "flowbaby_storeMemory", memory))
    client.ask("Store our decision about the ledger export cadence in flowbaby.", "--yolo")
    assert any("operationId" in r for r in client.model.function_responses()), client.model.function_responses()

    def stored() -> bool:
        return any(
            STORED_DECISION in json.dumps(e) for e in retrieve(server, headers, "how often is the ledger exported")
        )

    until(stored, "the memory the tool call stored is retrieved")


def test_the_sessions_decision_is_captured_and_its_chat_searchable(
    gemini: tuple[Gemini, Server, dict[str, str]],
) -> None:
    client, server, headers = gemini
    client.ask(f"{WEBHOOKS} Note it for the team.")
    entry = captured(client.project, client.env, "gemini")
    assert any("retry outgoing webhooks 6 times" in d for d in entry["decisions"])
    results = session_search(server, headers, "gemini", "how many times do we retry outgoing webhooks")
    assert results and "retry outgoing webhooks 6 times" in results[0]["chunk_text"]
    every = json.dumps(session_search(server, headers, "gemini", "staging database password ops vault"))
    assert "Flowbaby workspace memory" not in every  # the injected briefing is not indexed as conversation
