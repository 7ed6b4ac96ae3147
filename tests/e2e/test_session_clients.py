"""Session memory on sessions written by the real clients: OpenCode (`opencode-ai` 1.18.33) and
Claude Code (`@anthropic-ai/claude-code` 2.1.332), both driven offline by loopback fake models.

One module-scoped set of sessions and one `flowbaby serve` are shared by every test here: the
agent workflow of Vapor's API (current session, status, stop while it cannot search, search,
context) on both sources, a new turn picked up by the watcher, workspace-wide search, the bridge
methods and the documented errors."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bridge.client import BridgeClient
from tests.integration.test_http_api import Server
from tests.support.client_env import CLAUDE_CODE, OPENCODE, isolated_env, opencode_config, run_client
from tests.support.fake_agent_model import FakeAgentModel
from tests.support.fake_anthropic_model import FakeAnthropicModel

pytestmark = pytest.mark.slow

SECRET = "ghp_" + "Q7" * 18
FACTS = {
    "opencode": "By the way, the flaky test is test_ledger_rollover: it only fails when TZ is Pacific/Chatham.",
    "claude-code": "Remember that the staging database password rotates every Friday at 17:00 UTC.",
}
QUESTIONS = {
    "opencode": "which timezone makes the ledger rollover test fail",
    "claude-code": "when does the staging database password rotate",
}


class Clients:
    def __init__(self, root: Path, opencode: FakeAgentModel, claude: FakeAnthropicModel) -> None:
        self.project = root / "project"
        (self.project / "sub").mkdir(parents=True)
        self.opencode_model, self.claude_model = opencode, claude
        self.env = isolated_env(root, claude_url=claude.url)
        opencode_config(self.project, opencode.url)

    def opencode(self, message: str, *flags: str) -> None:
        run_client(OPENCODE, ["run", *flags, message], self.project, self.env)

    def claude(self, message: str, *flags: str) -> None:
        run_client(CLAUDE_CODE, ["-p", message, "--allowedTools", "Bash", *flags], self.project, self.env)


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clients]:
    with FakeAgentModel() as opencode_model, FakeAnthropicModel() as claude_model:
        clients = Clients(tmp_path_factory.mktemp("sessions"), opencode_model, claude_model)
        opencode_model.script.append(("bash", {"command": "echo ledger-check-7781", "description": "check"}))
        clients.opencode(f"{FACTS['opencode']} Deploy token {SECRET}. Now run the ledger check.")
        claude_model.script.append(("tool", "Bash", {"command": "echo rotation-check-5120", "description": "check"}))
        clients.claude(f"{FACTS['claude-code']} Then run the rotation check.")
        yield clients


@pytest.fixture(scope="module")
def api(clients: Clients) -> Iterator[tuple[str, dict[str, str]]]:
    env = {k: v for k, v in clients.env.items() if k.startswith(("XDG_", "CLAUDE_", "HOME"))}
    env |= {"FLOWBABY_SESSIONS_AUTO_IMPORT": "0", "FLOWBABY_SESSIONS_WATCH_SEC": "0.5"}
    server = Server(clients.project, "--rate-limit-per-minute", "0", env=env)  # session searches are throttled
    server.wait_ready()
    token = (clients.project / ".flowbaby" / "api_token").read_text().strip()
    yield server.url, {"Authorization": f"Bearer {token}"}
    server.stop()


def get(api: tuple[str, dict[str, str]], path: str, **params: Any) -> httpx.Response:
    return httpx.get(api[0] + path, params=params, headers=api[1], timeout=120)


@pytest.mark.parametrize("source", ["opencode", "claude-code"])
def test_vapor_agent_workflow_on_a_real_session(api: tuple[str, dict[str, str]], clients: Clients, source: str) -> None:
    current = get(api, "/api/agent/current-session", cwd=str(clients.project / "sub"), source=source).json()
    assert set(current) == {"source", "session_id", "title", "directory", "updated_at", "message_count", "index_status"}
    assert current["source"] == source and current["directory"] == str(clients.project)
    assert current["message_count"] >= 3 and current["updated_at"].endswith("Z")
    sid = current["session_id"]
    status = get(api, "/api/agent/index/status", session_id=sid).json()
    assert status["status"] == "missing" and status["can_search"] is False  # the agent stops and shows the message
    assert f"flowbaby sessions import {sid}" in status["message"]

    imported = httpx.post(f"{api[0]}/api/agent/sessions/{sid}/import", headers=api[1], timeout=120).json()
    status = imported["index_status"]
    assert (status["status"], status["can_search"], status["coverage"]) == ("ready", True, 1.0)
    assert status["chunks"] == status["vectors"] > 0 and status["model"] == "MiniLM all-MiniLM-L6-v2"

    found = get(api, "/api/agent/search", q=QUESTIONS[source], session_id=sid, limit=5).json()
    assert found["count"] == len(found["results"]) > 0
    best = found["results"][0]
    assert set(best) >= {"embedding_id", "distance", "chunk_text", "turn_source_id", "session_id", "chunk_index"}
    assert FACTS[source].split(":")[0][:30] in best["chunk_text"] and best["distance"] < 0.6
    assert best["embedding_id"] == f"turn:{sid}:{best['turn_source_id']}:{best['chunk_index']}"
    same = get(api, f"/api/agent/sessions/{sid}/search", q=QUESTIONS[source], limit=5).json()
    assert same["results"][0]["embedding_id"] == best["embedding_id"]
    every = "\n".join(
        r["chunk_text"] for r in get(api, f"/api/agent/sessions/{sid}/search", q="token", limit=50).json()["results"]
    )
    assert SECRET not in every and "check" in every  # the tool call was indexed, the secret never

    context = get(api, f"/api/agent/sessions/{sid}/context", q=QUESTIONS[source], context_turns=2).json()
    turns = context["results"][0]["turns"]
    assert [t["is_hit"] for t in turns].count(True) == 1 and turns[0]["role"] == "user"
    assert any(t["role"] == "assistant" for t in turns) and [t["created_at"] for t in turns] == sorted(
        t["created_at"] for t in turns
    )


@pytest.mark.parametrize("source", ["opencode", "claude-code"])
def test_a_new_turn_is_picked_up_without_a_click(
    api: tuple[str, dict[str, str]], clients: Clients, source: str
) -> None:
    sid = get(api, "/api/agent/current-session", source=source).json()["session_id"]
    if get(api, "/api/agent/index/status", session_id=sid).json()["status"] == "missing":
        httpx.post(f"{api[0]}/api/agent/sessions/{sid}/import", headers=api[1], timeout=120)
    fact = f"Late note for {source}: the canary region is eu-north-1 since the outage."
    if source == "opencode":
        clients.opencode(fact, "--continue")
    else:
        clients.claude(fact, "--continue")
    deadline = time.monotonic() + 20
    while True:
        status = get(api, "/api/agent/index/status", session_id=sid).json()
        hits = get(api, f"/api/agent/sessions/{sid}/search", q="which region is the canary in", limit=3).json()[
            "results"
        ]
        if status["status"] == "ready" and any("eu-north-1" in h["chunk_text"] for h in hits):
            break
        assert time.monotonic() < deadline, (status, hits)
        time.sleep(0.5)


def test_workspace_wide_search_list_bridge_and_errors(api: tuple[str, dict[str, str]], clients: Clients) -> None:
    for source in ("opencode", "claude-code"):
        sid = get(api, "/api/agent/current-session", source=source).json()["session_id"]
        httpx.post(f"{api[0]}/api/agent/sessions/{sid}/update", headers=api[1], timeout=120).raise_for_status()
    listed = get(api, "/api/agent/sessions").json()
    assert {s["source"] for s in listed["sessions"]} == {"opencode", "claude-code"}
    assert all(s["index_status"]["can_search"] for s in listed["sessions"])
    both = get(
        api, "/api/agent/sessions/search", q="staging password rotation and the flaky timezone test", limit=10
    ).json()
    assert {r["source"] for r in both["results"]} == {"opencode", "claude-code"}

    assert get(api, "/api/agent/sessions/ses_nope/search", q="x").status_code == 404
    assert get(api, "/api/agent/index/status", session_id="ses_nope").status_code == 404
    assert get(api, "/api/agent/current-session", cwd="/").status_code == 404  # another workspace
    missing_q = get(api, f"/api/agent/sessions/{listed['sessions'][0]['session_id']}/search")
    assert missing_q.status_code == 400 and missing_q.json()["errorCode"] == "INVALID_REQUEST"
    assert httpx.post(f"{api[0]}/api/agent/sessions/ses_nope/import", headers=api[1]).status_code == 404
    assert "counts" in get(api, "/api/agent/index/status").json()  # without a session: the memory index, as before

    assert "eu-north-1" in asyncio.run(_mcp_search(api))

    with BridgeClient(clients.project, env={**os.environ, "FLOWBABY_SESSIONS_WATCH": "0"}) as bridge:  # via the owner
        reply = bridge.result("sessionsSearchAll", {"q": "canary region", "limit": 3})
        assert "eu-north-1" in reply["results"][0]["chunk_text"]
        assert bridge.result("sessionsStatus", {"session_id": "nope"})["errorCode"] == "NOT_FOUND"


async def _mcp_search(api: tuple[str, dict[str, str]]) -> str:
    """flowbaby_searchSessions over /mcp, with the SDK's own client."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=api[1], timeout=120) as http,
        Client(streamable_http_client(f"{api[0]}/mcp", http_client=http)) as client,
    ):
        found = await client.call_tool("flowbaby_searchSessions", {"query": "canary region", "limit": 3})
        assert not found.is_error
        return found.content[0].text  # type: ignore[union-attr]
