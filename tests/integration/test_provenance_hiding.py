"""Issue 58 item 5 through real processes: an agent cannot hide a memory without forgetting it. A version
stored with `metadata.status: "Superseded"` on a topic's id would empty the topic from the briefing and
retrieval with nothing to restore; every agent-facing front (a real MCP client over stdio, the bridge, the
HTTP agent routes with the bearer token) is refused INVALID_PAYLOAD naming `metadata.status`, and the
memory stays current."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.integration.test_http_api import serve  # noqa: F401 (fixture)
from tests.support.commands import run_flowbaby

pytestmark = pytest.mark.slow

DECISION = "Deploy the billing service to Fly.io from the main branch"
HIDE = {"topic": "Deploys", "context": "Nothing to see.", "metadata": {"topicId": "deploys", "status": "Superseded"}}


def test_no_agent_front_stores_a_superseded_version(serve, tmp_path: Path) -> None:  # noqa: F811
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {
        **os.environ,
        "FLOWBABY_USER_STORE": str(tmp_path / "user"),
        "FLOWBABY_BUILD_GRAPH": "0",
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    server = serve(workspace, "--rate-limit-per-minute", "0", env={k: env[k] for k in env if k.startswith("FLOWBABY")})
    headers = {"Authorization": f"Bearer {(workspace / '.flowbaby' / 'api_token').read_text().strip()}"}

    def post(path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{server.url}{path}", headers=headers, json=body, timeout=120)

    deploys = {"topic": "Deploys", "context": "Deploys.", "decisions": [DECISION], "metadata": {"topicId": "deploys"}}
    assert post("/api/agent/ingest", deploys).status_code == 202

    for path in ("/api/agent/memories", "/api/agent/ingest"):
        refused = post(path, HIDE)
        assert refused.status_code == 400, refused.text
        assert (refused.json()["errorCode"], refused.json()["fields"]) == ("INVALID_PAYLOAD", ["metadata.status"])

    with BridgeClient(workspace, env=env) as bridge:  # through the server, which owns the workspace
        for method in ("storeMemory", "ingestForAgent"):
            refused = bridge.result(method, HIDE)
            assert (refused["errorCode"], refused["fields"]) == ("INVALID_PAYLOAD", ["metadata.status"]), refused

    async def agent() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-c", "from flowbaby.cli import main; main()", "mcp", "--workspace", str(workspace)],
            env=env,
            cwd="/",
        )
        async with Client(params, client_info=Implementation(name="probe-agent", version="1.0")) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            status = tools["flowbaby_storeMemory"].input_schema["$defs"]["StoreMetadata"]["properties"]["status"]
            assert "Superseded" not in json.dumps(status)  # the schema offers only what it takes
            refused = await client.call_tool("flowbaby_storeMemory", HIDE)
            said = refused.content[0].text  # type: ignore[union-attr]
            assert refused.is_error and "INVALID_PAYLOAD" in said and "metadata.status" in said, said
            found = await client.call_tool("flowbaby_retrieveMemory", {"query": "where is billing deployed"})
            assert "topicId deploys, Active" in found.content[0].text  # type: ignore[union-attr]

    asyncio.run(agent())
    shown = run_flowbaby("memories", "show", "deploys", "--workspace", str(workspace), env=env)
    versions = json.loads(shown.stdout)["versions"]
    assert [(v["version"], v["status"]) for v in versions] == [(1, "Active")]
