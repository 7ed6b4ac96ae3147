"""MCP tool-call latency over stdio (the `mcp` SDK's client against `flowbaby mcp`), next to the
bridge's JSON-RPC latency for the same calls, measured in the same run on twin workspaces.
Round trips as the client sees them: framing, validation, staging or search, and the pipe."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from bridge.client import PROJECT_ROOT, BridgeClient
from tests.bench.ingest import summarise_ms

ENV = {"FLOWBABY_MAX_RUNNING": "50", "FLOWBABY_MAX_QUEUED": "500"}
"""Room for every store: the backlog limit is not what is measured."""
QUERIES = ["session cache TTL", "why was the rollout paused", "ledger lock in billing", "retry policy for sync"]


def _summary(i: int) -> dict[str, Any]:
    return {
        "topic": f"Decision {i}: session cache",
        "context": f"Run {i}: the billing service moved its session cache to Redis after E_LEDGER_LOCK failures.",
        "decisions": ["Use Redis with a 15 minute TTL"],
    }


async def _measure(root: Path, count: int) -> dict[str, dict[str, list[float]]]:
    """Both servers up at once, calls alternating between them, so load from the rest of the
    machine (and from graph building) falls on both alike."""
    times: dict[str, dict[str, list[float]]] = {f: {"store": [], "retrieve": []} for f in ("bridge", "mcp")}
    env = {**os.environ, **ENV}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from flowbaby.cli import main; main()", "mcp", "--workspace", str(root / "mcp")]
        + ["--rate-limit-per-minute", "0"],
        env={**env, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    bridge_args = ["--rate-limit-per-minute", "0", "--shutdown-grace", "1"]
    with BridgeClient(root / "bridge", env=env, extra_args=bridge_args) as bridge:
        async with Client(params, client_info=Implementation(name="bench", version="1")) as client:

            async def over_mcp(tool: str, arguments: dict[str, Any]) -> None:
                assert not (await client.call_tool(tool, arguments, read_timeout_seconds=120)).is_error

            def over_bridge(method: str, arguments: dict[str, Any]) -> None:
                assert bridge.result(method, arguments, timeout=120)["success"]

            await over_mcp("flowbaby_retrieveMemory", {"query": "warm-up"})  # model load is not a call's latency
            over_bridge("retrieveMemory", {"query": "warm-up"})
            for call, tool, method, arguments in [
                *(("store", "flowbaby_storeMemory", "storeMemory", _summary(i)) for i in range(count)),
                *(("retrieve", "flowbaby_retrieveMemory", "retrieveMemory", {"query": q}) for q in _queries(count)),
            ]:
                started = time.perf_counter()
                await over_mcp(tool, arguments)
                times["mcp"][call].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                over_bridge(method, arguments)
                times["bridge"][call].append((time.perf_counter() - started) * 1000)
    return times


def _queries(count: int) -> list[str]:
    return [QUERIES[i % len(QUERIES)] for i in range(count)]


def run_mcp_latency(root: Path, count: int = 40) -> dict[str, Any]:
    (root / "bridge").mkdir()
    (root / "mcp").mkdir()
    times = asyncio.run(_measure(root, count))
    report = {front: {call: summarise_ms(values) for call, values in calls.items()} for front, calls in times.items()}
    ratio = {
        call: round(report["mcp"][call]["p50_ms"] / report["bridge"][call]["p50_ms"], 2)
        for call in ("store", "retrieve")
    }
    return {"calls": count, "transport": "stdio", **report, "p50_ratio_mcp_over_bridge": ratio}
