"""What an MCP client's model reads, and the MCP idioms besides tools (issue 48), through a real
`flowbaby mcp` subprocess and the `mcp` SDK's client on the initialize handshake (2025-11-25): the
retrieve answer as a short markdown index within ~400 tokens for three memories, the whole memory on
demand, each memory a `memory://` resource (paginated list, read, list_changed when memories change),
the briefing as a prompt, and `logging/setLevel`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation, LoggingMessageNotificationParams, ResourceListChangedNotification

from graph.search.token_budget import count_tokens
from tests.integration.test_mcp import _stdio

pytestmark = pytest.mark.slow

THREE = {
    "cache": "We moved the session cache from Memcached to Redis with a 15 minute TTL.",
    "retry": "The sync job retries three times with exponential backoff from 30 seconds.",
    "logs": "Every service logs structured JSON with a request_id on each line.",
}
ENV = {"FLOWBABY_BUILD_GRAPH": "0", "FLOWBABY_MAX_QUEUED": "200"}


async def _session(workspace: Path) -> None:
    notices: list[str] = []
    logged: list[LoggingMessageNotificationParams] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceListChangedNotification):
            notices.append(message.method)

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logged.append(params)

    client = Client(
        _stdio(workspace, "--rate-limit-per-minute", "0", env=ENV),
        client_info=Implementation(name="idiom-agent", version="1.0"),
        mode="legacy",
        message_handler=on_message,
        logging_callback=on_log,
    )
    async with client:
        caps = client.server_capabilities
        assert caps.resources is not None and caps.resources.list_changed
        assert caps.prompts is not None and caps.logging is not None

        for key, sentence in THREE.items():
            topic = f"{key.title()} decision"
            stored = await client.call_tool(
                "flowbaby_storeMemory",
                {"topic": topic, "context": sentence, "decisions": [sentence], "metadata": {"topicId": key}},
            )
            assert not stored.is_error, stored
        for _ in range(100):  # the server notices the new memories within its 2 s poll
            if notices:
                break
            await asyncio.sleep(0.1)
        assert notices and set(notices) == {"notifications/resources/list_changed"}

        # The answer is the markdown index alone: no second copy as JSON, no structured content.
        found = await client.call_tool("flowbaby_retrieveMemory", {"query": "session cache, sync retries and logs"})
        assert not found.is_error and found.structured_content is None and len(found.content) == 1
        text = found.content[0].text  # type: ignore[union-attr]
        assert count_tokens(text) <= 400, text
        assert THREE["cache"] in text and "topicId cache, Active, " in text
        assert "summaryText" not in text and "flowbaby_getMemory" in text

        whole = await client.call_tool("flowbaby_getMemory", {"topicIds": ["logs", "nope"]})
        shown = whole.content[0].text  # type: ignore[union-attr]
        assert not whole.is_error and THREE["logs"] in shown and shown.endswith("No memory with topicId: nope")

        # Resources: one per memory, paginated by listMemories' cursor, each readable whole.
        for i in range(48):  # named topics: near-identical notes without one would be reconciled as repeats
            note = {"topic": f"Note {i}", "context": f"Filler note {i}.", "metadata": {"topicId": f"note-{i}"}}
            await client.call_tool("flowbaby_storeMemory", note)
        first = await client.list_resources()
        assert len(first.resources) == 50 and first.next_cursor
        rest = await client.list_resources(cursor=first.next_cursor)
        uris = [str(r.uri) for r in first.resources + rest.resources]
        assert len(uris) == 51 == len(set(uris)) and rest.next_cursor is None
        assert {"memory://cache", "memory://retry", "memory://logs"} <= set(uris)
        read = await client.read_resource("memory://retry")
        assert read.contents[0].mime_type == "text/markdown"
        assert THREE["retry"] in read.contents[0].text  # type: ignore[union-attr]
        with pytest.raises(MCPError) as missing:
            await client.read_resource("memory://nope")
        assert missing.value.error.code == -32002

        # The briefing as a prompt.
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert "flowbaby_briefing" in prompts
        brief = await client.get_prompt("flowbaby_briefing")
        assert "[topicId " in brief.messages[0].content.text  # type: ignore[union-attr]

        # logging/setLevel: messages at or above the level, none below it.
        await client.set_logging_level("debug")
        await client.call_tool("flowbaby_indexStatus", {})
        await asyncio.sleep(0.3)
        assert [m.level for m in logged] == ["debug"]
        await client.set_logging_level("error")
        failed = await client.call_tool("flowbaby_storeMemory", {"topic": " ", "context": "x"})
        assert failed.is_error
        await client.call_tool("flowbaby_indexStatus", {})
        await asyncio.sleep(0.3)
        assert [m.level for m in logged] == ["debug"]  # a warning and a debug line, both below "error"


def test_answers_resources_prompts_and_logging_over_stdio(workspace: Path) -> None:
    asyncio.run(_session(workspace))
