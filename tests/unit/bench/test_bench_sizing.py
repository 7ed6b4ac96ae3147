"""The team bench (tests/bench/team_scale.py): its bulk load, which must give a namespace what
staging would, and its sizing arithmetic (the fit it projects p95 with, the bytes it projects to
730k memories)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from graph.backends.embedded.memory_store import MemoryStore
from graph.backends.team.memory_store import PostgresMemoryStore
from graph.backends.team.projection import PostgresProjection
from graph.core.graph_projection import build_projection, save_projection
from graph.core.memories import new_operation_id
from graph.core.memory_chunks import memory_chunks
from tests.bench.latency import _cognee_shaped, corpus
from tests.bench.team_scale import TEAM_MEMORIES, load_namespace, power_fit, relation_sizes, sizing
from tests.support.postgres import PostgresServer


def test_the_bulk_load_gives_the_namespace_the_rows_vectors_and_graph(postgres: PostgresServer, tmp_path: Path) -> None:
    staging = MemoryStore(tmp_path / "memories.sqlite")
    memories = [staging.stage(memory, new_operation_id()) for memory in corpus(12)]
    staging.close()
    rng = random.Random(3)
    chunks = [chunk for memory in memories for chunk in memory_chunks(memory)]
    cache = {chunk.text: [rng.gauss(0.0, 1.0) for _ in range(384)] for chunk in chunks}
    nodes, edges = _cognee_shaped(memories)
    projection = tmp_path / "projection.json"
    save_projection(build_projection(nodes, edges, memories), projection)

    loaded = load_namespace(postgres.url(), "benchload", memories, cache, projection)

    assert (loaded["memories"], loaded["chunks"]) == (12, len(chunks))
    sizes = relation_sizes(postgres.url(), "benchload")
    assert (sizes["memories"], sizes["chunks"]) == (12, len(chunks)) and sizes["hnswBytes"] > 0
    store = PostgresMemoryStore(postgres.url(), "benchload", owner=False)
    try:
        stored = {m.memory_id: m for m in store.get_memories([m.memory_id for m in memories])}
    finally:
        store.close()
    for memory in memories:
        row = stored[memory.memory_id]
        assert (row.topic_id, row.version, row.topic, row.decisions, row.references, row.plan_id) == (
            memory.topic_id, memory.version, memory.topic, memory.decisions, memory.references, memory.plan_id
        )  # fmt: skip
        assert row.graph_state == "indexed"
    shared = PostgresProjection(postgres.url(), "benchload")
    try:
        version, data = shared.read()
    finally:
        shared.close()
    assert version == 1 and data == json.loads(projection.read_text())


def test_the_power_fit_recovers_a_power_law() -> None:
    fit = power_fit([(n, 3.0 * n**0.25) for n in (1_000, 10_000, 100_000)])
    assert fit is not None
    assert fit[0] == pytest.approx(3.0) and fit[1] == pytest.approx(0.25)
    assert power_fit([(1_000, 5.0)]) is None


def test_sizing_projects_bytes_per_memory_and_the_curve() -> None:
    rows = {"memoriesTotalBytes": 2_000_000, "chunksTotalBytes": 8_000_000, "hnswBytes": 3_000_000, "opsBytes": 0}
    sizes = {1_000: {**rows, "memories": 1_000, "chunks": 6_000}}
    out = sizing(sizes, {"teamRetrieval": [(1_000, 10.0), (10_000, 20.0)]}, {1_000: 200.0, 10_000: 290.0})
    assert out["memories"] == TEAM_MEMORIES == 730_000
    assert out["bytesPerMemory"] == {"1000": 10_000} and out["chunksPerMemory"] == 6.0
    assert out["databaseGiB"] == round(10_000 * TEAM_MEMORIES / 1024**3, 2)
    assert out["hnswIndexGiB"] == round(3_000 * TEAM_MEMORIES / 1024**3, 2)
    assert out["teamRetrievalP95Ms"]["projected"] == pytest.approx(20 * 73**0.30103, rel=1e-3)
    assert out["servingProcessRssMiB"]["projected"] == round(200 + 0.01 * (TEAM_MEMORIES - 1_000))


def test_a_curve_that_falls_within_noise_is_not_projected_below_what_was_measured() -> None:
    sizes = {1_000: {"memoriesTotalBytes": 1, "chunksTotalBytes": 1, "hnswBytes": 1, "memories": 1, "chunks": 6}}
    out = sizing(sizes, {"teamRetrieval": [(1_000, 30.0), (10_000, 20.0)]}, {})
    assert out["teamRetrievalP95Ms"]["projected"] == 30.0 and "noise" in out["teamRetrievalP95Ms"]["fit"]
