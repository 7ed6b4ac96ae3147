"""The same workspace and query give the same ranking in every process.

Python salts string hashes per process, so anything that iterates a set of ids and lets the
first of equal scores win ranks differently from one run to the next. The synthetic bench
workspace has many such ties (its texts repeat), so two processes with different hash
seeds must agree on every entry, score, lane and graph link.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from graph.core.settings import default_model_path
from graph.search.embedder import Embedder
from tests.bench.latency import build_workspace

RANK = """
import asyncio, json, random, sys
from flowbaby.owner_line import call_json
from graph.engine.service import FlowbabyService
from tests.bench.latency import queries

async def main():
    service = await FlowbabyService.open(sys.argv[1], log_to_stderr=False, rate_limit_per_minute=0)
    out = []
    for query in queries(150, random.Random(7)):
        reply = await call_json(service, "retrieve", {"query": query, "maxResults": 20})
        out.append([[e["memoryId"], e["score"], e["lanes"], e["via"]] for e in reply["entries"]])
    await service.close(1)
    print(json.dumps(out))

asyncio.run(main())
"""


def _rankings(workspace: Path, hash_seed: str) -> list[list[list[object]]]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", RANK, str(workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
        check=True,
    )
    rankings: list[list[list[object]]] = json.loads(done.stdout)
    return rankings


def test_two_processes_rank_alike(tmp_path: Path) -> None:
    build_workspace(tmp_path, 1_000, Embedder(default_model_path()))
    first, second = _rankings(tmp_path, "1"), _rankings(tmp_path, "2")
    assert sum(len(r) for r in first) > 1_000
    assert any(entry[3] for ranking in first for entry in ranking), "no graph link placed: the test sees no hop"
    differing = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
    assert not differing, f"{len(differing)} of {len(first)} queries ranked differently, e.g. #{differing[0]}"
