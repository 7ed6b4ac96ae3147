"""The MCP front with the `mcp` SDK's own client: `flowbaby mcp` as a subprocess over stdio,
and /mcp on a real uvicorn server (`flowbaby serve`) behind the bearer token."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation

from bridge.client import PROJECT_ROOT
from tests.integration.test_http_api import serve  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow

TOOLS = {
    "flowbaby_storeMemory",
    "flowbaby_retrieveMemory",
    "flowbaby_backgroundStatus",
    "flowbaby_indexStatus",
    "flowbaby_searchSessions",
    "flowbaby_getMemory",
}
CONTEXT = (
    "We moved the session cache from Memcached to Redis because billing/reconcile.py kept failing with "
    "E_LEDGER_LOCK when sessions were evicted under load."
)


def _stdio(workspace: Path, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from flowbaby.cli import main; main()", "mcp", "--workspace", str(workspace), *args],
        env={**os.environ, **(env or {}), "PYTHONPATH": str(PROJECT_ROOT)},
        cwd="/",  # clients may start servers anywhere: the workspace comes from --workspace
    )


def _audit(workspace: Path) -> list[dict[str, Any]]:
    lines = (workspace / ".flowbaby" / "agent_audit.log").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _error(result: CallToolResult) -> tuple[str, dict[str, Any]]:
    assert result.is_error, result
    assert result.structured_content is not None
    return result.content[0].text, result.structured_content  # type: ignore[union-attr]


async def _session(workspace: Path) -> None:
    params = _stdio(workspace, "--rate-limit-per-minute", "2")
    async with Client(params, client_info=Implementation(name="probe-agent", version="1.0")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        store, retrieve = tools["flowbaby_storeMemory"], tools["flowbaby_retrieveMemory"]
        assert store.input_schema["required"] == ["topic", "context"]
        assert retrieve.input_schema["required"] == ["query"]
        assert retrieve.input_schema["properties"]["maxResults"]["maximum"] == 10
        assert set(retrieve.input_schema["properties"]) == {
            "query",
            "maxResults",
            "maxTokens",
            "includeSuperseded",
            "includeSessions",
        }
        for phrase in ("300-1,500 characters", "0-5 decision", "Do not store trivial turns"):
            assert phrase in (store.description or "")
        assert "Retrieve before reasoning" in (retrieve.description or "")

        stored = await client.call_tool(
            "flowbaby_storeMemory",
            {
                "topic": "Redis caching decision",
                "context": CONTEXT,
                "decisions": ["Use Redis with a 15 minute TTL"],
                "metadata": {"topicId": "redis-cache", "planId": "plan-7"},
            },
        )
        assert not stored.is_error and stored.structured_content is not None
        assert stored.structured_content["summary_id"] == "redis-cache"
        operation = stored.structured_content["operationId"]

        # A contract failure is a tool error with the contract's code and message.
        text, body = _error(await client.call_tool("flowbaby_storeMemory", {"topic": " ", "context": "x"}))
        assert text.startswith("INVALID_PAYLOAD: ") and body["errorCode"] == "INVALID_PAYLOAD"
        text, body = _error(await client.call_tool("flowbaby_storeMemory", {"context": 5}))
        assert body["errorCode"] == "INVALID_PAYLOAD" and "topic" in text  # the SDK's schema check defers to ours
        text, body = _error(await client.call_tool("flowbaby_retrieveMemory", {"query": "cache", "maxResults": 11}))
        assert body["errorCode"] == "INVALID_REQUEST" and "maxResults" in text

        found = await client.call_tool("flowbaby_retrieveMemory", {"query": "Why did we move the session cache?"})
        # The markdown index alone: Claude Code would hand the model structured content alone, never the text.
        assert not found.is_error and found.structured_content is None and len(found.content) == 1
        assert "Use Redis with a 15 minute TTL [topicId redis-cache, " in found.content[0].text  # type: ignore[union-attr]

        await client.call_tool("flowbaby_retrieveMemory", {"query": "second"})  # 2 per minute: the limit
        text, body = _error(await client.call_tool("flowbaby_retrieveMemory", {"query": "third"}))
        assert body["errorCode"] == "RATE_LIMIT_EXCEEDED" and body["retryable"] == "429_AGENT_THROTTLED"
        assert "429_AGENT_THROTTLED" in text and "retry" in body["retryAdvice"].lower() and body["retryAfterSec"] >= 1

        # The session survives the 429: the next calls work.
        status = await client.call_tool("flowbaby_backgroundStatus", {"operationId": operation})
        assert not status.is_error and status.structured_content["operationId"] == operation  # type: ignore[index]
        index = await client.call_tool("flowbaby_indexStatus", {})
        assert not index.is_error and index.structured_content["counts"]["memories"] == 1  # type: ignore[index]
        shown = await client.call_tool("flowbaby_getMemory", {"topicIds": ["redis-cache", "nope", "redis-cache"]})
        whole = shown.content[0].text  # type: ignore[union-attr]
        assert not shown.is_error and shown.structured_content is None and whole.count(CONTEXT) == 1
        assert "plan plan-7" in whole and whole.endswith("No memory with topicId: nope")
        text, body = _error(await client.call_tool("flowbaby_getMemory", {"topicIds": []}))
        assert body["errorCode"] == "INVALID_PAYLOAD" and body["fields"] == ["topicIds"]

        replies = [
            await client.call_tool("flowbaby_storeMemory", {"topic": f"Note {i}", "context": CONTEXT}) for i in range(6)
        ]
        backlog = [r for r in replies if r.is_error]
        assert backlog, "six quick stores should fill the 5-operation backlog"
        text, body = _error(backlog[0])
        assert body["errorCode"] == "429_FLOWBABY_BACKLOG" and "429_FLOWBABY_BACKLOG" in text
        assert "retry" in body["retryAdvice"].lower()
        assert not (await client.call_tool("flowbaby_indexStatus", {})).is_error


def test_stdio_tools_errors_and_audit(workspace: Path) -> None:
    asyncio.run(_session(workspace))
    audit = _audit(workspace)
    assert {line["agentName"] for line in audit} == {"probe-agent"}
    commands = [line["command"] for line in audit]
    assert {"storeMemory", "retrieveMemory", "backgroundStatus", "indexStatus"} <= set(commands)
    codes = {line["errorCode"] for line in audit}
    assert {"INVALID_PAYLOAD", "INVALID_REQUEST", "RATE_LIMIT_EXCEEDED", "429_FLOWBABY_BACKLOG"} <= codes


async def _http_session(url: str, token: str, namespace: str | None = None) -> str:
    headers = {"Authorization": f"Bearer {token}"} | ({} if namespace is None else {"X-Flowbaby-Namespace": namespace})
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(
            streamable_http_client(url, http_client=http),
            client_info=Implementation(name="http-agent", version="1.0"),
        ) as client,
    ):
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
        stored = await client.call_tool("flowbaby_storeMemory", {"topic": "HTTP note", "context": CONTEXT})
        assert not stored.is_error
        found = await client.call_tool("flowbaby_retrieveMemory", {"query": "session cache eviction"})
        assert not found.is_error and "E_LEDGER_LOCK" in found.content[0].text  # type: ignore[union-attr]
        return str(found.content[0].text)  # type: ignore[union-attr]


def _imported(log: Path) -> set[str]:
    """The modules a process started with PYTHONPROFILEIMPORTTIME has imported so far (its stderr)."""
    lines = log.read_text(errors="replace").splitlines()
    return {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}


def test_streamable_http_behind_the_token(serve, workspace: Path) -> None:  # noqa: F811
    """/mcp is built at its first authorized request: the SDK's import is a third of a server's start."""
    env = {"FLOWBABY_API_TOKEN": "s3cret", "FLOWBABY_BUILD_GRAPH": "0", "PYTHONPROFILEIMPORTTIME": "1"}
    server = serve(workspace, env=env)  # reads no graph
    with httpx2.Client() as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        assert http.post(f"{server.url}/mcp", json=init).status_code == 401
        wrong = http.post(f"{server.url}/mcp", json=init, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.json()["errorCode"] == "UNAUTHORIZED"
    before = _imported(server.log)
    assert "api.app" in before and "mcp" not in before
    answer = asyncio.run(_http_session(f"{server.url}/mcp", "s3cret"))
    assert "mcp" in _imported(server.log)
    assert answer.startswith("Flowbaby memory, best first")
    assert {line["agentName"] for line in _audit(workspace)} == {"http-agent"}


async def _beside_a_bridge(workspace: Path, bridge: Any) -> None:
    async with Client(_stdio(workspace), client_info=Implementation(name="second-agent", version="1.0")) as client:
        stored = await client.call_tool("flowbaby_storeMemory", {"topic": "Redis caching decision", "context": CONTEXT})
        assert not stored.is_error, stored
        health = bridge.result("health")
        assert health["memories"] == 1  # staged by the bridge's process, the owner
        found = await client.call_tool("flowbaby_retrieveMemory", {"query": "Why did we move the session cache?"})
        assert not found.is_error and "E_LEDGER_LOCK" in found.content[0].text  # type: ignore[union-attr]
        bridge.close()  # the owner leaves mid-session
        again = await client.call_tool("flowbaby_storeMemory", {"topic": "Sentinel for Redis", "context": CONTEXT})
        assert not again.is_error, again
        index = await client.call_tool("flowbaby_indexStatus", {})
        assert not index.is_error and index.structured_content["counts"]["memories"] == 2  # type: ignore[index]


def test_a_second_client_works_through_a_bridge_and_takes_over(spawn, workspace: Path) -> None:
    bridge = spawn(workspace, env={**os.environ, "FLOWBABY_BUILD_GRAPH": "0"})  # reads no graph
    assert bridge.result("health")["success"]
    asyncio.run(_beside_a_bridge(workspace, bridge))
    audit = _audit(workspace)
    assert {line["agentName"] for line in audit if line["command"] == "storeMemory"} == {"second-agent"}
