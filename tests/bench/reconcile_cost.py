"""Write cost of reconcile on write (issue 50): storeMemory's reply time through a real bridge at 1k and
10k memories (`--only reconcile_cost`) and 100k (`--only reconcile100k`, opt-in); and a burst of 50 writes
at once through one bridge at 1k (`--only reconcile_burst`).

The workspaces are built directly in the store, as the latency bench builds them (graph.backends'
own store and LanceDB vectors, the synthetic corpus of tests.bench.latency; 100k repeats the 10k texts
under new topic ids, so their vectors come from a text -> vector cache), without the graph projection,
which reconcile does not read. Then a warm bridge gets the labelled set's writes
(tests/bench/data/reconcile) as storeMemory without a topicId (reconciled), and the same writes with
an explicit topicId (today's path, not reconciled), alternately. Reported: the round trip and the
reply's own `duration_ms`, p50 / p95, and the decisions made.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from bridge.client import BridgeClient
from graph.backends.embedded.memory_store import open_sealed_store
from graph.backends.embedded.vectors import VectorIndex
from graph.core.memories import memory_uuid
from graph.core.workspace import resolve_workspace
from graph.search.embedder import Embedder
from tests.bench.latency import CachedEmbedder, corpus, scales
from tests.bench.reconcile import DATA, percentile, plan

BULK = 5000


def build(root: Path, count: int, embedder: Embedder, cache: dict[str, list[float]]) -> dict[str, float]:
    """The store by bulk insert (the import path: one transaction per BULK versions, no operations, as
    imported memories are stored), then the vectors: at 100k about a minute, where staging each memory
    as a write did took most of 45 minutes."""
    paths = resolve_workspace(root)
    store = open_sealed_store(paths)
    store._conn.execute("PRAGMA synchronous=OFF")  # building the bench workspace only, not measured
    started = time.perf_counter()
    memories = [
        replace(m, memory_id=memory_uuid(m.topic_id, 1), version=1, char_count=len(m.context)) for m in corpus(count)
    ]
    for start in range(0, count, BULK):
        store.import_memories(memories[start : start + BULK])
    staged = time.perf_counter()
    index = VectorIndex(paths.vectors, cast(Embedder, CachedEmbedder(embedder, cache)))
    for start in range(0, count, 2000):
        index.add_memories(memories[start : start + 2000])
    index.optimize()
    store.close()
    return {"stageSec": round(staged - started, 1), "embedSec": round(time.perf_counter() - staged, 1)}


def timed_writes(workspace: Path, fields: list[dict[str, Any]], budget_ms: str | None) -> dict[str, Any]:
    """`budget_ms`: FLOWBABY_RECONCILE_BUDGET_MS for the bridge (None: its default); a large one makes
    each reply wait for its decision, so the reply time is the decision's whole cost."""
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    env = {**os.environ, **({"FLOWBABY_RECONCILE_BUDGET_MS": budget_ms} if budget_ms else {})}
    client = BridgeClient(workspace, env=env, extra_args=["--rate-limit-per-minute", "0"])
    out: dict[str, list[float]] = {"reconciled": [], "reconciledReply": [], "named": [], "namedReply": []}
    decisions: dict[str, int] = {}
    try:
        client.result("retrieveForAgent", {"query": "warm up"}, timeout=1800)
        for i, memory in enumerate(fields):
            for kind, params in (
                ("reconciled", {**memory, "agentName": "bench"}),
                ("named", {**memory, "agentName": "bench", "metadata": {"topicId": f"named-{budget_ms}-{i}"}}),
            ):
                started = time.perf_counter()
                reply = client.result("storeMemory", params, timeout=120)
                out[kind].append((time.perf_counter() - started) * 1000)
                out[kind + "Reply"].append(reply["duration_ms"])
                if "reconcile" in reply:
                    decision = reply["reconcile"]["decision"]
                    decisions[decision] = decisions.get(decision, 0) + 1
    finally:
        client.close()
    result: dict[str, Any] = {
        f"{kind}_{q}_ms": percentile(values, p)
        for kind, values in out.items()
        for q, p in (("p50", 0.5), ("p95", 0.95))
    }
    return {"writes": len(fields), **result, "decisions": decisions, "loadavg": round(os.getloadavg()[0], 1)}


def burst_writes(workspace: Path, fields: list[dict[str, Any]]) -> dict[str, Any]:
    """The writes sent at once (a thread each) through one bridge at the default budget, after a few one
    by one (a turn's cost measured): each reply's round trip and `duration_ms`, p50 / p95, how many came
    before their decision (`pending`), and the time until every decision was applied (each pending one
    has its audit line then)."""
    (workspace / ".env").write_text("FLOWBABY_BUILD_GRAPH=0\n")
    client = BridgeClient(workspace, env=dict(os.environ), extra_args=["--rate-limit-per-minute", "0"])
    replies: list[tuple[float, dict[str, Any]]] = []
    audit = workspace / ".flowbaby" / "agent_audit.log"
    try:
        client.result("retrieveForAgent", {"query": "warm up"}, timeout=1800)
        for memory in fields[:3]:
            client.result("storeMemory", {**memory, "agentName": "bench"}, timeout=120)
        before = audit.read_text().count('"command": "reconcile"')

        def store(memory: dict[str, Any]) -> None:
            started = time.perf_counter()
            reply = client.result("storeMemory", {**memory, "agentName": "bench"}, timeout=300)
            replies.append(((time.perf_counter() - started) * 1000, reply))

        started = time.perf_counter()
        burst = [threading.Thread(target=store, args=(memory,)) for memory in fields[3:]]
        for thread in burst:
            thread.start()
        for thread in burst:
            thread.join()
        replied = time.perf_counter() - started
        pending = sum(reply["reconcile"]["decision"] == "pending" for _, reply in replies)
        while (
            audit.read_text().count('"command": "reconcile"') - before < pending and time.perf_counter() - started < 600
        ):
            time.sleep(0.05)
        applied = time.perf_counter() - started
    finally:
        client.close()
    trips, durations = [ms for ms, _ in replies], [reply["duration_ms"] for _, reply in replies]
    return {
        "writes": len(replies),
        **{f"roundTrip_{q}_ms": percentile(trips, p) for q, p in (("p50", 0.5), ("p95", 0.95))},
        **{f"reply_{q}_ms": percentile(durations, p) for q, p in (("p50", 0.5), ("p95", 0.95))},
        "pending": pending,
        "allRepliedSec": round(replied, 2),
        "allAppliedSec": round(applied, 2),
        "loadavg": round(os.getloadavg()[0], 1),
    }


def run_reconcile_burst(root: Path, size: int = 1_000, burst: int = 50) -> dict[str, Any]:
    """A burst of `burst` storeMemory through one bridge on a store of `size` memories (`--only reconcile_burst`)."""
    for _, workspace, embedder, cache in scales(root, (size,)):
        built = build(workspace, size, embedder, cache)
        fields = [w.fields for w in plan(json.loads(DATA.read_text()))]
        return {str(size): {"build": built, "burst": burst_writes(workspace, fields[: burst + 3])}}
    return {}


def run_reconcile_cost(root: Path, sizes: tuple[int, ...] = (1_000, 10_000), writes: int = 80) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size, workspace, embedder, cache in scales(root, sizes):
        built = build(workspace, size, embedder, cache)
        fields = [w.fields for w in plan(json.loads(DATA.read_text()))]
        out[str(size)] = {
            "build": built,
            "defaultBudget": timed_writes(workspace, fields[:writes], None),
            "wholeDecision": timed_writes(workspace, fields[writes : 2 * writes], "600000"),
        }
    return out
