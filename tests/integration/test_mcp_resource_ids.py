"""`memory://` resources of topicIds that hold `/`, `%`, `..` or look like a path (issue 58): every memory
`resources/list` names is readable at that URI, through a real `flowbaby mcp` subprocess and the `mcp` SDK's
client. The SDK decodes the URI's topicId once; flowbaby decoded it again (`a%2Fb` read as `a/b`), and the
SDK's file-path checks refused topicIds with `..` or a leading `/`, which are names here, not paths."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation

from tests.integration.test_mcp import _stdio

pytestmark = pytest.mark.slow

TOPIC_IDS = ["team/cache", "50%2Foff", "100% done", "../outside", "/rooted", "docs/../adr", "C:drive"]
ENV = {"FLOWBABY_BUILD_GRAPH": "0"}


async def _read_every_listed(workspace: Path) -> None:
    params = _stdio(workspace, "--rate-limit-per-minute", "0", env=ENV)
    async with Client(
        params, client_info=Implementation(name="resource-agent", version="1.0"), mode="legacy"
    ) as client:
        for n, topic_id in enumerate(TOPIC_IDS):
            memory = {
                "topic": f"Topic {n}",
                "context": f"Memory number {n} of {topic_id}.",
                "metadata": {"topicId": topic_id},
            }
            stored = await client.call_tool("flowbaby_storeMemory", memory)
            assert not stored.is_error, stored
        listed = {r.name: str(r.uri) for r in (await client.list_resources()).resources}
        assert sorted(listed) == sorted(TOPIC_IDS), listed
        failed = []
        for n, topic_id in enumerate(TOPIC_IDS):
            try:
                read = await client.read_resource(listed[topic_id])
            except MCPError as error:
                failed.append((topic_id, listed[topic_id], error.error.message))
                continue
            if f"Memory number {n} of {topic_id}." not in read.contents[0].text:  # type: ignore[union-attr]
                failed.append((topic_id, listed[topic_id], read.contents[0].text))  # type: ignore[union-attr]
        assert not failed, failed


def test_every_listed_memory_is_readable(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    asyncio.run(_read_every_listed(workspace))
