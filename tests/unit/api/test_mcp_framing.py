"""The MCP front's framing of contract failures, without a server: the code and message first,
retry advice for the 429 family, the contract body kept as structured content."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from api.mcp_tools import build_mcp_server, failure, success
from graph.core.contract import ForgetMemoryRequest
from graph.core.workspace import resolve_workspace


def test_a_throttle_becomes_a_tool_error_with_retry_advice() -> None:
    body = {
        "success": False,
        "error": "RATE_LIMIT_EXCEEDED",
        "errorCode": "RATE_LIMIT_EXCEEDED",
        "message": "429_AGENT_THROTTLED: at most 2 retrievals per minute; retry in 39s",
        "retryAfterSec": 39,
    }
    result = failure(body)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("RATE_LIMIT_EXCEEDED: 429_AGENT_THROTTLED: at most 2") and "wait 39s" in text
    assert result.structured_content == {
        **body,
        "retryable": "429_AGENT_THROTTLED",
        "retryAdvice": result.structured_content["retryAdvice"],  # type: ignore[index]
    }


def test_backlog_and_plain_failures() -> None:
    backlog = failure({"success": False, "error": "Background queue full", "errorCode": "429_FLOWBABY_BACKLOG"})
    assert backlog.structured_content["retryable"] == "429_FLOWBABY_BACKLOG"  # type: ignore[index]
    invalid = failure({"success": False, "error": 'Field "topic" is required', "errorCode": "INVALID_PAYLOAD"})
    assert invalid.content[0].text == 'INVALID_PAYLOAD: Field "topic" is required'  # type: ignore[union-attr]
    assert "retryable" not in invalid.structured_content  # type: ignore[operator]


def test_success_keeps_the_reply_as_structured_content() -> None:
    result = success({"success": True, "summary_id": "t"}, "text")
    assert not result.is_error and result.structured_content == {"success": True, "summary_id": "t"}
    assert result.content[0].text == "text"  # type: ignore[union-attr]


def test_team_database_faults_carry_retry_advice() -> None:
    for code, wait in (("DATABASE_UNAVAILABLE", 5), ("DATABASE_BUSY", 2)):
        result = failure({"success": False, "error": "…", "errorCode": code, "retryAfterSec": wait})
        assert result.is_error and result.structured_content["retryable"] == f"503_{code}"  # type: ignore[index]
        assert f"wait {wait}s" in result.structured_content["retryAdvice"]  # type: ignore[index]


def test_agents_get_a_forget_tool_only_when_the_user_turns_it_on(tmp_path: Path, monkeypatch: Any) -> None:
    """FLOWBABY_AGENT_FORGET=1 in the workspace: the tool is listed, marked destructive (clients then
    ask the user to confirm each call); a filter is refused; without the setting it does not exist."""
    calls: list[tuple[ForgetMemoryRequest, str | None]] = []

    class Service:
        paths = resolve_workspace(tmp_path)

        async def forget_memory(self, request: ForgetMemoryRequest, *, agent_name: str | None = None) -> dict[str, Any]:
            calls.append((request, agent_name))
            return {"success": True, "versions": 1}

    async def tools(server: Any) -> dict[str, Any]:
        return {tool.name: tool for tool in await server.list_tools()}

    assert "flowbaby_forgetMemory" not in asyncio.run(tools(build_mcp_server(Service())))  # type: ignore[arg-type]
    Service.paths.env_file.write_text("FLOWBABY_AGENT_FORGET=1\n")  # a cloned repository cannot turn it on
    assert "flowbaby_forgetMemory" not in asyncio.run(tools(build_mcp_server(Service())))  # type: ignore[arg-type]
    monkeypatch.setenv("FLOWBABY_TRUSTED_WORKSPACES", str(tmp_path))  # the user trusts the workspace
    server = build_mcp_server(Service())  # type: ignore[arg-type]
    forget = asyncio.run(tools(server))["flowbaby_forgetMemory"]
    assert forget.annotations.destructive_hint is True and forget.annotations.read_only_hint is False
    assert set(forget.input_schema["properties"]) == {"topicId", "version", "dryRun"}
    refused = asyncio.run(server.handlers["flowbaby_forgetMemory"]({"filter": {}}, "agent"))
    assert refused.is_error and refused.structured_content["fields"] == ["filter"]  # type: ignore[index]
    done = asyncio.run(server.handlers["flowbaby_forgetMemory"]({"topicId": "t"}, "agent"))
    assert not done.is_error and calls == [(ForgetMemoryRequest(topicId="t"), "agent")]
