"""Ingestion benchmarks through the real bridge: staging latency, cold start,
cognify throughput with the offline extractor, and idle memory."""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bridge.client import BridgeClient
from flowbaby.demo_data import DEMO_SUMMARIES

COMPONENTS = [
    "Redis",
    "Postgres",
    "Kafka",
    "the session cache",
    "the nightly reconciliation job",
    "LanceDB",
    "billing/reconcile.py",
    "gateway/ratelimit.go",
    "the Celery reconcile queue",
    "OpenTelemetry",
]


def synthetic_summary(i: int, rng: random.Random) -> dict[str, Any]:
    """A realistic, varied summary: a demo summary with fresh ids and mixed-in components."""
    base = DEMO_SUMMARIES[i % len(DEMO_SUMMARIES)]
    a, b = rng.sample(COMPONENTS, 2)
    day = 1 + i % 28
    stamp = f"2025-{1 + (i // 28) % 12:02d}-{day:02d}T09:{i % 60:02d}:00Z"
    return {
        **base,
        "topic": f"{base['topic']} #{i}",
        "context": f"{base['context']} Follow-up {i}: {a} now depends on {b}.",
        "metadata": {**base["metadata"], "topicId": f"bench-{i}", "createdAt": stamp, "updatedAt": stamp},
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def summarise_ms(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values), 3),
        "p95_ms": round(percentile(values, 0.95), 3),
        "max_ms": round(max(values), 3),
    }


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def python_ms(code: str) -> float:
    """Milliseconds a `python -c code` takes to run: the floor a cold start is measured against."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def _client(workspace: Path, **env: str) -> BridgeClient:
    return BridgeClient(workspace, env={**os.environ, **env}, extra_args=["--shutdown-grace", "5"])


def bench_staging(root: Path, count: int = 220) -> dict[str, Any]:
    """ingestForAgent round trips through the bridge while graph building runs behind them.
    Baseline: `health` round trips in the same bridge (protocol and process floor)."""
    rng = random.Random(7)
    client = _client(root / "staging", FLOWBABY_MAX_QUEUED="100000")
    try:
        client.result("health", timeout=60)
        for i in range(5):  # warm the store
            client.result("ingestForAgent", synthetic_summary(10_000 + i, rng))
        staging, health = [], []
        for i in range(count):
            started = time.perf_counter()
            reply = client.result("ingestForAgent", synthetic_summary(i, rng))
            staging.append((time.perf_counter() - started) * 1000)
            assert reply["success"], reply
            started = time.perf_counter()
            client.result("health")
            health.append((time.perf_counter() - started) * 1000)
    finally:
        client.kill()
    stage, base = summarise_ms(staging), summarise_ms(health)
    return {
        "staging": stage,
        "baseline_health": base,
        "p50_ratio_vs_health": round(stage["p50_ms"] / base["p50_ms"], 2),
    }


def bench_cold_start(root: Path, runs: int = 7) -> dict[str, Any]:
    """Spawn to first `health` reply. Baseline: spawn a bare `python -c` that prints one line."""
    starts, bare = [], []
    for i in range(runs):
        client = _client(root / f"cold-{i}")
        client.result("health", timeout=60)
        starts.append((time.perf_counter() - client.started) * 1000)
        client.close()
        bare.append(python_ms("print('{}')"))
    cold, baseline = summarise_ms(starts), summarise_ms(bare)
    return {
        "first_health": cold,
        "baseline_bare_python": baseline,
        "p50_ratio_vs_bare": round(cold["p50_ms"] / baseline["p50_ms"], 2),
    }


def _ingest_and_wait(client: BridgeClient, summaries: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    started = time.perf_counter()
    ids = [client.result("ingestForAgent", s)["operationId"] for s in summaries]
    status = client.wait_idle(3600, poll=0.05)
    elapsed = time.perf_counter() - started
    ops = [op for op in status["operations"] if op["operationId"] in set(ids)]
    assert all(op["status"] == "completed" for op in ops), [op["status"] for op in ops]
    return elapsed, ops


def bench_cognify(root: Path) -> dict[str, Any]:
    """Offline-extractor graph building: the first run (worker start, database creation),
    one summary into a warm dataset, and a burst of 100 staged together."""
    rng = random.Random(11)
    client = _client(
        root / "cognify", FLOWBABY_MAX_RUNNING="100", FLOWBABY_MAX_QUEUED="100", FLOWBABY_WORKER_IDLE_SEC="600"
    )
    try:
        client.result("health", timeout=60)
        first_sec, _ = _ingest_and_wait(client, [synthetic_summary(0, rng)])
        singles = []
        for i in range(1, 6):
            elapsed, [op] = _ingest_and_wait(client, [synthetic_summary(i, rng)])
            singles.append(
                {
                    "wall_sec": elapsed,
                    "cognee_sec": op["metrics"]["addSec"] + op["metrics"]["cognifySec"],
                    "projection_sec": op["metrics"]["projectionSec"],
                }
            )
        batch_sec, ops = _ingest_and_wait(client, [synthetic_summary(100 + i, rng) for i in range(100)])
        batches = sorted({op["metrics"]["batchOperations"] for op in ops})
        worker_rss = rss_mb(client.result("health")["workerPid"])
    finally:
        client.close()
    return {
        "first_operation_sec": round(first_sec, 2),
        "single_warm_wall_sec_median": round(statistics.median(s["wall_sec"] for s in singles), 3),
        "single_warm_cognee_sec_median": round(statistics.median(s["cognee_sec"] for s in singles), 3),
        "single_warm_projection_sec_median": round(statistics.median(s["projection_sec"] for s in singles), 3),
        "batch100_wall_sec": round(batch_sec, 2),
        "batch100_sec_per_summary": round(batch_sec / 100, 3),
        "batch100_batch_sizes": batches,
        "worker_rss_mb": worker_rss,
    }


def bench_idle_rss(root: Path) -> dict[str, Any]:
    """Bridge RSS when idle: right after start, with MiniLM warm, and after the worker exits idle."""
    client = _client(root / "idle", FLOWBABY_WORKER_IDLE_SEC="3")
    try:
        pid = client.result("health", timeout=60)["pid"]
        at_start = rss_mb(pid)
        client.result("ingestForAgent", synthetic_summary(0, random.Random(3)))
        client.wait_idle(600)
        deadline = time.monotonic() + 60
        while (worker := client.result("health")["workerPid"]) and time.monotonic() < deadline:
            time.sleep(0.5)
        idle = rss_mb(pid)
    finally:
        client.close()
    return {"bridge_rss_at_start_mb": at_start, "bridge_rss_idle_after_work_mb": idle, "worker_exited_idle": not worker}


def run_ingest_benchmarks(root: Path) -> dict[str, Any]:
    for name in ("staging", "idle", "cognify", *(f"cold-{i}" for i in range(7))):
        (root / name).mkdir()
    return {
        "cold_start": bench_cold_start(root),
        "staging": bench_staging(root),
        "cognify_offline": bench_cognify(root),
        "idle_rss": bench_idle_rss(root),
    }
