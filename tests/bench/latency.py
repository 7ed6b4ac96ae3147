"""Retrieval latency through the bridge at 1k and 10k memories (and 100k, opt-in), the
warm-up and resident memory of the bridge, and the projection's cost per batch.

Building 10k graphs through cognee would take hours here (~0.8 s per summary), so
the scale workspaces are built from the engine's own parts: memories staged in the
store, vectors embedded with MiniLM into LanceDB, and the graph projection built by
the same offline extractor and build_projection that the worker uses. Retrieval
reads exactly these files, so the latency is the product's; only cognee's own
database is absent, which retrieval never touches.

The 100k workspace (`--only latency100k`, about half an hour here) repeats the 10k
corpus ten times under new topic ids, so its sentences reuse the 10k run's MiniLM
vectors (a text -> vector cache) instead of embedding 600k sentences again; lanes,
matrices and indexes are still ten times the size.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from bridge.client import BridgeClient
from graph.backends.embedded.memory_store import open_sealed_store
from graph.backends.embedded.vectors import VectorIndex
from graph.cognify.worker.document import render_document
from graph.core.contract import MemoryStatus
from graph.core.graph_projection import (
    batch_subgraph,
    build_projection,
    fold_projection,
    load_projection,
    memory_node,
    save_projection,
)
from graph.core.memories import Memory, new_operation_id
from graph.core.settings import default_model_path
from graph.core.workspace import resolve_workspace
from graph.extract.extractor import extract_graph
from graph.search.embedder import Embedder
from tests.bench.ingest import percentile

SYSTEMS = [
    "billing",
    "auth",
    "search",
    "gateway",
    "ledger",
    "notifications",
    "reporting",
    "checkout",
    "inventory",
    "sync",
]
TECH = ["Redis", "Postgres", "Kafka", "LanceDB", "Celery", "Kubernetes", "OpenTelemetry", "S3", "nginx", "gRPC"]
ACTIONS = ["cache", "retry", "batch", "shard", "index", "rate-limit", "backfill", "migrate", "monitor", "deprecate"]


def synthetic_memory(i: int, rng: random.Random) -> Memory:
    system, tech, action = rng.choice(SYSTEMS), rng.choice(TECH), rng.choice(ACTIONS)
    ticket = f"PLAT-{rng.randint(1000, 1000 + 3 * (i // 10 + 1))}"
    path = f"{system}/{action.replace('-', '_')}_{rng.randint(1, 40)}.py"
    day = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00.000Z"
    return Memory(
        memory_id="",
        topic_id=f"mem-{i}",
        version=0,
        status=MemoryStatus.ACTIVE,
        topic=f"{system.title()} {action} with {tech} ({ticket})",
        context=f"The {system} service needed to {action} its hot path. We chose {tech} and changed {path}.",
        decisions=[f"Use {tech} to {action} {system} requests", f"Track follow-ups in {ticket}"],
        rationale=[],
        open_questions=[],
        next_steps=[],
        references=[path],
        time_scope=None,
        agent_name="bench",
        session_id=None,
        plan_id=f"plan-{i % 50:03d}",
        created_at=day,
        updated_at=day,
        staged_at=day,
        char_count=0,
    )


def _cognee_shaped(
    memories: list[Memory], extracted: dict[str, dict] | None = None
) -> tuple[list[tuple[str, dict]], list[tuple[str, str, str, dict]]]:
    """The offline extractor's graphs in the node/edge shape cognee's get_graph_data returns.
    `extracted`: graphs kept by document without its topic id line (the extractor does not read it),
    so a corpus that repeats its texts under new topic ids is extracted once per text."""
    nodes: dict[str, dict] = {}
    edges: list[tuple[str, str, str, dict]] = []
    for memory in memories:
        chunk = f"chunk-{memory.memory_id}"
        nodes[chunk] = {"type": "DocumentChunk", "document_id": memory.memory_id}
        document = render_document(memory)
        if extracted is None:
            graph = extract_graph(document)
        else:
            text = document.replace(f"Topic ID: {memory.topic_id}\n", "", 1)
            graph = extracted.get(text)
            if graph is None:
                graph = extracted[text] = extract_graph(document)
        for node in graph["nodes"]:
            entity, kind = f"entity:{node['id']}", f"type:{node['type']}"
            nodes.setdefault(
                entity, {"type": "Entity", "name": node["name"].lower(), "description": node["description"]}
            )
            nodes.setdefault(kind, {"type": "EntityType", "name": node["type"]})
            edges += [(chunk, entity, "contains", {}), (entity, kind, "is_a", {})]
        edges += [
            (f"entity:{e['source_node_id']}", f"entity:{e['target_node_id']}", e["relationship_name"], {})
            for e in graph["edges"]
        ]
    return list(nodes.items()), edges


CORPUS = 10_000
"""Past this size the synthetic texts repeat (under new topic ids): see the module docstring."""


def corpus(count: int) -> list[Memory]:
    if count <= CORPUS:
        rng = random.Random(count)
        return [synthetic_memory(i, rng) for i in range(count)]
    base = corpus(CORPUS)
    return [
        replace(base[i % CORPUS], topic_id=f"mem-{i}", decisions=list(base[i % CORPUS].decisions)) for i in range(count)
    ]


class CachedEmbedder:
    """The embedder with a text -> vector cache shared across workspace sizes (same vectors)."""

    def __init__(self, embedder: Embedder, cache: dict[str, list[float]]) -> None:
        self._inner, self._cache = embedder, cache

    @property
    def dimensions(self) -> int:
        return self._inner.dimensions

    def encode(self, texts: list[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        self._cache.update(zip(missing, self._inner.encode(missing), strict=True))
        return [self._cache[t] for t in texts]


GraphInput = tuple[list[Memory], list[tuple[str, dict]], list[tuple[str, str, str, dict]]]


def build_workspace(
    root: Path, count: int, embedder: Embedder, cache: dict[str, list[float]] | None = None
) -> tuple[dict[str, float], GraphInput]:
    """The workspace's files, and what its projection was built from (for projection_cost)."""
    paths = resolve_workspace(root)
    store = open_sealed_store(paths)  # made as the owner makes it: sealed, so a bridge may open it
    store._conn.execute("PRAGMA synchronous=OFF")  # building the bench workspace only, not measured
    started = time.perf_counter()
    memories = []
    for memory in corpus(count):
        memory = store.stage(memory, op := new_operation_id())
        store.finish([op], "completed")
        memories.append(memory)
    memories = list(store.iter_memories())
    staged = time.perf_counter()
    index = VectorIndex(paths.vectors, cast(Embedder, CachedEmbedder(embedder, {} if cache is None else cache)))
    for start in range(0, count, 2000):
        index.add_memories(memories[start : start + 2000])
    index.optimize()
    embedded = time.perf_counter()
    nodes, edges = _cognee_shaped(memories)
    save_projection(build_projection(nodes, edges, memories), paths.projection)
    store.close()
    stats = {
        "stageSec": round(staged - started, 1),
        "embedSec": round(embedded - staged, 1),
        "graphSec": round(time.perf_counter() - embedded, 1),
        "chunks": index.count(),
    }
    return stats, (memories, nodes, edges)


def queries(count: int, rng: random.Random) -> list[str]:
    forms = [
        "How did we {a} {s} requests?",
        "Why did {s} pick {t}?",
        "What changed in {s} for {t}?",
        "{t} {a} decision",
        "PLAT-{n}",
        "Which ticket tracks the {s} {a} work?",
    ]
    return [
        rng.choice(forms).format(
            a=rng.choice(ACTIONS), s=rng.choice(SYSTEMS), t=rng.choice(TECH), n=rng.randint(1000, 1300)
        )
        for _ in range(count)
    ]


def timed_retrievals(client: BridgeClient, asked: list[str]) -> list[float]:
    """Milliseconds of each retrieval (`maxResults` 5) through a warm bridge, in order."""
    latencies = []
    for query in asked:
        started = time.perf_counter()
        reply = client.result("retrieveForAgent", {"query": query, "maxResults": 5})
        latencies.append((time.perf_counter() - started) * 1000)
        assert reply["success"], reply
    return latencies


def measure(root: Path, embedder: Embedder, count: int = 220) -> dict[str, Any]:
    rng = random.Random(5)
    asked = queries(count, rng)
    client = BridgeClient(root, extra_args=["--rate-limit-per-minute", "0"])
    try:
        client.result("retrieveForAgent", {"query": "warm up"}, timeout=600)
        warm_up = time.perf_counter() - client.started
        bridge = timed_retrievals(client, asked)
        embed = []
        for query in asked:  # baseline in this process: embedding the query alone
            started = time.perf_counter()
            embedder.encode([query])
            embed.append((time.perf_counter() - started) * 1000)
        rss = _rss_mb(client.proc.pid)
    finally:
        client.close()
    http = _measure_http(root, asked)
    return {
        "queries": count,
        "bridge_p50_ms": round(statistics.median(bridge), 2),
        "bridge_p95_ms": round(percentile(bridge, 0.95), 2),
        "http_p50_ms": round(statistics.median(http), 2),
        "http_p95_ms": round(percentile(http, 0.95), 2),
        "baseline_query_embedding_p50_ms": round(statistics.median(embed), 2),
        "baseline_query_embedding_p95_ms": round(percentile(embed, 0.95), 2),
        "p50_ratio_vs_embedding": round(statistics.median(bridge) / statistics.median(embed), 2),
        "p95_ratio_vs_embedding_p50": round(percentile(bridge, 0.95) / statistics.median(embed), 2),
        "p95_ratio_vs_embedding_p95": round(percentile(bridge, 0.95) / percentile(embed, 0.95), 2),
        "bridge_warm_up_sec": round(warm_up, 2),
        "bridge_rss_mb": rss,
    }


def _rss_mb(pid: int) -> dict[str, float]:
    """The bridge's resident memory now and at its peak (Linux /proc)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {name: round(int(fields[key].split()[0]) / 1024, 1) for name, key in (("now", "VmRSS"), ("peak", "VmHWM"))}


def projection_cost(built: GraphInput, batch: int = 20, repeats: int = 3) -> dict[str, Any]:
    """One batch's projection work at this size: the full rebuild the worker used to do after
    every batch, against folding the batch in (subgraph, changed memories, fold); both saved."""
    import tempfile

    memories, nodes, edges = built
    rng = random.Random(len(memories))
    full, fold, save = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "projection.json"
        for _ in range(repeats):
            started = time.perf_counter()
            graph = build_projection(nodes, edges, memories)
            full.append(time.perf_counter() - started)
            batch_ids = [m.memory_id for m in rng.sample(memories, batch)]
            started = time.perf_counter()
            wanted = set(batch_ids)  # the worker's check: memories new to the graph or whose state moved
            changed = [
                m
                for m in memories
                if (node := graph.nodes.get(memory_node(m.memory_id))) is None
                or node["status"] != m.status.value
                or m.memory_id in wanted
            ]
            fold_projection(graph, *batch_subgraph(nodes, edges, batch_ids), changed)
            fold.append(time.perf_counter() - started)
            started = time.perf_counter()
            save_projection(graph, path)
            save.append(time.perf_counter() - started)
        started = time.perf_counter()
        load_projection(path)
        load = time.perf_counter() - started
    return {
        "memories": len(memories),
        "batch": batch,
        "nodes": graph.number_of_nodes(),
        "edges": graph.number_of_edges(),
        "full_rebuild_sec": round(statistics.median(full), 3),
        "incremental_fold_sec": round(statistics.median(fold), 3),
        "save_sec": round(statistics.median(save), 3),
        "reader_load_sec": round(load, 3),
        "full_over_incremental": round(statistics.median(full) / max(statistics.median(fold), 1e-6), 1),
    }


def _measure_http(root: Path, asked: list[str]) -> list[float]:
    """The same queries through `flowbaby serve` and a keep-alive httpx client."""
    import os
    import socket
    import subprocess
    import sys

    import httpx

    from bridge.client import PROJECT_ROOT

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "FLOWBABY_API_TOKEN": "bench"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from flowbaby.cli import main; main()",
            "serve",
            "--workspace",
            str(root),
            "--port",
            str(port),
            "--rate-limit-per-minute",
            "0",
        ],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/api/agent/retrieve"
    try:
        with httpx.Client(headers={"Authorization": "Bearer bench"}, timeout=120) as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    client.post(url, json={"query": "warm up"})
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "flowbaby serve did not start"
                    time.sleep(0.2)
            latencies = []
            for query in asked:
                started = time.perf_counter()
                reply = client.post(url, json={"query": query, "maxResults": 5})
                latencies.append((time.perf_counter() - started) * 1000)
                assert reply.status_code == 200, reply.text
    finally:
        proc.terminate()
        proc.wait(60)
    return latencies


def scales(root: Path, sizes: tuple[int, ...]) -> Iterator[tuple[int, Path, Embedder, dict[str, list[float]]]]:
    """A fresh workspace folder per size under `root`, with the one embedder and the embedding cache every
    build of a run shares: the loop of the benches that measure at several sizes."""
    embedder = Embedder(default_model_path())
    cache: dict[str, list[float]] = {}
    for size in sizes:
        workspace = root / f"scale-{size}"
        workspace.mkdir()
        yield size, workspace, embedder, cache


def run_latency(root: Path, sizes: tuple[int, ...] = (1_000, 10_000)) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size, workspace, embedder, cache in scales(root, sizes):
        build, built = build_workspace(workspace, size, embedder, cache)
        out[str(size)] = {"build": build, **measure(workspace, embedder), "projection": projection_cost(built)}
    return out
