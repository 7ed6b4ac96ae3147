"""MCP tool-call latency over stdio (the `mcp` SDK's client against `flowbaby mcp`), next to the
bridge's JSON-RPC latency for the same calls, measured in the same run on twin workspaces."""

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


def _bridge(workspace: Path, count: int) -> dict[str, Any]:
    stores, retrievals = [], []
    env = {**os.environ, **ENV}
    with BridgeClient(workspace, env=env, extra_args=["--rate-limit-per-minute", "0", "--shutdown-grace", "1"]) as c:
        for i in range(count):
            started = time.perf_counter()
            assert c.result("storeMemory", _summary(i))["success"]
            stores.append((time.perf_counter() - started) * 1000)
        c.result("retrieveMemory", {"query": "warm-up"}, timeout=120)  # model load is not a call's latency
        for i in range(count):
            started = time.perf_counter()
            assert c.result("retrieveMemory", {"query": QUERIES[i % len(QUERIES)]})["success"]
            retrievals.append((time.perf_counter() - started) * 1000)
    return {"store": summarise_ms(stores), "retrieve": summarise_ms(retrievals)}


async def _mcp(workspace: Path, count: int) -> dict[str, Any]:
    stores, retrievals = [], []
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from bridge.cli import main; main()", "mcp", "--workspace", str(workspace)]
        + ["--rate-limit-per-minute", "0"],
        env={**os.environ, **ENV, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    async with Client(params, client_info=Implementation(name="bench", version="1")) as client:
        for i in range(count):
            started = time.perf_counter()
            assert not (await client.call_tool("flowbaby_storeMemory", _summary(i))).is_error
            stores.append((time.perf_counter() - started) * 1000)
        await client.call_tool("flowbaby_retrieveMemory", {"query": "warm-up"}, read_timeout_seconds=120)
        for i in range(count):
            started = time.perf_counter()
            result = await client.call_tool("flowbaby_retrieveMemory", {"query": QUERIES[i % len(QUERIES)]})
            assert not result.is_error
            retrievals.append((time.perf_counter() - started) * 1000)
    return {"store": summarise_ms(stores), "retrieve": summarise_ms(retrievals)}


def run_mcp_latency(root: Path, count: int = 40) -> dict[str, Any]:
    (root / "bridge").mkdir()
    (root / "mcp").mkdir()
    bridge = _bridge(root / "bridge", count)
    mcp = asyncio.run(_mcp(root / "mcp", count))
    ratio = {
        call: round(mcp[call]["p50_ms"] / bridge[call]["p50_ms"], 2) if bridge[call]["p50_ms"] else None
        for call in ("store", "retrieve")
    }
    return {"calls": count, "transport": "stdio", "mcp": mcp, "bridge": bridge, "p50_ratio_mcp_over_bridge": ratio}
