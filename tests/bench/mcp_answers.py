"""What an agent reads from `flowbaby_retrieveMemory` (issue 48): characters and cl100k tokens of the
tool result (every text block, and structuredContent as JSON when there is any), per answered question,
with recall (the answering memory's topicId is in what the agent reads). Through a real `flowbaby mcp`
over stdio, on the hooks' labelled software-memory set (tests/bench/hooks_set.py: 60 memories of a
payments app, answerable prompts with their memory), and on three one-sentence memories (the issue's
case). FLOWBABY_BENCH_MCP_CODE=<checkout> runs another checkout's server, for a before/after pair.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, Implementation

from bridge.client import PROJECT_ROOT
from graph.search.token_budget import count_tokens
from tests.bench.hooks_set import EXTRA_ANSWERABLE, MEMORIES, SESSIONS

THREE = [
    ("cache", "Session cache", "We moved the session cache from Memcached to Redis with a 15 minute TTL."),
    ("retry", "Sync retries", "The sync job retries three times with exponential backoff from 30 seconds."),
    ("logs", "Log format", "Every service logs structured JSON with a request_id on each line."),
]


def read_text(result: CallToolResult) -> str:
    """Everything a client may hand the model: the text blocks, then structuredContent as JSON."""
    parts = [block.text for block in result.content if block.type == "text"]
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _server(workspace: Path) -> StdioServerParameters:
    code = os.environ.get("FLOWBABY_BENCH_MCP_CODE") or str(PROJECT_ROOT)
    env = {**os.environ, "PYTHONPATH": code, "FLOWBABY_MAX_QUEUED": "1000", "FLOWBABY_BUILD_GRAPH": "0"}
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from flowbaby.cli import main; main()", "mcp", "--workspace", str(workspace)]
        + ["--rate-limit-per-minute", "0"],
        env=env,
        cwd=code,
    )


async def _store(client: Client, key: str, topic: str, context: str, decisions: list[str]) -> None:
    arguments = {"topic": topic, "context": context, "decisions": decisions, "metadata": {"topicId": f"m-{key}"}}
    assert not (await client.call_tool("flowbaby_storeMemory", arguments)).is_error


async def _three(root: Path) -> dict[str, Any]:
    async with Client(_server(root / "three"), client_info=Implementation(name="bench", version="1")) as client:
        for key, topic, sentence in THREE:
            await _store(client, key, topic, sentence, [])
        found = await client.call_tool("flowbaby_retrieveMemory", {"query": "session cache, sync retries and logs"})
        text = read_text(found)
        return {
            "chars": len(text),
            "tokens": count_tokens(text),
            "recalled": sum(f"m-{key}" in text for key, _, _ in THREE),
        }


async def _labelled(root: Path) -> dict[str, Any]:
    answerable = [(s.prompt, s.answer) for s in SESSIONS if s.answer] + EXTRA_ANSWERABLE
    async with Client(_server(root / "set"), client_info=Implementation(name="bench", version="1")) as client:
        for key, topic, context, decisions in MEMORIES:
            await _store(client, key, topic, context, decisions)
        tokens, chars, hits = [], [], 0
        for prompt, key in answerable:
            found = await client.call_tool("flowbaby_retrieveMemory", {"query": prompt}, read_timeout_seconds=120)
            text = read_text(found)
            tokens.append(count_tokens(text))
            chars.append(len(text))
            hits += f"m-{key}" in text
    return {
        "questions": len(answerable),
        "recall": round(hits / len(answerable), 3),
        "medianTokens": statistics.median(tokens),
        "maxTokens": max(tokens),
        "medianChars": statistics.median(chars),
        "tokensPerAnsweredQuestion": round(sum(tokens) / max(1, hits), 1),
    }


def run_mcp_answers(root: Path) -> dict[str, Any]:
    for name in ("three", "set"):
        (root / name).mkdir()
    return {"threeMemories": asyncio.run(_three(root)), "labelledSet": asyncio.run(_labelled(root))}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(run_mcp_answers(Path(folder)), indent=2))
