"""The owner's warm-up at scale, on a workspace built by the latency bench (tests/bench/latency.py):

  python -m tests.bench.warmup WORKSPACE [--queries 120] [--phases]

Through a real bridge: start to first answered retrieval, RSS (VmRSS, its anonymous and file-backed
parts, the peak) after warm-up and after the queries, retrieval p50/p95 (`maxResults` 5, the latency
bench's queries), and one query embedding in this process as the baseline. `--phases` also times the
warm-up's steps one after another in this process (what FlowbabyService._warm_up does, unparallelised),
with the RSS after each. The machine's load average is recorded before and after: compare only runs
of the same period.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from tests.bench.ingest import percentile
from tests.bench.latency import queries, timed_retrievals


def _status(pid: int | str) -> dict[str, float]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    return {key: round(int(fields[key].split()[0]) / 1024, 1) for key in ("VmRSS", "VmHWM", "RssAnon", "RssFile")}


def _load() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def bridge(root: Path, count: int) -> dict[str, Any]:
    from bridge.client import BridgeClient
    from graph.core.settings import default_model_path
    from graph.search.embedder import Embedder

    asked = queries(count, random.Random(5))
    before = _load()
    client = BridgeClient(root, extra_args=["--rate-limit-per-minute", "0"])
    try:
        # NOT_INITIALIZED past 45 s of warm-up: ask again until it answers
        while not client.result("retrieveForAgent", {"query": "warm up"}, timeout=900).get("success"):
            time.sleep(0.2)
        warm_up = time.perf_counter() - client.started
        warm_rss = _status(client.proc.pid)
        latencies = timed_retrievals(client, asked)
        rss = _status(client.proc.pid)
    finally:
        client.close()
    embedder = Embedder(default_model_path())
    embedder.encode(["warm up"])
    embed = []
    for query in asked:
        started = time.perf_counter()
        embedder.encode([query])
        embed.append((time.perf_counter() - started) * 1000)
    return {
        "warm_up_sec": round(warm_up, 2),
        "rss_mb_after_warm_up": warm_rss,
        "rss_mb_after_queries": rss,
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
        "query_embedding_p50_ms": round(statistics.median(embed), 2),
        "p95_over_embedding_p50": round(percentile(latencies, 0.95) / statistics.median(embed), 2),
        "load_before": before,
        "load_after": _load(),
    }


def phases(root: Path) -> list[dict[str, Any]]:
    from graph.backends.embedded.memory_store import MemoryStore
    from graph.backends.embedded.projection import FileProjection
    from graph.backends.embedded.vectors import open_vector_index
    from graph.core.lexical import LexicalIndex
    from graph.core.settings import default_model_path
    from graph.core.workspace import resolve_workspace
    from graph.search.catalog import Catalog
    from graph.search.embedder import Embedder
    from graph.search.graph_lane import GraphLane

    paths = resolve_workspace(root)
    out: list[dict[str, Any]] = []
    last = time.perf_counter()

    def mark(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        out.append({"phase": name, "sec": round(now - last, 2), "rss_mb": _status("self")})
        last = now

    embedder = Embedder(default_model_path())
    embedder.load()
    mark("embedder")
    index, _ = open_vector_index(paths.vectors, embedder, 60.0)
    mark("vectors")
    store = MemoryStore(paths.store_db)
    gc.disable()  # as warm-up builds its long-lived objects (graph.engine.lifecycle._collection_paused)
    memories = list(store.iter_memories())
    mark("memories")
    indexed = index.indexed_memory_ids()
    catalog = Catalog([m for m in memories if m.memory_id in indexed], LexicalIndex(), paths.catalog_snapshot)
    gc.enable()
    mark(f"catalog and lexical index ({catalog.from_snapshot} memories from its snapshot)")
    GraphLane(FileProjection(paths.projection)).refresh()
    mark("graph lane")
    gc.freeze()
    index.close()
    store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.warmup")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--phases", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {"bridge": bridge(args.workspace, args.queries)}
    if args.phases:
        result["phases"] = phases(args.workspace)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
