"""The team bench's sizing arithmetic (tests/bench/team_scale.py): the fit it projects p95 with,
and the bytes it projects to 730k memories."""

from __future__ import annotations

import pytest

from tests.bench.team_scale import TEAM_MEMORIES, power_fit, sizing


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
