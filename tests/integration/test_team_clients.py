"""Local fronts on a team server: a real bridge and a real `flowbaby mcp` whose workspace points at a
real `flowbaby serve` (uvicorn on loopback) forward every call there, with the same replies and
error codes as on a local folder; a wrong token is refused at start with UNAUTHORIZED."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from bridge.client import PROJECT_ROOT
from tests.conftest import summary
from tests.integration.test_http_api import serve  # noqa: F401 (fixture)
from tests.support.commands import run_bridge_to_exit

pytestmark = pytest.mark.slow
TOKEN = "team-token-0123456789"


def _token_file(folder: Path, token: str = TOKEN, mode: int = 0o600, name: str = "flowbaby.token") -> Path:
    path = folder / name
    path.write_text(token + "\n")
    path.chmod(mode)
    return path


def _client_env(url: str, token_file: Path) -> dict[str, str]:
    """The laptop names the server's namespace: the server here serves the folder `team`, and a
    server answers a request for another namespace with an error (contract 15.11)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    return {
        **env,
        "FLOWBABY_SERVER_URL": url,
        "FLOWBABY_SERVER_TOKEN_FILE": str(token_file),
        "FLOWBABY_SERVER_NAMESPACE": "team",
    }


def test_a_bridge_forwards_to_a_team_server(spawn, serve, tmp_path: Path) -> None:  # noqa: F811
    team = tmp_path / "team"
    team.mkdir()
    server = serve(team, env={"FLOWBABY_API_TOKEN": TOKEN, "FLOWBABY_MAX_QUEUED": "20"})
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    client = spawn(laptop, env=_client_env(server.url, _token_file(tmp_path)))

    staged = client.result("ingestForAgent", summary())
    assert staged["staged"] is True and staged["ingestion_metrics"]["version"] == 1
    stored = client.result("storeMemory", {"topic": "Billing retries", "context": "Retry the ledger job twice."})
    assert stored["success"] is True and stored["summary_id"]
    assert not (laptop / ".flowbaby" / "memories.sqlite").exists()  # nothing stays on the laptop
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{server.url}/api/health", headers=headers).json()["memories"] == 2

    entries = client.result("retrieveForAgent", {"query": "Redis cache TTL", "maxResults": 3})["entries"]
    assert entries[0]["topicId"] == "redis-cache"
    markdown = client.result("retrieveMemory", {"query": "Redis cache TTL"})
    assert markdown["entries"][0]["topicId"] == "redis-cache" and "Redis" in markdown["markdown"]

    # Errors come back with the codes and shapes a local bridge gives.
    bad = client.result("ingestForAgent", {"topic": "x"})
    assert bad["success"] is False and bad["errorCode"] == "INVALID_PAYLOAD" and "context" in bad["error"]
    empty = client.result("retrieveForAgent", {"query": " "})
    assert (empty["errorCode"], empty["error"]) == ("INVALID_REQUEST", "INVALID_REQUEST")
    assert client.result("backgroundStatus", {"operationId": "op_never"})["status"] == "unknown"
    sessions = client.result("sessionsList", {})
    assert sessions["errorCode"] == "FLOWBABY_ERROR" and "not available" in sessions["error"]

    # The server builds the graph; the bridge's notification comes from polling it.
    ended = {client.wait_notification(300)["params"]["operationId"] for _ in range(2)}
    assert ended == {staged["operationId"], stored["operationId"]}
    assert client.wait_idle(60)["counts"].get("completed") == 2


def test_a_wrong_token_is_refused_at_start(serve, tmp_path: Path) -> None:  # noqa: F811
    team = tmp_path / "team"
    team.mkdir()
    server = serve(team, env={"FLOWBABY_API_TOKEN": TOKEN})
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    for token_file, code in (
        (_token_file(tmp_path, "not-the-token", name="wrong.token"), "UNAUTHORIZED"),
        (_token_file(tmp_path, TOKEN, 0o644, name="shared.token"), "FLOWBABY_ERROR"),  # readable by others: never sent
    ):
        bridge = run_bridge_to_exit(laptop, {**_client_env(server.url, token_file), "PYTHONPATH": str(PROJECT_ROOT)})
        first = json.loads(bridge.stdout.splitlines()[0])
        assert bridge.returncode == 3 and first["method"] == "bridgeUnavailable", bridge.stderr
        assert first["params"]["errorCode"] == code, first
        assert TOKEN.encode() not in bridge.stdout + bridge.stderr


async def _mcp_session(laptop: Path, env: dict[str, str]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from flowbaby.cli import main; main()", "mcp", "--workspace", str(laptop)],
        env={**env, "PYTHONPATH": str(PROJECT_ROOT)},
        cwd="/",
    )
    async with Client(params, client_info=Implementation(name="probe-agent", version="1.0")) as client:
        stored = await client.call_tool(
            "flowbaby_storeMemory",
            {"topic": "Deploy freeze", "context": "No deploys on Fridays after the billing outage of March."},
        )
        assert not stored.is_error, stored
        found = await client.call_tool("flowbaby_retrieveMemory", {"query": "deploy freeze Fridays"})
        assert not found.is_error and "Deploy freeze" in found.content[0].text  # type: ignore[union-attr]
        bad = await client.call_tool("flowbaby_retrieveMemory", {"query": ""})
        assert bad.is_error and bad.structured_content["errorCode"] == "INVALID_REQUEST"  # type: ignore[index]


def test_the_mcp_server_forwards_to_a_team_server(serve, tmp_path: Path) -> None:  # noqa: F811
    team = tmp_path / "team"
    team.mkdir()
    server = serve(team, env={"FLOWBABY_API_TOKEN": TOKEN, "FLOWBABY_BUILD_GRAPH": "0"})  # reads no graph
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    asyncio.run(_mcp_session(laptop, _client_env(server.url, _token_file(tmp_path))))
    health = httpx.get(f"{server.url}/api/health", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert health["memories"] == 1
    assert not (laptop / ".flowbaby" / "memories.sqlite").exists()
