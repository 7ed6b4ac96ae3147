"""Issue 26 item 9: session searches pass the retrieval throttle. Against a real `flowbaby serve`
with one imported session: a burst of 30 workspace-wide session searches at limit=200 is cut
off at the per-minute budget with 429s in the retrieval error shape; then every session search
route, the memory search (the budget is shared) and the MCP tool are refused alike, while the
session metadata routes still answer."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from tests.integration.test_http_api import serve  # noqa: F401 (fixture)
from tests.support.session_fixtures import canary_session

pytestmark = pytest.mark.slow

BUDGET = 10
"""FLOWBABY_RETRIEVAL_RATE_PER_MINUTE's default."""


async def _mcp_search(url: str, token: str) -> tuple[bool, str]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), client_info=Implementation(name="a", version="1")) as c,
    ):
        reply = await c.call_tool("flowbaby_searchSessions", {"query": "canary region", "limit": 50})
        return reply.is_error, reply.content[0].text  # type: ignore[union-attr]


def test_session_searches_are_throttled(serve, workspace: Path, tmp_path: Path) -> None:  # noqa: F811
    db, sessions = canary_session(tmp_path / "opencode", workspace)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("FLOWBABY_")}, **sessions}
    server = serve(workspace, env=env)
    token = (workspace / ".flowbaby" / "api_token").read_text().strip()
    http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
    try:
        imported = http.post("/api/agent/sessions/ses_canary/import")  # an action: not a retrieval
        assert imported.status_code == 200 and imported.json()["index_status"]["status"] == "ready", imported.text

        def search(_: int) -> httpx.Response:
            return http.get("/api/agent/sessions/search", params={"q": "canary region", "limit": 200})

        with ThreadPoolExecutor(30) as pool:
            burst = list(pool.map(search, range(30)))
        answered = [r for r in burst if r.status_code == 200]
        refused = [r for r in burst if r.status_code == 429]
        print(f"burst of 30: {len(answered)} answered, {len(refused)} refused 429")
        assert len(answered) + len(refused) == 30, [r.status_code for r in burst]
        assert 1 <= len(answered) <= BUDGET and "eu-west-3" in answered[0].text
        for reply in refused:
            body = reply.json()
            assert body["success"] is False and body["errorCode"] in {"RATE_LIMIT_EXCEEDED", "QUEUE_FULL"}, body
            assert body["message"].startswith("429_AGENT_THROTTLED") and int(reply.headers["Retry-After"]) >= 1

        # The minute's budget is now spent (or is within a few answers of it): spend the rest.
        while http.get("/api/agent/sessions/search", params={"q": "canary"}).status_code == 200:
            pass
        for path, params in (
            ("/api/agent/sessions/search", {"q": "canary"}),
            ("/api/agent/search", {"session_id": "ses_canary", "q": "canary"}),
            ("/api/agent/search", {"cwd": str(workspace), "q": "canary"}),
            ("/api/agent/sessions/ses_canary/search", {"q": "canary"}),
            ("/api/agent/sessions/ses_canary/context", {"q": "canary"}),
            ("/api/agent/search", {"q": "redis"}),  # memory search: one budget for every retrieval
        ):
            reply = http.get(path, params=params)
            assert reply.status_code == 429 and reply.json()["errorCode"] == "RATE_LIMIT_EXCEEDED", (path, reply.text)
        is_error, message = asyncio.run(_mcp_search(f"{server.url}/mcp", token))
        assert is_error and message.startswith("RATE_LIMIT_EXCEEDED: 429_AGENT_THROTTLED"), message
        for path in ("/api/agent/sessions", "/api/agent/current-session", "/api/agent/index/status"):
            params = {"cwd": str(workspace)}
            assert http.get(path, params=params).status_code == 200, path  # metadata is not a retrieval
    finally:
        http.close()
        db.close()
