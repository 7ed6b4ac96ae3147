"""Real Codex CLI 0.169.0 (`codex exec`, offline against the loopback Responses-API fake), configured
only by `flowbaby install --client codex --scope user` (its CODEX_HOME is the test's own; the fake
model's provider is the only config the test writes itself). A running `flowbaby serve`
holds two memories: the hooks put them in the model's first request with no tool call, a tool call
the fake scripts stores a memory over MCP, a decision in the session is captured at its end, and the
rollout files Codex wrote are indexed and searchable through Vapor's API.

Codex runs a hook only once the user trusted it (`/hooks` in its TUI); `codex exec` here passes
`--dangerously-bypass-hook-trust` in place of that one interactive step."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_http_api import Server
from tests.support.agent_cli import (
    CODEX,
    STORED_MEMORY,
    WEBHOOKS,
    AgentProject,
    assert_briefed_and_recalled,
    assert_captured_and_searchable,
    until_stored,
)
from tests.support.client_env import flowbaby_install, isolated_env
from tests.support.fake_responses_model import FakeResponsesModel
from tests.support.npm_tools import npm_tool

pytestmark = pytest.mark.slow


class Codex(AgentProject[FakeResponsesModel]):
    client, fake = CODEX, FakeResponsesModel

    def environment(self) -> dict[str, str]:
        self.home = self.root / "codex"
        self.home.mkdir()
        (self.home / "config.toml").write_text(
            '# the fake model: the only settings not written by flowbaby install\nmodel = "fake-model"\n'
            'model_provider = "fake"\n\n[model_providers.fake]\nname = "Fake"\n'
            f'base_url = "{self.model.url}"\nwire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n'
        )
        return isolated_env(self.root) | {"CODEX_HOME": str(self.home), "FAKE_MODEL_KEY": "x"}

    def exec(self, message: str) -> None:
        self.run("exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", message)


@pytest.fixture(scope="module")
def codex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Codex, Server, dict[str, str]]]:
    with Codex.serving(tmp_path_factory.mktemp("codex"), "--client", "codex", "--scope", "user") as running:
        yield running


def test_codex_mcp_list_shows_flowbaby(codex: tuple[Codex, Server, dict[str, str]]) -> None:
    client, _, _ = codex
    listed = client.run("mcp", "list", "--json").stdout
    servers = {s["name"]: s for s in json.loads(listed)}
    assert str(client.project) in json.dumps(servers["flowbaby"])
    assert "fake-model" in (client.home / "config.toml").read_text()  # the user's own settings kept


def test_stored_memories_reach_the_first_request_without_a_tool_call(
    codex: tuple[Codex, Server, dict[str, str]],
) -> None:
    client, _, _ = codex
    start = len(client.model.requests)
    client.exec("When does the staging database password rotate?")
    assert_briefed_and_recalled(json.dumps(client.model.requests[start]))
    assert '"function_call' not in json.dumps(client.model.requests[start:])


def test_a_scripted_tool_call_stores_a_memory(codex: tuple[Codex, Server, dict[str, str]]) -> None:
    client, server, headers = codex
    client.model.script.append(("tool", "flowbaby_storeMemory", STORED_MEMORY))
    start = len(client.model.requests)
    client.exec("Store our decision about the ledger export cadence in flowbaby.")
    names = [json.dumps(body.get("tools")) for body in client.model.requests[start:]]
    assert any("flowbaby_storeMemory" in tools for tools in names), "flowbaby's tools were offered"
    assert any("operationId" in output for output in client.model.tool_outputs()), (
        client.model.tool_outputs()
    )  # answered
    until_stored(server, headers, f"the memory the tool call stored is retrieved: {client.model.tool_outputs()}")


def test_the_sessions_decision_is_captured_and_its_rollout_searchable(
    codex: tuple[Codex, Server, dict[str, str]],
) -> None:
    client, server, headers = codex
    client.exec(f"{WEBHOOKS} Note it for the team.")
    assert_captured_and_searchable(client, server, headers, "codex")


def test_a_project_install_is_read_once_the_project_is_trusted(tmp_path: Path) -> None:
    """Project scope: `.codex/config.toml`, which Codex reads only for a project the user trusted."""
    project, home = tmp_path / "project", tmp_path / "codex"
    project.mkdir()
    home.mkdir()
    env = isolated_env(tmp_path) | {"CODEX_HOME": str(home), "PWD": str(project)}
    flowbaby_install(project, env, "--client", "codex")

    def listed() -> str:
        command = [str(npm_tool(*CODEX)), "mcp", "list"]
        done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "flowbaby" not in listed()
    (home / "config.toml").write_text(f'[projects."{project}"]\ntrust_level = "trusted"\n')  # the user's trust
    assert f"mcp --workspace {project}" in listed()
    assert (project / ".codex" / "hooks.json").is_file()
